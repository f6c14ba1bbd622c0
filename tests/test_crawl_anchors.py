"""Real crawls of the demo site with anchor words: a model fitted from the crawl's own pages
(warm-up, no model file) and a model file, on SQLite and Elasticsearch."""

from __future__ import annotations

from pathlib import Path

from scrapy.utils.defer import deferred_f_from_coro_f

from neardup_pipeline import NearDupConfig
from neardup_pipeline.cli.anchors import corpus_texts
from neardup_pipeline.methods.anchors.fit import fit_corpus
from neardup_pipeline.methods.anchors.model import AnchorModel
from neardup_pipeline.scrapy.crawl import DEMO_SITE
from neardup_pipeline.scrapy.pipeline import NearDuplicate
from tests.crawl_harness import DUPLICATES, PAGES, crawl, crawl_settings, describe

# Eleven pages are a tiny corpus: the floor precision is lowered (a bit set in 2 of 11 pages has
# exclusivity 9/11) and 2 set bits suffice.
# The expectations were measured on whole pages (on eleven pages a fit depends on every word).
SMALL = {"NEARDUP_ANCHORS_FLOOR_PRECISION": 0.6, "NEARDUP_ANCHORS_MIN_BITS": 2,
         "NEARDUP_ANCHORS_MIN_DF": 2, "NEARDUP_CONTENT": "whole"}
COPY, ORIGINAL = "/copy/async-commit.html", "/articles/async-commit.html"


async def warmup_crawl(site: str, backend: str, tmp_path: Path, **extra: object) -> None:
    """No model: pages pass with simhash's verdicts, then anchors checks them at close."""
    out = tmp_path / "fitted.json"
    settings = crawl_settings(
        backend, NEARDUP_METHODS="simhash,anchors", NEARDUP_ANCHORS_MODEL_OUT=str(out),
        **SMALL, **extra,
    )
    result = await crawl(site, settings)
    assert result.stats["finish_reason"] == "finished"
    assert sorted(result.dropped) == sorted(DUPLICATES), describe(result)  # simhash's verdicts
    stats = result.stats
    assert stats["neardup/anchors/warmup_pages"] == PAGES  # fewer pages than the warm-up size
    assert stats["neardup/anchors/model_words"] >= 1
    assert stats["neardup/anchors/warmup_duplicates"] >= 1
    found = stats["neardup/anchors/warmup_duplicates"]
    assert sum(stats.get(f"neardup/anchors/warmup_duplicates/{m}", 0)
               for m in ("simhash", "anchors")) == found
    model = AnchorModel.load(out)
    assert model.digest == stats["neardup/anchors/model_digest"]


@deferred_f_from_coro_f
async def test_anchors_warmup_sqlite(site: str, tmp_path: Path) -> None:
    await warmup_crawl(site, f"sqlite:{tmp_path / 'fp.sqlite'}", tmp_path)


@deferred_f_from_coro_f
async def test_anchors_warmup_elasticsearch(
    site: str, tmp_path: Path, es_url: str, es_index_names: dict[str, str]
) -> None:
    await warmup_crawl(site, es_url, tmp_path,
                       NEARDUP_FINGERPRINT_INDEX=es_index_names["fingerprint_index"])


def demo_model(tmp_path: Path) -> Path:
    config = NearDupConfig(anchors_floor_precision=0.6, anchors_min_bits=2, anchors_min_df=2,
                           content="whole")
    path = tmp_path / "demo-anchors.json"
    fit_corpus(corpus_texts(Path(DEMO_SITE), config), config).save(path)
    return path


async def model_crawl(site: str, backend: str, tmp_path: Path, **extra: object) -> None:
    """With a model file: the byte copy has the original's signature and is dropped by anchors."""
    settings = crawl_settings(backend, NEARDUP_METHODS=["anchors"],
                              NEARDUP_ANCHORS_MODEL=str(demo_model(tmp_path)), **SMALL, **extra)
    result = await crawl(site, settings)
    assert result.stats["finish_reason"] == "finished"
    assert COPY in result.dropped, describe(result)
    exc = result.dropped[COPY]
    assert isinstance(exc, NearDuplicate)
    assert exc.verdict.method == "anchors" and exc.verdict.duplicate_of == site + ORIGINAL
    assert exc.verdict.similarity == 1.0
    assert result.stats["neardup/checked"] == PAGES
    assert "neardup/anchors/warmup_pages" not in result.stats


@deferred_f_from_coro_f
async def test_anchors_model_sqlite(site: str, tmp_path: Path) -> None:
    await model_crawl(site, f"sqlite:{tmp_path / 'fp.sqlite'}", tmp_path)


@deferred_f_from_coro_f
async def test_anchors_model_elasticsearch(
    site: str, tmp_path: Path, es_url: str, es_index_names: dict[str, str]
) -> None:
    await model_crawl(site, es_url, tmp_path,
                      NEARDUP_FINGERPRINT_INDEX=es_index_names["fingerprint_index"])


@deferred_f_from_coro_f
async def test_anchors_warmup_shorter_than_crawl(site: str, tmp_path: Path) -> None:
    """Warm-up of 5 pages: the model is fitted mid-crawl and later pages are checked with it."""
    settings = crawl_settings(f"sqlite:{tmp_path / 'fp.sqlite'}", NEARDUP_METHODS=["anchors"],
                              NEARDUP_ANCHORS_WARMUP=5, NEARDUP_ACTION="tag", **SMALL)
    result = await crawl(site, settings)
    assert result.stats["finish_reason"] == "finished"
    assert result.stats["neardup/anchors/warmup_pages"] == 5
    assert result.stats["neardup/unchecked"] == 5  # anchors alone: no verdict before the model
    assert result.stats["neardup/checked"] == PAGES
    assert len(result.kept) == PAGES
