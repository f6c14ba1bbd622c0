"""Settings: flat names mapped to sections, every section validating itself, the Scrapy and
environment readers, the default fingerprint parameters, and the generated docs table."""

from __future__ import annotations

import importlib
import logging
from pathlib import Path

import pytest
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_f_from_coro_f

from neardup_pipeline import Fingerprinter, NearDupConfig
from neardup_pipeline.config import flat_settings
from neardup_pipeline.errors import ConfigError
from neardup_pipeline.index import open_index
from neardup_pipeline.scrapy import crawl_settings
from neardup_pipeline.scrapy.settings import TagFields
from neardup_pipeline.settings_doc import generated_part, settings_markdown
from tests.crawl_harness import crawl, serve_demo_site
from tests.crawl_harness import crawl_settings as harness_settings

DOCS = Path(__file__).resolve().parents[1] / "docs" / "settings.md"

# The user-facing names: NEARDUP_<NAME> in Scrapy, keys of from_mapping and replace.
FLAT_NAMES = {
    "methods", "backend", "canonical_demote", "content", "language", "remove_stopwords", "stem",
    "max_html_bytes",
    "max_html_tags", "max_words", "max_token_chars", "min_tokens", "hash", "simhash_shingle",
    "simhash_k", "simhash_blocks", "minhash_threshold", "minhash_exact", "mode",
    "containment_threshold", "containment_sample", "bag_threshold", "bag_bands", "bag_max_words",
    "bag_order_threshold",
    "bag_subject_margin", "bag_reword_max_changed", "bag_reword_max_run", "bag_site_containment",
    "bag_site_order", "bag_passage_sample", "rarewords_keys",
    "rarewords_percentile", "rarewords_max_words", "rarewords_threshold", "rarewords_warmup",
    "anchors_model", "anchors_model_out", "anchors_warmup", "anchors_min_bits",
    "anchors_tolerance", "index_duplicates", "action", "on_error", "fingerprint_processes",
    "html_field", "text_field", "url_field", "id_field", "keep_html", "tag_fields", "canonical",
    "late_duplicates_file",
    "es_start",
    "es_reprobe_seconds", "spool_path", "fingerprint_index", "pages_index", "es_api_key",
    "es_basic_auth", "es_verify_certs", "es_ca_certs", "es_bulk_size", "es_request_timeout",
    "es_retry_seconds", "es_manage_templates",
}


def test_flat_names_are_the_user_facing_names() -> None:
    names = [flat.name for flat in flat_settings()]
    assert len(names) == len(set(names)) and set(names) == FLAT_NAMES
    assert all(flat.doc for flat in flat_settings())  # the docs table has a line for each


def test_flat_names_reach_their_sections() -> None:
    config = NearDupConfig.from_mapping({
        "simhash_k": 2, "content": "whole", "es_bulk_size": 7, "mode": "containment",
        "methods": "minhash,simhash", "pages_index": "pages", "tag_fields": {"of": "dup_of"},
        "es_basic_auth": ["user", "secret"], "anchors_min_bits": 2,
    })
    assert config.simhash.k == 2 and config.text.content == "whole"
    assert config.elastic.bulk_size == 7 and config.elastic.pages_index == "pages"
    assert config.minhash.mode == "containment" and config.methods == ("minhash", "simhash")
    assert config.scrapy.tag_fields == TagFields(of="dup_of")
    assert config.elastic.basic_auth == ("user", "secret") and config.anchors.min_bits == 2
    copy = config.replace(simhash_k=5, backend="memory")
    assert copy.simhash.k == 5 and copy.backend == "memory" and config.simhash.k == 2
    assert copy.text == config.text  # untouched sections are shared


@pytest.mark.parametrize("changes", [
    {"simhash_bits": 32}, {"minhash_shingle": 5}, {"anchors_floor_precision": 0.5},
    {"no_such_setting": 1},
])
def test_unknown_names_are_an_error(changes: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match="unknown neardup settings"):
        NearDupConfig.from_mapping(changes)
    with pytest.raises(ConfigError, match="unknown neardup settings"):
        NearDupConfig().replace(**changes)


