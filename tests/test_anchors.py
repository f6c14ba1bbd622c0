"""Anchor words: fitting (deterministic, thresholds inside the observed range), signatures on
the installation guide, the model file, the method's keys, every backend and the CLI."""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from neardup_pipeline import Deduplicator, Document, Fingerprinter, NearDupConfig
from neardup_pipeline.cli.anchors import corpus_texts
from neardup_pipeline.cli.main import main
from neardup_pipeline.errors import AnchorModelError, ConfigError, IndexParamsError
from neardup_pipeline.index import open_index
from neardup_pipeline.methods.anchors.fit import fit, fit_corpus
from neardup_pipeline.methods.anchors.method import AnchorSignature, AnchorsMethod
from neardup_pipeline.methods.anchors.model import AnchorModel, FitSettings
from neardup_pipeline.scrapy.crawl import DEMO_SITE
from tests.corpora import installation_guide_pages
from tests.documents import STEMMED, STEMMED_FLAGS


@pytest.fixture(scope="module")
def guide_en() -> list[tuple[str, str, list[str]]]:
    """(id, title group, canonical words) of the English installation-guide pages."""
    fingerprinter = Fingerprinter(NearDupConfig())
    pages = [p for p in installation_guide_pages() if p.info["lang"] == "en"]
    return [
        (p.doc_id, p.group,
         fingerprinter.normalizer.words(fingerprinter.text_of(Document(p.doc_id, html=p.html))[0])
         .words)
        for p in pages
    ]


def test_fit_is_deterministic_and_thresholds_lie_inside(
    guide_en: list[tuple[str, str, list[str]]],
) -> None:
    docs = [words for _, _, words in guide_en]
    first, second = fit(docs), fit(docs)
    assert first.words and first.words == second.words
    assert first.thresholds == second.thresholds and first.digest == second.digest
    assert fit(list(reversed(docs))).words == first.words  # order of documents does not matter
    # Observed relative TF of each anchor word over all pages, 0 where absent.
    rel = np.zeros((len(docs), len(first.words)))
    for d, words in enumerate(docs):
        counts = Counter(words)
        top = max(counts.values()) if counts else 1
        for i, word in enumerate(first.words):
            rel[d, i] = counts.get(word, 0) / top
    thresholds = np.asarray(first.thresholds)
    assert np.all(thresholds > rel.min(axis=0)) and np.all(thresholds < rel.max(axis=0))
    assert len(first.words) <= FitSettings().words
    assert first.stats["coverage"] == first.stats["stage1_coverage"]  # stage 2 keeps coverage


@pytest.mark.filterwarnings("error::RuntimeWarning")  # numpy's "divide by zero", for one
def test_documents_without_words_leave_the_fit_alone(
    guide_en: list[tuple[str, str, list[str]]],
) -> None:
    """A page without words (an image, an empty body) has no anchors fingerprint: it makes no
    word's bit less stable, and no maximum tf of 0 is divided by."""
    docs = [words for _, _, words in guide_en]
    alone, with_empty = fit(docs), fit([[], *docs, [], []])
    assert with_empty.words == alone.words and with_empty.thresholds == alone.thresholds
    assert with_empty.stats["mean_stability"] == alone.stats["mean_stability"]
    assert with_empty.stats["documents"] == alone.stats["documents"] + 3


def test_guide_signatures_precision_recall(guide_en: list[tuple[str, str, list[str]]]) -> None:
    """Fitted on the English pages' text only; the title groups only measure."""
    model = fit(words for _, _, words in guide_en)
    method = AnchorsMethod(model)
    sigs = {doc_id: AnchorSignature(model.bits(words)) for doc_id, _, words in guide_en}
    by_text: dict[str, list[str]] = defaultdict(list)
    for doc_id, _, words in guide_en:
        by_text[" ".join(words)].append(doc_id)
    identical = [ids for ids in by_text.values() if len(ids) > 1]
    assert identical
    for ids in identical:
        assert len({sigs[i] for i in ids}) == 1  # text-identical pages: equal signatures
    group = {doc_id: g for doc_id, g, _ in guide_en}
    predicted = {
        (a, b) for a, b in itertools.combinations(sorted(sigs), 2)
        if method.is_duplicate(sigs[a], sigs[b])
    }
    truth = {(a, b) for a, b in itertools.combinations(sorted(sigs), 2) if group[a] == group[b]}
    precision = len(predicted & truth) / len(predicted)
    recall = len(predicted & truth) / len(truth)
    print(f"anchors on guide-en: {len(model.words)} words, coverage {model.stats['coverage']}, "
          f"title-group precision {precision:.3f} recall {recall:.3f}")
    assert precision >= 0.95 and recall >= 0.2


