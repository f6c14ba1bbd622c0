"""Real crawls of the demo site with anchor words: a model fitted from the crawl's own pages
(warm-up, no model file) and a model file, on SQLite and Elasticsearch."""

from __future__ import annotations

from pathlib import Path

from scrapy.utils.defer import deferred_f_from_coro_f

from neardup_pipeline import NearDupConfig
from neardup_pipeline.cli.anchors import corpus_texts
from neardup_pipeline.methods.anchors.fit import fit_corpus
from neardup_pipeline.methods.anchors.model import AnchorModel, FitSettings
from neardup_pipeline.scrapy.crawl import DEMO_SITE
from tests.crawl_harness import DUPLICATES, PAGES, REORDERED, crawl, crawl_settings, describe
from tests.crawl_outcomes import assert_dropped_as_copies

# Eleven pages are a tiny corpus: 2 set bits suffice, and the model file's fit lowers the floor
# precision (a bit set in 2 of 11 pages has exclusivity 9/11); the warm-up fits with the fit
# command's defaults. The expectations were measured on whole pages, their stop words dropped
# and their words stemmed (on eleven pages a fit depends on every word); there simhash keeps the
# shuffled page.
SMALL = {"NEARDUP_ANCHORS_MIN_BITS": 2, "NEARDUP_CONTENT": "whole", "NEARDUP_STEM": True,
         "NEARDUP_REMOVE_STOPWORDS": True}
SIMHASH_DROPS = {path for path in DUPLICATES if path != REORDERED}
SMALL_FIT = FitSettings(min_bits=2, floor_precision=0.6, min_df=2)
COPY, ORIGINAL = "/copy/async-commit.html", "/articles/async-commit.html"


@deferred_f_from_coro_f
async def test_anchors_warmup(site: str, tmp_path: Path, crawl_backend: dict[str, str]) -> None:
    """No model: pages pass with simhash's verdicts, then anchors checks them at close."""
    out = tmp_path / "fitted.json"
    settings = crawl_settings(
        **crawl_backend, NEARDUP_METHODS="simhash,anchors", NEARDUP_ANCHORS_MODEL_OUT=str(out),
        **SMALL,
    )
    result = await crawl(site, settings)
    assert result.stats["finish_reason"] == "finished"
    assert sorted(result.dropped) == sorted(SIMHASH_DROPS), describe(result)  # simhash's
    stats = result.stats
    assert stats["neardup/anchors/warmup_pages"] == PAGES  # fewer pages than the warm-up size
    assert stats["neardup/anchors/model_words"] >= 1
    assert stats["neardup/anchors/warmup_duplicates"] >= 1
    found = stats["neardup/anchors/warmup_duplicates"]
    assert sum(stats.get(f"neardup/anchors/warmup_duplicates/{m}", 0)
               for m in ("simhash", "anchors")) == found
    model = AnchorModel.load(out)
    assert model.digest == stats["neardup/anchors/model_digest"]


def demo_model(tmp_path: Path) -> Path:
    config = NearDupConfig().replace(content="whole", stem=True, remove_stopwords=True)
    path = tmp_path / "demo-anchors.json"
    fit_corpus(corpus_texts(Path(DEMO_SITE), config), config.text, SMALL_FIT).save(path)
    return path


@deferred_f_from_coro_f
async def test_anchors_model(site: str, tmp_path: Path, crawl_backend: dict[str, str]) -> None:
    """With a model file: the byte copy has the original's signature and is dropped by anchors."""
    settings = crawl_settings(**crawl_backend, NEARDUP_METHODS=["anchors"],
                              NEARDUP_ANCHORS_MODEL=str(demo_model(tmp_path)), **SMALL)
    result = await crawl(site, settings)
    assert result.stats["finish_reason"] == "finished"
    assert COPY in result.dropped, describe(result)
    assert_dropped_as_copies(result, {COPY: ORIGINAL}, ("anchors",), min_similarity=1.0)
    assert result.stats["neardup/checked"] == PAGES
    assert "neardup/anchors/warmup_pages" not in result.stats


@deferred_f_from_coro_f
async def test_anchors_warmup_shorter_than_crawl(site: str, tmp_path: Path) -> None:
    """Warm-up of 5 pages: the model is fitted mid-crawl and later pages are checked with it."""
    settings = crawl_settings(f"sqlite:{tmp_path / 'fp.sqlite'}", NEARDUP_METHODS=["anchors"],
                              NEARDUP_ANCHORS_WARMUP=5, NEARDUP_ACTION="tag", **SMALL)
    result = await crawl(site, settings)
    assert result.stats["finish_reason"] == "finished"
    assert result.stats["neardup/anchors/warmup_pages"] == 5
    assert result.stats["neardup/unchecked"] == 5  # anchors alone: no verdict before the model
    assert result.stats["neardup/items"] == PAGES
    assert result.stats["neardup/checked"] == PAGES - 5  # compared with the index
    assert len(result.kept) == PAGES
