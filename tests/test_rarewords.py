"""Less-frequent words: the pure core, DF in every backend, batch vs stream, the CLI."""

from __future__ import annotations

import json
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup_pipeline import Deduplicator, Document, NearDupConfig
from neardup_pipeline.cli.main import main
from neardup_pipeline.fingerprint import Fingerprinter
from neardup_pipeline.index import FingerprintIndex, MemoryIndex, open_index
from neardup_pipeline.methods.rarewords import (
    RarewordsMethod,
    RarewordsSignature,
    StaticStats,
    weighted_jaccard,
)
from neardup_pipeline.sketch.shingles import ShingleHasher
from tests.corpora import installation_guide_pages


@lru_cache(maxsize=1)
def guide_pages() -> tuple[tuple[str, bytes], ...]:
    """English installation-guide pages of three architectures, in (arch, file) order."""
    return tuple((p.doc_id, p.html) for p in installation_guide_pages()
                 if p.info["lang"] == "en" and p.info["arch"] in ("amd64", "arm64", "i386"))


@lru_cache(maxsize=1)
def corpus_words() -> tuple[list[str], StaticStats]:
    """Canonical words of one long real page, and DF over the first 120 guide pages."""
    fp = Fingerprinter(NearDupConfig(methods=("rarewords",)).replace(language="en"))
    df: Counter[int] = Counter()
    longest: list[str] = []
    for doc_id, html in guide_pages()[:120]:
        words = fp.normalizer.words(fp.text_of(Document(doc_id, html=html))[0]).words
        df.update(set(fp.hasher.word_hashes(words).tolist()))
        longest = max(longest, words, key=len)
    return longest[:600], StaticStats(dict(df), 120)


# ------------------------------------------------------------------ pure core


def test_weighted_jaccard_basics() -> None:
    a = np.array([1, 2, 3], dtype=np.uint64)
    wa = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    b = np.array([2, 3, 4], dtype=np.uint64)
    wb = np.array([2.0, 1.0, 5.0], dtype=np.float32)
    assert weighted_jaccard(a, wa, a, wa) == 1.0
    # min: 2 + 1 = 3; max: 1 + 2 + 3 + 5 = 11
    assert weighted_jaccard(a, wa, b, wb) == pytest.approx(3 / 11)
    assert weighted_jaccard(a, wa, b, wb) == weighted_jaccard(b, wb, a, wa)


def test_signature_round_trip_and_keys_are_smallest_profile_hashes() -> None:
    words, stats = corpus_words()
    method = RarewordsMethod()
    hasher = ShingleHasher()
    sig = method.complete(method.signature(words, hasher), stats)
    assert 0 < sig.profile.size <= method.max_words
    assert np.all(np.diff(sig.profile.astype(np.float64)) > 0)  # sorted, distinct
    back = method.decode(json.loads(json.dumps(method.encode(sig))))
    assert back == sig and back.words is None
    assert method.similarity(sig, back) == 1.0
    assert method.keys(sig) == [f"w:{int(h):016x}" for h in sig.profile[:8]]
    # rarer words weigh more: every profile word's DF is at most the document's median DF
    df = stats.document_frequencies(sig.profile.tolist())
    all_df = stats.document_frequencies(set(hasher.word_hashes(words).tolist()))
    assert max(df.values()) + 1 <= np.quantile(np.array(list(all_df.values())) + 1, 0.5) + 1


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(["drop", "swap", "insert"])),
                min_size=1, max_size=4))
def test_keys_of_a_light_edit_overlap(edits: list[tuple[int, str]]) -> None:
    """Up to four word edits of a real page: the two key sets still share a key."""
    words, stats = corpus_words()
    edited = list(words)
    for position, kind in edits:
        i = position % len(edited)
        if kind == "drop":
            del edited[i]
        elif kind == "swap":
            edited[i] = f"edit{position}"
        else:
            edited.insert(i, f"new{position}")
    method, hasher = RarewordsMethod(), ShingleHasher()
    a = method.complete(method.signature(words, hasher), stats, "a")
    b = method.complete(method.signature(edited, hasher), stats, "b")
    assert set(method.keys(a)) & set(method.keys(b))
    assert method.similarity(a, b) >= method.threshold


def test_warming_up_scores_but_never_decides() -> None:
    text = " ".join(f"alpha{i % 211} beta{i % 199} gamma{i % 197}" for i in range(600))
    config = NearDupConfig(methods=("rarewords",), backend="memory").replace(rarewords_warmup=5)
    dedup = Deduplicator(MemoryIndex(), config)
    dedup.process(Document("one", text=text))
    early = dedup.process(Document("two", text=text + " tail"))
    assert not early.is_duplicate and early.scores["rarewords"] > 0.9
    for n in range(3):
        dedup.process(Document(f"other{n}", text=f"unrelated words number {n} here"))
    late = dedup.process(Document("three", text=text + " other tail"))
    assert late.duplicate_of in ("one", "two")


# ------------------------------------------------------------------ DF in every backend
# (`index`: conftest's, each backend in turn)

BIG = 2**64 - 5  # above 2**63: SQLite stores it signed, Elasticsearch as hex