LANGS = {
    "en": "the installer copies the system files to the disk and then configures the boot loader",
    "ru": "установщик копирует системные файлы на диск и затем настраивает загрузчик системы",
    "ca": "l'instal·lador copia els fitxers del sistema al disc i després configura el carregador",
    "fa": "نصب‌کننده پرونده‌های سیستم را روی دیسک کپی می‌کند و سپس بارگذار را پیکربندی می‌کند",
}


@pytest.mark.parametrize("lang", sorted(LANGS))
def test_every_language(lang: str) -> None:
    base = LANGS[lang].split()
    rng = np.random.default_rng(7)
    # Each text draws from its own half of the sentence's words, so document frequencies vary.
    texts = [" ".join(rng.choice(rng.choice(base, size=len(base) // 2, replace=False), size=60))
             for _ in range(30)]
    config = NearDupConfig().replace(language=lang, anchors_min_bits=1)
    model = fit_corpus(texts, config.text, FitSettings(min_bits=1, floor_precision=0.0))
    assert model.words and model.normalizer["language"] == lang
    fingerprinter = Fingerprinter(config.replace(methods=("anchors",)), model)
    a = fingerprinter.fingerprint(Document("a", text=texts[0]))
    b = fingerprinter.fingerprint(Document("b", text=texts[0]))
    assert a.signatures["anchors"] == b.signatures["anchors"]


def test_model_file_round_trip_and_refusals(tmp_path: Path) -> None:
    texts = [f"alpha beta gamma {'delta ' * (i % 4)} epsilon{i % 3} zeta" for i in range(40)]
    config = NearDupConfig().replace(anchors_min_bits=1)
    model = fit_corpus(texts, config.text, FitSettings(min_bits=1, floor_precision=0.0))
    path = tmp_path / "m.json"
    model.save(path)
    loaded = AnchorModel.load(path)
    assert loaded == model and loaded.digest == model.digest
    data = json.loads(path.read_text())
    assert data["format"] == "neardup-anchors" and data["version"] == 1
    assert {"words", "thresholds", "normalizer", "stats", "fit"} <= set(data)
    data["thresholds"][0] += 0.01
    path.write_text(json.dumps(data))
    with pytest.raises(AnchorModelError, match="digest"):
        AnchorModel.load(path)
    model.save(path)
    with pytest.raises(ConfigError, match="text rules"):
        Fingerprinter(config.replace(methods=("anchors",), anchors_model=str(path), stem=True))
    with pytest.raises(ConfigError, match="needs a fitted model"):
        Fingerprinter(config.replace(methods=("anchors",)))


def test_keys_min_bits_and_tolerance() -> None:
    model = AnchorModel(tuple(f"w{i}" for i in range(10)), (0.5,) * 10, {})
    exact = AnchorsMethod(model, min_bits=3)
    assert exact.keys(AnchorSignature((1, 2))) == []  # near-empty: never looked up
    a, b = AnchorSignature((1, 2, 3, 4)), AnchorSignature((1, 2, 3, 5))
    assert exact.keys(a) == [f"s:{a.digest}"] and not exact.is_duplicate(a, b)
    loose = AnchorsMethod(model, min_bits=3, tolerance=2)
    assert set(loose.keys(a)) & set(loose.keys(b))  # both reach {1, 2, 3} by deletions
    assert loose.is_duplicate(a, b) and loose.similarity(a, b) == pytest.approx(3 / 5)
    info = exact.explain(a, b)
    assert info["only_a"] == ["w4"] and info["only_b"] == ["w5"]
    assert exact.decode(exact.encode(a)) == a


# The demo site's expectations were measured on its whole pages: on eleven pages the anchors a
# fit finds depend on every word, so the text rules are pinned.
DEMO_SMALL = {"anchors_min_bits": 2, "content": "whole", **STEMMED}
DEMO_FIT = FitSettings(min_bits=2, floor_precision=0.6, min_df=2)


@pytest.fixture
def anchors_config(backend_config: NearDupConfig, tmp_path: Path) -> Iterator[NearDupConfig]:
    """A model fitted on the demo site's eleven pages (a tiny corpus: lower floors)."""
    config = backend_config.replace(**DEMO_SMALL)
    path = tmp_path / "model.json"
    fit_corpus(corpus_texts(Path(DEMO_SITE), config), config.text, DEMO_FIT).save(path)
    yield config.replace(methods=("simhash", "anchors"), anchors_model=str(path))


def test_anchors_on_every_backend(anchors_config: NearDupConfig, tmp_path: Path) -> None:
    config = anchors_config.replace(methods=("anchors",))
    index = open_index(config.backend, config)
    dedup = Deduplicator(index, config)
    page = Path(DEMO_SITE) / "articles" / "async-commit.html"
    first = dedup.process(Document("one", html=page.read_bytes()))
    assert not first.is_duplicate
    stored = dedup.keyed(index.get(["one"])["one"])  # keys: made from the signatures
    assert stored.keys["anchors"] and stored.keys["anchors"][0].startswith("s:")
    index.flush()  # the next lookup reaches the backend itself
    copy = Path(DEMO_SITE) / "copy" / "async-commit.html"
    second = dedup.process(Document("two", html=copy.read_bytes()))
    assert second.duplicate_of == "one" and second.method == "anchors"
    assert second.similarity == 1.0
    # An index built with one model refuses another, never mixes them.
    other = tmp_path / "other.json"
    looser = dataclasses.replace(DEMO_FIT, floor_precision=0.0)
    fit_corpus(corpus_texts(Path(DEMO_SITE), config), config.text, looser).save(other)
    assert AnchorModel.load(other).digest != AnchorModel.load(str(config.anchors.model)).digest
    with pytest.raises(IndexParamsError, match="model"):
        Deduplicator(index, config.replace(anchors_model=str(other)))
    index.close()


def test_cli_fit_dedup_compare(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "m.json"
    assert main(["anchors", "fit", str(DEMO_SITE), "-o", str(model), "--min-bits", "2",
                 "--content", "whole", *STEMMED_FLAGS,
                 "--floor-precision", "0.6", "--min-df", "2", "--words", "50"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["documents"] == 11  # the folder's HTML and text files
    assert summary["words"] == len(AnchorModel.load(model).words) <= 50
    pages = sorted(p for p in Path(DEMO_SITE).rglob("*.html"))
    corpus = tmp_path / "in.jsonl"
    corpus.write_text("".join(
        json.dumps({"id": str(p.relative_to(DEMO_SITE)), "html": p.read_text()}) + "\n"
        for p in pages
    ))
    out = tmp_path / "out.jsonl"
    assert main(["dedup", str(corpus), "--method", "anchors", "-o", str(out), "--content", "whole",
                 *STEMMED_FLAGS, "--anchors-model", str(model), "--anchors-min-bits", "2"]) == 0
    rows = {row["id"]: row for row in map(json.loads, out.read_text().splitlines())}
    assert rows["copy/async-commit.html"]["duplicate_of"] == "articles/async-commit.html"
    assert rows["copy/async-commit.html"]["method"] == "anchors"
    capsys.readouterr()
    # No model: dedup fits one on its input first, and says so.
    assert main(["dedup", str(corpus), "--method", "anchors", "-o", str(out)]) == 0
    assert "fitted on the input" in capsys.readouterr().err
    assert len(out.read_text().splitlines()) == len(pages)
    code = main(["compare", str(Path(DEMO_SITE) / "articles" / "history.html"),
                 str(Path(DEMO_SITE) / "articles" / "indexes.html"), "--json",
                 "--method", "anchors", *STEMMED_FLAGS, "--anchors-model", str(model)])
    info = json.loads(capsys.readouterr().out)["methods"]["anchors"]
    assert code == 1 and info["duplicate"] is False
    assert info["only_a"] or info["only_b"]  # the anchor words that differ
    assert set(info["only_a"]) <= set(AnchorModel.load(model).words)
