"""Real crawls of the demo site with the less-frequent-words method, on SQLite and Elasticsearch.

Warm-up 0: the demo site has 11 pages, far fewer than the default warm-up. On so small a corpus
the mirror's own chrome words are among the rarest words of the site and weigh most, so its
weighted Jaccard to the original stays below 0.7: rarewords finds the two-word edit and the copy.
The text is the whole page (NEARDUP_CONTENT), as when these expectations were measured: with DF
from eleven pages and no warm-up, which words count as less frequent moves with every word.
"""

from __future__ import annotations

from pathlib import Path

from scrapy.utils.defer import deferred_f_from_coro_f

from neardup_pipeline.scrapy.pipeline import NearDuplicate
from tests.crawl_harness import DUPLICATES, PAGES, crawl, crawl_settings, describe

EXPECTED = {p: o for p, o in DUPLICATES.items() if p != "/mirror/history.html"}


async def rarewords_crawl(site: str, backend: str, **extra: object) -> None:
    settings = crawl_settings(
        backend, NEARDUP_METHODS=["rarewords"], NEARDUP_RAREWORDS_WARMUP=0,
        NEARDUP_CONTENT="whole", **extra
    )
    result = await crawl(site, settings)
    assert sorted(result.dropped) == sorted(EXPECTED), describe(result)
    for path, original in EXPECTED.items():
        exc = result.dropped[path]
        assert isinstance(exc, NearDuplicate)
        assert exc.verdict.method == "rarewords" and exc.verdict.duplicate_of == site + original
        assert exc.verdict.similarity is not None and exc.verdict.similarity >= 0.7
    assert result.stats["neardup/duplicates/rarewords"] == len(EXPECTED)
    assert result.stats["neardup/checked"] == PAGES


@deferred_f_from_coro_f
async def test_rarewords_crawl_sqlite(site: str, tmp_path: Path) -> None:
    await rarewords_crawl(site, f"sqlite:{tmp_path / 'fp.sqlite'}")


@deferred_f_from_coro_f
async def test_rarewords_crawl_elasticsearch(
    site: str, es_url: str, es_index_names: dict[str, str]
) -> None:
    await rarewords_crawl(
        site, es_url, NEARDUP_FINGERPRINT_INDEX=es_index_names["fingerprint_index"]
    )