def test_document_frequencies_contract(index: FingerprintIndex) -> None:
    assert index.document_count() == 0
    assert index.document_frequencies([1, 2]) == {1: 0, 2: 0}
    index.add_document_frequencies("a", [1, 2, 2, BIG])
    index.add_document_frequencies("b", [2, 3])
    assert index.document_frequencies([1, 2, 3, 4, BIG]) == {1: 1, 2: 2, 3: 1, 4: 0, BIG: 1}
    assert index.document_count() == 2
    # exclude: the document's own words left out (a re-check counts itself once, not twice)
    assert index.document_frequencies([1, 2, 3], exclude="a") == {1: 0, 2: 1, 3: 1}
    assert index.document_count(exclude="a") == 1
    assert index.document_count(exclude="unknown") == 2
    index.flush()
    # re-adding a doc id replaces its words: no double count
    index.add_document_frequencies("a", [3, 4])
    assert index.document_frequencies([1, 2, 3, 4, BIG]) == {1: 0, 2: 1, 3: 2, 4: 1, BIG: 0}
    assert index.document_count() == 2
    index.flush()
    assert index.document_frequencies([1, 2, 3, 4], exclude="b") == {1: 0, 2: 0, 3: 1, 4: 1}
    assert index.document_count() == 2


def test_two_writers_share_document_frequencies(persistent_config: NearDupConfig) -> None:
    """Two processes' worth of index objects on one store: counts add up, re-adds do not."""
    first = open_index(persistent_config.backend, persistent_config)
    second = open_index(persistent_config.backend, persistent_config)
    try:
        for writer in (first, second):  # each writer's batch, then its flush (SQLite: commit)
            for n in range(30):
                if (writer is first) == bool(n % 2):
                    writer.add_document_frequencies(f"p{n}", [7, n + 100])
            writer.flush()
        second.add_document_frequencies("p1", [7, 101])  # the same page seen by both
        second.flush()
        for reader in (first, second):
            df = reader.document_frequencies([7, 101, 102])
            assert df == {7: 30, 101: 1, 102: 1}
            assert reader.document_count() == 30
    finally:
        first.close()
        second.close()
    reopened = open_index(persistent_config.backend, persistent_config)
    assert reopened.document_frequencies([7]) == {7: 30}
    reopened.close()


def test_rarewords_on_every_backend(backend_config: NearDupConfig) -> None:
    config = backend_config.replace(methods=("rarewords",), rarewords_warmup=0)
    text = " ".join(f"alpha{i % 211} beta{i % 199} gamma{i % 197}" for i in range(600))
    index = open_index(config.backend, config)
    dedup = Deduplicator(index, config)
    for n in range(5):
        dedup.process(Document(f"filler{n}", text=f"filler page {n} about something else"))
    assert not dedup.process(Document("first", text=text)).is_duplicate
    stored = dedup.keyed(index.get(["first"])["first"])  # keys: made from the signatures
    assert len(stored.keys["rarewords"]) == 8
    index.flush()  # the second lookup goes to the backend itself, not only a write cache
    verdict = dedup.process(Document("second", text=text + " with a short tail"))
    assert verdict.duplicate_of == "first" and verdict.scores["rarewords"] >= 0.7
    again = dedup.process(Document("first", text=text))  # a re-add counts its words once
    assert not again.is_duplicate
    assert index.document_count() == 7
    index.close()


# ------------------------------------------------------------------ batch and stream


def test_batch_and_stream_agree_after_warm_up() -> None:
    """Same corpus, same order: a DF pass first (batch) or DF so far (stream, warm-up W)."""
    pages = [Document(doc_id, html=html) for doc_id, html in guide_pages()[:260]]
    warmup = 100
    batch_cfg = NearDupConfig(methods=("rarewords",), backend="memory").replace(language="en")
    stream_cfg = batch_cfg.replace(rarewords_warmup=warmup)
    batch = Deduplicator(MemoryIndex(), batch_cfg)
    for doc in pages:
        batch.learn(doc)
    stream = Deduplicator(MemoryIndex(), stream_cfg, batch.fingerprinter)
    b = [batch.process(doc) for doc in pages]
    s = [stream.process(doc) for doc in pages]
    after = range(warmup, len(pages))
    duplicates = sum(b[i].is_duplicate for i in after)
    assert duplicates > 60  # the later architectures repeat the first: a meaningful check
    differ = [(pages[i].doc_id, b[i].cluster, s[i].cluster) for i in after
              if b[i].cluster != s[i].cluster]
    assert len(differ) <= 0.03 * len(after), differ


# ------------------------------------------------------------------ command line


def test_cli_dedup_batch_and_compare_show_rare_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (_, html_a), *_ = guide_pages()[:1]
    base = re.sub(r"\s+", " ", Fingerprinter().text_of(Document("x", html=html_a))[0])
    lines = [{"id": "a", "text": base}, {"id": "b", "text": base + " one more sentence"},
             {"id": "c", "text": "something else entirely, nothing alike"}]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["dedup", str(source), "-o", str(out), "--method", "rarewords", "--df-pass"]) == 0
    verdicts = [json.loads(x) for x in out.read_text().splitlines()]
    assert [v["duplicate_of"] for v in verdicts] == [None, "a", None]
    assert verdicts[1]["method"] == "rarewords"
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(base)
    b.write_text(base + " one more sentence")
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--method", "rarewords", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["methods"]["rarewords"]["duplicate"]
    shared = report["shared_rare_words"]
    assert shared and all(isinstance(w, str) for w in shared)
    assert main(["compare", str(a), str(b), "--method", "rarewords"]) == 0
    assert "shared rare words:" in capsys.readouterr().out


def test_signature_type() -> None:
    sig = RarewordsMethod().signature(["a", "b", "a"], ShingleHasher())
    assert isinstance(sig, RarewordsSignature) and sig.tf is not None and sorted(sig.tf) == [1, 2]