@pytest.mark.parametrize(("changes", "message"), [
    ({"content": "body"}, "content"), ({"hash": "md5"}, "hash"), ({"simhash_k": 64}, "simhash_k"),
    ({"minhash_threshold": 0}, "thresholds"), ({"bag_bands": 5}, "bag_bands"),
    ({"rarewords_keys": 0}, "rarewords"), ({"anchors_tolerance": 4}, "anchors"),
    ({"action": "delete"}, "action"), ({"es_start": "later"}, "es_start"),
    ({"es_bulk_size": 0}, "es_bulk_size"), ({"mode": "containment"}, "containment"),
    ({"methods": ("fuzzy",)}, "methods"),
])
def test_each_section_validates_itself(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        NearDupConfig().replace(**changes)


def test_scrapy_settings_use_the_flat_names() -> None:
    settings = Settings({
        "NEARDUP_SIMHASH_K": "2", "NEARDUP_MINHASH_EXACT": "true", "NEARDUP_BAG_THRESHOLD": "0.7",
        "NEARDUP_METHODS": "simhash,minhash", "NEARDUP_PAGES_INDEX": "",
        "NEARDUP_ES_BASIC_AUTH": "user,secret", "NEARDUP_TAG_FIELDS": '{"status": "dup_status"}',
        "NEARDUP_MODE": "containment",
    })
    config = NearDupConfig.from_settings(settings)
    assert config.simhash.k == 2 and config.minhash.exact and config.bag.threshold == 0.7
    assert config.methods == ("simhash", "minhash") and config.elastic.pages_index is None
    assert config.elastic.basic_auth == ("user", "secret")
    assert config.scrapy.tag_fields.status == "dup_status" and config.minhash.mode == "containment"


@pytest.mark.parametrize(("name", "value"), [
    ("NEARDUP_SIMHASH_K", "three"), ("NEARDUP_BAG_THRESHOLD", "high"),
    ("NEARDUP_MINHASH_EXACT", "maybe"), ("NEARDUP_TAG_FIELDS", "{status"),
])
def test_a_mistyped_value_names_its_setting(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=f"{name}='{value[:3]}"):
        NearDupConfig.from_settings(Settings({name: value}))


@pytest.mark.parametrize("backend", [
    "htp://127.0.0.1:9200", "sqlit:x.sqlite", "sqlite:", "memroy", "http://", "",
])
def test_a_mistyped_backend_is_refused_by_the_config(backend: str) -> None:
    with pytest.raises(ConfigError, match="backend"):
        NearDupConfig(backend=backend)
    with pytest.raises(ConfigError, match="NEARDUP_BACKEND"):
        NearDupConfig.from_settings(Settings({"NEARDUP_BACKEND": backend or " "}))


@pytest.mark.parametrize(("name", "value", "said"), [
    ("NEARDUP_SIMHASH_K", "99", "NEARDUP_SIMHASH_K must lie in [0, 63] (the settings give "
                                "NEARDUP_SIMHASH_K = '99')"),
    ("NEARDUP_ACTION", "dorp", "NEARDUP_ACTION must be 'drop' or 'tag', got 'dorp'"),
    ("NEARDUP_MINHASH_THRESHOLD", "1.5", "NEARDUP_MINHASH_THRESHOLD"),
])
def test_a_value_out_of_range_names_the_scrapy_setting(name: str, value: str, said: str) -> None:
    with pytest.raises(ConfigError) as raised:
        NearDupConfig.from_settings(Settings({name: value}))
    assert said in str(raised.value)
    assert name.removeprefix("NEARDUP_").lower() + " " not in str(raised.value)


def test_a_backend_typo_is_answered_with_the_scheme_meant() -> None:
    with pytest.raises(ConfigError, match="did you mean 'http://'"):
        NearDupConfig(backend="htp://user:secret@127.0.0.1:9200")
    with pytest.raises(ConfigError, match="did you mean 'sqlite:'") as refused:
        NearDupConfig(backend="sqlit:x.sqlite")
    assert "secret" not in str(refused.value)


@pytest.mark.parametrize("spec", ["sqlite://neardup-typo.sqlite", "sqlite://data/fp.sqlite"])
def test_sqlite_with_two_slashes_is_refused_and_says_how_to_write_it(
    spec: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`sqlite://name` read as a path is /name at the filesystem root: refused, never opened."""
    monkeypatch.chdir(tmp_path)
    name = spec[len("sqlite://"):]
    for attempt in (lambda: NearDupConfig(backend=spec),
                    lambda: NearDupConfig.from_settings(Settings({"NEARDUP_BACKEND": spec})),
                    lambda: open_index(spec)):
        with pytest.raises(ConfigError) as refused:
            attempt()
        message = str(refused.value)
        for wanted in ("NEARDUP_BACKEND", "--backend", f"'sqlite:{name}'", "sqlite:///"):
            assert wanted in message, message
    assert not (Path("/") / name).exists() and not list(tmp_path.iterdir())


def test_sqlite_paths_are_relative_as_written_or_absolute_with_three_slashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    absolute = tmp_path / "abs.sqlite"
    for spec, path in [("sqlite:rel.sqlite", tmp_path / "rel.sqlite"),
                       ("sqlite:sub/rel.sqlite", tmp_path / "sub" / "rel.sqlite"),
                       (f"sqlite:{absolute}", absolute),
                       (f"sqlite://{absolute}", absolute)]:  # sqlite:///abs/path
        assert NearDupConfig(backend=spec).backend == spec
        with open_index(spec):
            pass
        assert path.is_file(), spec
        path.unlink()


@deferred_f_from_coro_f
async def test_a_crawl_with_a_mistyped_setting_stops_before_a_page_is_fetched(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    db = tmp_path / "fp.sqlite"
    mistakes = [({"NEARDUP_SIMHASH_K": "three"}, "NEARDUP_SIMHASH_K='three' is not a whole"),
                ({"NEARDUP_BACKEND": "sqlit:x.sqlite"}, "did you mean 'sqlite:'")]
    with serve_demo_site(tmp_path) as base, caplog.at_level(logging.ERROR):
        for settings, expected in mistakes:
            caplog.clear()
            try:
                result = await crawl(base, harness_settings(f"sqlite:{db}", **settings))
            except ConfigError as exc:
                message = str(exc)
            else:
                assert not result.came_out and not result.stats.get("response_received_count")
                message = caplog.text
            assert expected in message
    assert not db.exists() and not Path("x.sqlite").exists()


def test_crawl_settings_take_every_flat_name_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for flat in flat_settings():
        monkeypatch.setenv(flat.scrapy_name, "x")
    try:
        module = importlib.reload(crawl_settings)
        assert all(getattr(module, flat.scrapy_name) == "x" for flat in flat_settings())
    finally:
        monkeypatch.undo()
        for flat in flat_settings():  # a reload keeps names its run does not set again
            vars(crawl_settings).pop(flat.scrapy_name, None)
        importlib.reload(crawl_settings)


def test_default_fingerprint_parameters_are_the_recorded_ones() -> None:
    """Existing indexes keep opening: the parameters a default configuration records."""
    params = Fingerprinter(NearDupConfig(methods=("simhash", "minhash", "bag"))).params()
    methods = params["methods"]
    assert isinstance(methods, dict)
    assert methods["simhash"] == {"bits": 64, "shingle": 3, "k": 3, "blocks": 4}
    assert {key: methods["minhash"][key] for key in ("hashes", "shingle", "supers")} == {
        "hashes": 84, "shingle": 10, "supers": 6}
    assert methods["bag"]["hashes"] == 84 and methods["bag"]["topic_shift"] == 0.0
    assert params["content"] == "chromeless"
    assert params["version"] == 2  # raised only when the text a page is read to changes


def test_docs_settings_table_is_the_generated_one() -> None:
    assert generated_part(DOCS.read_text(encoding="utf-8")) == settings_markdown(), (
        "docs/settings.md is stale: paste `python -m neardup_pipeline.settings_doc` between "
        "its markers"
    )
