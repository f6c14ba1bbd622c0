"""What a crawl of the demo site must come to: the assertions several crawl tests share."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from itemadapter import ItemAdapter

from neardup_pipeline.scrapy.pipeline import NearDuplicate
from tests.crawl_harness import (
    DUPLICATES,
    ORIGINALS,
    PAGES,
    CrawlResult,
    describe,
    neardup_stats,
)


def simhash_stats(action: str) -> dict[str, int]:
    """The neardup/ stats of a simhash crawl of the demo site whose action counts each variant
    under neardup/`action` ("dropped", "tagged")."""
    return {
        "neardup/items": PAGES,
        "neardup/checked": PAGES,
        "neardup/unique": len(ORIGINALS),
        "neardup/duplicates": len(DUPLICATES),
        "neardup/duplicates/simhash": len(DUPLICATES),
        f"neardup/{action}": len(DUPLICATES),
    }


def assert_dropped_as_copies(
    result: CrawlResult,
    expected: Mapping[str, str],
    methods: Collection[str],
    min_similarity: float | None = None,
) -> None:
    """Each path of `expected` dropped as a near-duplicate of its original (a path too) by one
    of `methods`, at `min_similarity` or more when given."""
    for path, original in expected.items():
        exc = result.dropped[path]
        assert isinstance(exc, NearDuplicate), describe(result)
        assert exc.verdict.duplicate_of == result.base + original, describe(result)
        assert exc.verdict.method in methods, (path, exc.verdict.method)
        if min_similarity is not None:
            assert exc.verdict.similarity is not None and exc.verdict.similarity >= min_similarity


def assert_drop_outcome(result: CrawlResult) -> None:
    """Originals kept, each variant dropped as a near-duplicate of its original, stats exact."""
    assert result.stats["finish_reason"] == "finished"
    assert sorted(result.kept) == sorted(ORIGINALS), describe(result)
    assert sorted(result.dropped) == sorted(DUPLICATES), describe(result)
    assert_dropped_as_copies(result, DUPLICATES, ("simhash",), min_similarity=1 - 3 / 64)
    for path, original in DUPLICATES.items():
        assert result.dropped[path].verdict.cluster == result.base + original  # type: ignore[attr-defined]
    assert result.dropped["/copy/async-commit.html"].verdict.similarity == 1.0  # type: ignore[attr-defined]
    assert neardup_stats(result) == simhash_stats("dropped")
    assert result.stats["item_dropped_count"] == len(DUPLICATES)
    assert result.stats["item_scraped_count"] == len(ORIGINALS)


def assert_tag_outcome(result: CrawlResult) -> None:
    """Every page kept; variants carry the four tag fields pointing at their original."""
    base = result.base
    assert result.stats["finish_reason"] == "finished"
    assert result.dropped == {}
    assert sorted(result.kept) == sorted(ORIGINALS + list(DUPLICATES))
    for path, item in result.kept.items():
        adapter = ItemAdapter(item)
        assert adapter["neardup_status"] == "checked"
        if path in DUPLICATES:
            assert adapter["neardup_of"] == base + DUPLICATES[path]
            assert adapter["neardup_cluster"] == base + DUPLICATES[path]
            assert adapter["neardup_method"] == "simhash"
            assert adapter["neardup_similarity"] >= 1 - 3 / 64
        else:
            assert adapter["neardup_of"] is None
            assert adapter["neardup_cluster"] == base + path  # its own cluster's original
    assert neardup_stats(result) == simhash_stats("tagged")
