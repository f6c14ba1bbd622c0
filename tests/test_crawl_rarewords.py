"""Real crawls of the demo site with the less-frequent-words method, on SQLite and Elasticsearch.

Warm-up 0: the demo site has 11 pages, far fewer than the default warm-up. On so small a corpus
the mirror's own chrome words are among the rarest words of the site and weigh most, so its
weighted Jaccard to the original stays below 0.7: rarewords finds the two-word edit and the copy.
The text is the whole page (NEARDUP_CONTENT), as when these expectations were measured: with DF
from eleven pages and no warm-up, which words count as less frequent moves with every word.
"""

from __future__ import annotations

from scrapy.utils.defer import deferred_f_from_coro_f

from tests.crawl_harness import DUPLICATES, PAGES, crawl, crawl_settings, describe
from tests.crawl_outcomes import assert_dropped_as_copies

EXPECTED = {p: o for p, o in DUPLICATES.items() if p != "/mirror/history.html"}


@deferred_f_from_coro_f
async def test_rarewords_crawl(site: str, crawl_backend: dict[str, str]) -> None:
    settings = crawl_settings(
        **crawl_backend, NEARDUP_METHODS=["rarewords"], NEARDUP_RAREWORDS_WARMUP=0,
        NEARDUP_CONTENT="whole",
    )
    result = await crawl(site, settings)
    assert sorted(result.dropped) == sorted(EXPECTED), describe(result)
    assert_dropped_as_copies(result, EXPECTED, ("rarewords",), min_similarity=0.7)
    assert result.stats["neardup/duplicates/rarewords"] == len(EXPECTED)
    assert result.stats["neardup/checked"] == PAGES
