"""benchmarks/profile_pipeline.py's timed methods: a method wrapped for timing keeps every
capability the Fingerprinter reads from it, so the profile runs the same checks as a crawl."""

from __future__ import annotations

import pytest

from benchmarks.profile_pipeline import StageClock, offered_capabilities, timed_method
from neardup_pipeline import Deduplicator, NearDupConfig
from neardup_pipeline.fingerprint import Document, Fingerprinter
from neardup_pipeline.index import MemoryIndex
from tests.corpora import postgresql_pages

METHODS = ("simhash", "bag", "minhash", "rarewords")


@pytest.mark.parametrize("name", METHODS)
def test_timed_method_offers_what_the_method_offers(name: str) -> None:
    method = Fingerprinter(NearDupConfig().replace(methods=(name,))).methods[name]
    timed = timed_method(method, StageClock())
    assert offered_capabilities(timed) == offered_capabilities(method)
    assert timed.name == method.name and timed.params() == method.params()


def test_timed_default_gives_the_same_fingerprints_and_verdicts() -> None:
    groups = sorted({p.group for p in postgresql_pages()})[:6]
    pages = [p for p in postgresql_pages() if p.group in groups]  # both releases of each
    docs = [Document(p.doc_id, html=p.html, url=f"https://www.postgresql.org/docs/{p.doc_id}")
            for p in pages]
    plain = Deduplicator(MemoryIndex(), NearDupConfig())
    timed = Deduplicator(MemoryIndex(), NearDupConfig())
    clock = StageClock()
    fpr = timed.fingerprinter
    fpr.methods = {name: timed_method(m, clock) for name, m in fpr.methods.items()}
    duplicates = 0
    for doc in docs:
        want, got = plain.fingerprinter.fingerprint(doc), fpr.fingerprint(doc)
        assert got.keys == want.keys
        expected, verdict = plain.process(doc), timed.process(doc)
        assert (verdict.status, verdict.duplicate_of) == (expected.status, expected.duplicate_of)
        duplicates += verdict.is_duplicate
    assert duplicates >= 4  # the later releases were judged against the earlier
    # every method's signature, its with_site and its keys were charged to their stage
    assert clock.calls["signatures"] >= len(docs) * 5
    assert clock.seconds["signatures"] > 0
