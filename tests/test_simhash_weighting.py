"""Simhash feature weights: TF (default) or TF x IDF from a frozen DF table (idf.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_f_from_coro_f

from neardup_pipeline import NearDupConfig
from neardup_pipeline.cli.main import main
from neardup_pipeline.errors import ConfigError, IdfTableError, IndexFailure
from neardup_pipeline.fingerprint import Document, Fingerprinter
from neardup_pipeline.index import open_index
from neardup_pipeline.index.memory import MemoryIndex
from neardup_pipeline.methods.idf import IDF_SCALE, IdfTable, fit_idf, fit_texts
from neardup_pipeline.methods.rarewords import RarewordsMethod
from neardup_pipeline.methods.simhash import SimhashMethod, hamming, shingle_weights, simhash
from neardup_pipeline.report.evaluate import GoldEntry, evaluate
from neardup_pipeline.scrapy.crawl import DEMO_SITE
from neardup_pipeline.sketch.shingles import ShingleHasher
from neardup_pipeline.verdict.deduplicator import Deduplicator
from tests.crawl_harness import crawl, crawl_settings

CONFIG = NearDupConfig(methods=("simhash",), language="en")
SYLLABLES = [a + b for a in "bcdfghjklmnpqrstvwxz" for b in "aeiou"]


class Corpus:
    """A site redesigned halfway: half its pages carry navigation A, half navigation B, each
    around its own article of random four-syllable words (1e8 of them: an article's words are
    its own)."""

    def __init__(self, seed: int = 20261130, pages: int = 400, content: int = 1000,
                 chrome: int = 40) -> None:
        self.rng = np.random.default_rng(seed)
        self.chrome_a, self.chrome_b = self.words(chrome), self.words(chrome)
        self.contents = [self.words(content) for _ in range(pages)]
        self.pages = [
            " ".join((self.chrome_a if i % 2 == 0 else self.chrome_b) + c)
            for i, c in enumerate(self.contents)
        ]

    def words(self, n: int) -> list[str]:
        return ["".join(self.rng.choice(SYLLABLES, 4)) for _ in range(n)]


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus()


@pytest.fixture(scope="module")
def table(corpus: Corpus) -> IdfTable:
    return fit_texts(corpus.pages, CONFIG)


def signature(fingerprinter: Fingerprinter, text: str) -> int:
    return int(fingerprinter.fingerprint(Document("d", text=text)).signatures["simhash"])


def idf_fingerprinter(table: IdfTable, config: NearDupConfig = CONFIG) -> Fingerprinter:
    return Fingerprinter(config.replace(simhash_weighting="idf"), idf_table=table)


# --- the weights -------------------------------------------------------------------------------


def test_shingle_weight_is_its_rarest_words_idf() -> None:
    idf = np.array([16, 80, 16, 16, 40, 16], dtype=np.int64)
    assert shingle_weights(idf, 3).tolist() == [80, 80, 40, 40]
    assert shingle_weights(idf[:2], 3).tolist() == [80]  # a short text: one shingle
    assert shingle_weights(np.empty(0, dtype=np.int64), 3).size == 0
    hasher = ShingleHasher()
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
    assert shingle_weights(idf, 3).size == hasher.shingle_hashes(words, 3).size


def test_table_idf_smoothed_and_quantised(table: IdfTable, corpus: Corpus) -> None:
    hasher = ShingleHasher()
    normalizer = Fingerprinter(CONFIG).normalizer  # the table holds canonical words
    common = hasher.word_hashes(normalizer.words(corpus.chrome_a[0]).words)
    rare = hasher.word_hashes(normalizer.words(corpus.contents[0][0]).words)
    unseen = hasher.word_hashes(["neverseenword"])
    n = table.documents
    assert n == 400
    # chrome A is on half the pages; an article word on one page (not stored: DF 1 like unseen)
    assert table.idf(common)[0] == round(IDF_SCALE * (1 + np.log((n + 1) / (n / 2 + 1))))
    assert table.idf(rare)[0] == table.idf(unseen)[0] == table.unseen
    assert table.unseen == round(IDF_SCALE * (1 + np.log((n + 1) / 2)))
    assert table.document_frequencies(common.tolist()) == {int(common[0]): 200}
    stored = table.stats["stored"]  # only words seen twice or more (random words rarely are)
    assert isinstance(stored, int) and 2 * 40 <= stored < table.stats["vocabulary"] // 100


def test_integer_weights_make_the_sum_order_free() -> None:
    rng = np.random.default_rng(1)
    hashes = rng.integers(0, 2**63, size=5000, dtype=np.int64).astype(np.uint64)
    weights = rng.integers(16, 120, size=5000).astype(np.float64)
    order = rng.permutation(5000)
    assert simhash(hashes, weights) == simhash(hashes[order], weights[order])
    # equal weights are plain TF
    assert simhash(hashes, np.full(5000, 16.0)) == simhash(hashes)


# --- what IDF weighting buys -------------------------------------------------------------------


def test_boilerplate_stops_dominating(corpus: Corpus, table: IdfTable) -> None:
    """The same article under the old and the new navigation is one page to idf weighting (the
    navigation words are on half the site), while TF counts the navigation like the article; and
    two thin pages sharing navigation stay far apart under both."""
    tf = Fingerprinter(CONFIG)
    idf = idf_fingerprinter(table)
    swapped: dict[str, list[int]] = {"tf": [], "idf": []}
    for content in corpus.contents[:60:2]:
        old = " ".join(corpus.chrome_a + content)
        new = " ".join(corpus.chrome_b + content)
        for name, fingerprinter in (("tf", tf), ("idf", idf)):
            swapped[name].append(hamming(signature(fingerprinter, old),
                                         signature(fingerprinter, new)))
    within = {name: float(np.mean(np.array(d) <= CONFIG.simhash_k)) for name, d in swapped.items()}
    # expected distances (64 * angle / pi): tf ~5.7 bits, idf ~1.9 (the two shingles that span
    # navigation and article take the article word's IDF)
    assert within["idf"] >= 0.75 > 0.35 >= within["tf"], swapped
    assert np.mean(swapped["idf"]) < np.mean(swapped["tf"]) / 2
    thin_a = " ".join(corpus.chrome_a + corpus.contents[0][:20])
    thin_b = " ".join(corpus.chrome_a + corpus.contents[1][:20])
    assert hamming(signature(idf, thin_a), signature(idf, thin_b)) > 3 * CONFIG.simhash_k


def test_edited_copy_found_through_the_index(corpus: Corpus, table: IdfTable) -> None:
    """Deduplicator with idf weighting on the memory backend: the redesigned page is a duplicate
    of the original, an unrelated page is not."""
    config = CONFIG.replace(simhash_weighting="idf")
    dedup = Deduplicator(MemoryIndex(), config, idf_fingerprinter(table))
    found = 0
    for i, content in enumerate(corpus.contents[:20:2]):
        first = dedup.process(Document(f"a{i}", text=" ".join(corpus.chrome_a + content)))
        assert not first.is_duplicate
        again = dedup.process(Document(f"b{i}", text=" ".join(corpus.chrome_b + content)))
        found += again.duplicate_of == f"a{i}"
    assert found >= 7  # ~85% expected (see above); tf weighting: ~25%
    other = dedup.process(Document("x", text=" ".join(corpus.chrome_a + corpus.contents[1])))
    assert not other.is_duplicate


# --- comparability: params, the index, the table file ------------------------------------------


def test_params_differ_between_modes(table: IdfTable, corpus: Corpus) -> None:
    tf = SimhashMethod()
    assert tf.params() == {"bits": 64, "shingle": 3, "k": 3, "blocks": 4}  # indexes of before
    idf = SimhashMethod(weighting="idf", idf=table)
    weighting = idf.params()["weighting"]
    assert isinstance(weighting, dict)
    assert weighting["kind"] == "idf" and weighting["table"] == table.digest
    other = fit_texts(corpus.pages[:100], CONFIG)
    assert SimhashMethod(weighting="idf", idf=other).params() != idf.params()
    with pytest.raises(ValueError, match="DF table"):
        SimhashMethod(weighting="idf")
    with pytest.raises(ValueError, match="weighting"):
        SimhashMethod(weighting="bm25")  # type: ignore[arg-type]


def test_memory_index_refuses_mixed_weighting(table: IdfTable) -> None:
    index = MemoryIndex()
    Deduplicator(index, CONFIG).process(Document("a", text="one two three four five"))
    with pytest.raises(IndexFailure, match="weighting"):
        Deduplicator(index, CONFIG.replace(simhash_weighting="idf"), idf_fingerprinter(table))


def test_sqlite_index_keeps_its_table(tmp_path: Path, corpus: Corpus, table: IdfTable) -> None:
    """A persistent index built with one DF table: reopened with the same table file, a stored
    fingerprint matches a later page; tf weighting or another table is refused."""
    model = tmp_path / "idf.json"
    table.save(model)
    config = CONFIG.replace(simhash_weighting="idf", simhash_idf_model=str(model),
                            backend=f"sqlite:{tmp_path / 'fp.sqlite'}")
    original = " ".join(corpus.chrome_a + corpus.contents[0])
    index = open_index(config.backend, config)
    try:
        assert not Deduplicator(index, config).process(Document("a", text=original)).is_duplicate
    finally:
        index.close()
    index = open_index(config.backend, config)
    try:
        verdict = Deduplicator(index, config).process(Document("b", text=original))
        assert verdict.duplicate_of == "a" and verdict.method == "simhash"
        with pytest.raises(IndexFailure, match="weighting"):
            Deduplicator(index, config.replace(simhash_weighting="tf"))
        other = tmp_path / "other.json"
        fit_texts(corpus.pages[:50], CONFIG).save(other)
        with pytest.raises(IndexFailure, match="weighting"):
            Deduplicator(index, config.replace(simhash_idf_model=str(other)))
    finally:
        index.close()


def test_table_file_round_trip_and_refusals(tmp_path: Path, table: IdfTable) -> None:
    path = tmp_path / "idf.json"
    table.save(path)
    loaded = IdfTable.load(path)
    assert loaded.digest == table.digest
    assert np.array_equal(loaded.words, table.words) and np.array_equal(loaded.df, table.df)
    data = json.loads(path.read_text())
    assert data["format"] == "neardup-idf" and data["version"] == 1
    data["df"][0] += 1
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(data))
    with pytest.raises(IdfTableError, match="digest"):
        IdfTable.load(tampered)
    data["version"] = 99
    tampered.write_text(json.dumps(data))
    with pytest.raises(IdfTableError, match="v1"):
        IdfTable.load(tampered)
    with pytest.raises(IdfTableError, match="cannot read"):
        IdfTable.load(tmp_path / "missing.json")
    # fitted with other text rules or another hash: its words would never match
    with pytest.raises(ConfigError, match="text rules"):
        idf_fingerprinter(table, CONFIG.replace(language="ru"))
    with pytest.raises(ConfigError, match="hash"):
        idf_fingerprinter(table, CONFIG.replace(hash="xxh64"))


def test_table_is_corpus_stats_for_rarewords(table: IdfTable, corpus: Corpus) -> None:
    """A frozen table stands wherever DF is read (rarewords' CorpusStats)."""
    method = RarewordsMethod()
    hasher = ShingleHasher()
    normalizer = Fingerprinter(CONFIG).normalizer  # the table holds canonical words
    draft = method.signature(normalizer.words(corpus.pages[0]).words, hasher)
    profile = method.complete(draft, table, "p0")
    assert profile.documents == table.documents + 1
    chrome_words = normalizer.words(" ".join(corpus.chrome_a)).words
    chrome = set(hasher.word_hashes(chrome_words).tolist())
    assert profile.profile.size and not chrome & set(profile.profile.tolist())


def test_fit_counts_documents_not_occurrences() -> None:
    hasher = ShingleHasher()
    table = fit_idf([["a", "a", "b"], ["a", "c"], []], hasher, {"x": 1}, min_df=1)
    assert table.documents == 3
    assert table.document_frequencies(hasher.word_hashes(["a", "b", "c"]).tolist()) == {
        int(h): df for h, df in zip(hasher.word_hashes(["a", "b", "c"]).tolist(), (2, 1, 1),
                                    strict=True)
    }


# --- the setting through config, the CLI, eval and a real crawl --------------------------------


def test_setting_through_config(tmp_path: Path, table: IdfTable) -> None:
    model = tmp_path / "idf.json"
    table.save(model)
    config = NearDupConfig.from_settings(Settings({
        "NEARDUP_METHODS": "simhash", "NEARDUP_LANGUAGE": "en",
        "NEARDUP_SIMHASH_WEIGHTING": "idf", "NEARDUP_SIMHASH_IDF_MODEL": str(model),
    }))
    assert config.simhash_weighting == "idf"
    method = Fingerprinter(config).methods["simhash"]
    assert isinstance(method, SimhashMethod) and method.idf is not None
    assert method.idf.digest == table.digest
    assert NearDupConfig.from_mapping({"simhash_weighting": "tf"}).simhash_weighting == "tf"
    assert NearDupConfig().simhash_weighting == "tf"
    with pytest.raises(ConfigError, match="simhash_weighting"):
        NearDupConfig.from_settings(Settings({"NEARDUP_SIMHASH_WEIGHTING": "bm25"}))
    with pytest.raises(ConfigError, match="NEARDUP_SIMHASH_IDF_MODEL"):
        Fingerprinter(NearDupConfig(simhash_weighting="idf"))
    # a method list without simhash needs no table
    Fingerprinter(NearDupConfig(methods=("minhash",), simhash_weighting="idf"))


def test_cli_fit_then_dedup(tmp_path: Path, corpus: Corpus, capsys: pytest.CaptureFixture[str]
                            ) -> None:
    docs = tmp_path / "docs.jsonl"
    texts = [*corpus.pages[:40], corpus.pages[0]]  # a copy of page 0
    docs.write_text("".join(json.dumps({"id": f"p{i}", "text": t}) + "\n"
                            for i, t in enumerate(texts)))
    model = tmp_path / "idf.json"
    assert main(["idf", "fit", str(docs), "-o", str(model), "--language", "en"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["documents"] == 41 and summary["digest"] == IdfTable.load(model).digest
    out = tmp_path / "out.jsonl"
    backend = f"sqlite:{tmp_path / 'fp.sqlite'}"
    assert main(["dedup", str(docs), "--method", "simhash", "--language", "en",
                 "--simhash-weighting", "idf", "--simhash-idf-model", str(model),
                 "--backend", backend, "-o", str(out)]) == 0
    verdicts = {v["id"]: v for v in map(json.loads, out.read_text().splitlines())}
    assert verdicts["p40"]["duplicate_of"] == "p0"
    assert sum(v["duplicate_of"] is not None for v in verdicts.values()) == 1
    # the index recorded the table: the same corpus with tf weights is refused
    assert main(["dedup", str(docs), "--method", "simhash", "--language", "en",
                 "--backend", backend]) == 2
    assert "weighting" in capsys.readouterr().err
    assert main(["dedup", str(docs), "--simhash-weighting", "idf"]) == 2  # no table
    assert "NEARDUP_SIMHASH_IDF_MODEL" in capsys.readouterr().err


def test_eval_fits_the_table_on_its_input(corpus: Corpus) -> None:
    """`neardup eval` with idf weighting and no table: one is fitted on the documents' words."""
    documents = [Document(f"p{i}", text=t) for i, t in enumerate(corpus.pages[:40])]
    documents.append(Document("copy", text=corpus.pages[0]))
    gold = {d.doc_id: GoldEntry(d.doc_id, "original") for d in documents}
    gold["copy"] = GoldEntry("p0", "copy")
    report = evaluate(documents, gold, ["simhash"], CONFIG.replace(simhash_weighting="idf"))[0]
    assert report.scores.precision == 1.0 and report.by_kind["copy"] == 1.0
    assert [row["value"] for row in report.sweep][:3] == [0, 1, 2]  # the sweep runs on idf too


@deferred_f_from_coro_f
async def test_crawl_with_idf_weighting(site: str, tmp_path: Path) -> None:
    """A real crawl of the demo site: the setting reaches the pipeline and its fingerprint
    process, the byte copy is dropped, and the index records the table."""
    model = tmp_path / "idf.json"
    pages = sorted(p for p in DEMO_SITE.rglob("*.html"))
    config = NearDupConfig(methods=("simhash",))
    fingerprinter = Fingerprinter(config)
    fit_texts((fingerprinter.text_of(Document(str(p), html=p.read_bytes()))[0] for p in pages),
              config).save(model)
    backend = f"sqlite:{tmp_path / 'fp.sqlite'}"
    settings = crawl_settings(backend, NEARDUP_SIMHASH_WEIGHTING="idf",
                              NEARDUP_SIMHASH_IDF_MODEL=str(model))
    result = await crawl(site, settings)
    assert result.stats["finish_reason"] == "finished"
    assert "/copy/async-commit.html" in result.dropped
    assert result.stats.get("neardup/errors", 0) == 0
    idf_config = config.replace(simhash_weighting="idf", simhash_idf_model=str(model))
    index = open_index(backend, idf_config)
    try:
        Deduplicator(index, idf_config)  # same params: accepted
        with pytest.raises(IndexFailure, match="weighting"):
            Deduplicator(index, config)
    finally:
        index.close()
