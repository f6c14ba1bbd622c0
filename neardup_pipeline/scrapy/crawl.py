"""`neardup crawl [URL]`: run the bundled crawler (the `site` spider with the neardup add-on).

Without a URL it serves the bundled demo site (demo_site/ beside this module) on a free local
port, crawls it against a fresh SQLite index and prints, per page, whether it was kept or dropped
and why, so the demo shows what simhash catches and what it misses. This is a CLI: it owns the
process, so it uses Scrapy's CrawlerProcess (tests drive crawls with get_crawler + crawl_async).
"""

from __future__ import annotations

import argparse
import functools
import http.server
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import urlparse

if TYPE_CHECKING:
    from neardup_pipeline.config import NearDupConfig

DEMO_BACKEND = "sqlite:neardup-demo.sqlite"
CRAWL_BACKEND = "sqlite:neardup-crawl.sqlite"
# The demo's own index on Elasticsearch, which its fresh start may delete: never a crawl's.
DEMO_FINGERPRINT_INDEX = "neardup-demo"
DEMO_SITE = Path(__file__).resolve().parent / "demo_site"
NEAREST_LIMIT = 500  # pages; the "nearest page" note is a pairwise scan, for small crawls only


@dataclass
class Outcome:
    """What happened to one page's item."""

    url: str
    kept: bool
    duplicate_of: str | None = None
    method: str | None = None
    similarity: float | None = None
    status: str | None = None  # neardup_status when the pipeline set one
    reason: str = ""  # drop reason for drops that are not near-duplicates
    html: str | bytes | None = None
    text: str | None = None


def run(args: argparse.Namespace) -> int:
    """Run one crawl and print its summary; 0 when the spider finished (or hit --max-pages)
    and neardup's part is done (else the finish reason says why, e.g. neardup_incomplete)."""
    from scrapy.exceptions import NotConfigured

    from neardup_pipeline.config import NearDupConfig
    from neardup_pipeline.errors import NearDupError
    from neardup_pipeline.scrapy.stats import INCOMPLETE_REASON

    demo = args.url is None
    try:
        settings = _settings(args, demo)
        config = NearDupConfig.from_settings(settings)  # misconfiguration fails here, clearly
        fresh = _start_fresh(config, demo, args.fresh)
    except (NearDupError, NotConfigured, ValueError) as exc:
        print(f"neardup crawl: {exc}", file=sys.stderr)
        return 2
    with _serve(DEMO_SITE) if demo else _no_server(args.url) as start_url:
        outcomes, stats = _crawl(settings, start_url)
    _print_summary(sys.stdout, start_url, config, outcomes, stats, demo=demo, fresh=fresh)
    if stats.get("finish_reason") == INCOMPLETE_REASON:
        print(f"neardup crawl: not complete: {stats.get('neardup/spool/pending', 0)} spooled "
              f"fingerprints and writes wait for the index, "
              f"{stats.get('neardup/unrecorded', 0)} pages were not recorded (the log says "
              "why); run the crawl again once the index takes writes", file=sys.stderr)
    return 0 if stats.get("finish_reason") in ("finished", "closespider_pagecount") else 1


def _start_fresh(config: NearDupConfig, demo: bool, asked: bool | None) -> bool:
    """Delete what an earlier run left when asked (`--fresh`; the demo by default, on its own
    index only); whether this run starts from an empty index."""
    from neardup_pipeline.index.sqlite.spec import SQLITE_SCHEME, sqlite_path

    backend = config.backend
    if backend == "memory":
        return True
    remote = not backend.startswith(SQLITE_SCHEME)
    own = not remote or config.elastic.fingerprint_index == DEMO_FINGERPRINT_INDEX
    if not (asked if asked is not None else demo and own):
        return False
    if not remote:
        _delete_sqlite(Path(sqlite_path(backend)))
        return True
    from neardup_pipeline.index.elastic.fresh import delete_crawl_indices

    deleted = delete_crawl_indices(config)
    if deleted:
        print(f"neardup crawl: fresh start: deleted {', '.join(deleted)}", file=sys.stderr)
    return True


def _settings(args: argparse.Namespace, demo: bool) -> Any:
    """The bundled crawl settings, then this command's flags on top."""
    from scrapy.settings import Settings

    settings = Settings()
    settings.setmodule("neardup_pipeline.scrapy.crawl_settings", priority="project")
    if args.backend:
        settings.set("NEARDUP_BACKEND", args.backend, priority="cmdline")
    elif settings.get("NEARDUP_BACKEND") is None:
        settings.set("NEARDUP_BACKEND", DEMO_BACKEND if demo else CRAWL_BACKEND,
                     priority="cmdline")
    if demo and settings.get("NEARDUP_FINGERPRINT_INDEX") is None:  # on Elasticsearch
        settings.set("NEARDUP_FINGERPRINT_INDEX", DEMO_FINGERPRINT_INDEX, priority="cmdline")
    if args.action:
        settings.set("NEARDUP_ACTION", args.action, priority="cmdline")
    if args.methods:
        settings.set("NEARDUP_METHODS", args.methods, priority="cmdline")
    from neardup_pipeline.cli.options import es_flag_settings

    for name, value in es_flag_settings(args).items():  # --es-ca-certs, ...: NEARDUP_ES_*
        settings.set(f"NEARDUP_{name.upper()}", value, priority="cmdline")
    if args.max_pages is not None:
        settings.set("CLOSESPIDER_PAGECOUNT", args.max_pages, priority="cmdline")
    if args.output is not None:
        settings.set("FEEDS", {str(args.output): {"format": "jsonlines", "overwrite": True,
                                                  "encoding": "utf-8"}}, priority="cmdline")
    settings.set("LOG_LEVEL", args.log_level.upper(), priority="cmdline")
    if demo:
        # One local site: no delay, and one request at a time so pages are checked in link
        # order (the originals come first on the index page) and every run agrees.
        for name, value in {
            "ROBOTSTXT_OBEY": False, "DOWNLOAD_DELAY": 0, "AUTOTHROTTLE_ENABLED": False,
            "CONCURRENT_REQUESTS": 1, "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        }.items():
            settings.set(name, value, priority="cmdline")
    return settings


def _crawl(settings: Any, start_url: str) -> tuple[list[Outcome], dict[str, Any]]:
    """Crawl with CrawlerProcess, recording every item's outcome through Scrapy's signals."""
    from scrapy import signals
    from scrapy.crawler import CrawlerProcess

    from neardup_pipeline.scrapy.spider import SiteSpider

    outcomes: list[Outcome] = []
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(SiteSpider)

    def scraped(item: Any) -> None:
        outcomes.append(_kept(item, settings))

    def dropped(item: Any, exception: BaseException) -> None:
        outcomes.append(_dropped(item, exception, settings))

    crawler.signals.connect(scraped, signal=signals.item_scraped)
    crawler.signals.connect(dropped, signal=signals.item_dropped)
    process.crawl(crawler, start_url=start_url)
    process.start()
    stats = crawler.stats.get_stats() if crawler.stats is not None else {}
    return outcomes, stats


def _fields(settings: Any) -> dict[str, str]:
    from neardup_pipeline.scrapy.settings import TagFields

    fields = TagFields(**settings.getdict("NEARDUP_TAG_FIELDS"))
    return {"of": fields.of, "similarity": fields.similarity, "method": fields.method,
            "status": fields.status}


def _kept(item: Any, settings: Any) -> Outcome:
    from itemadapter import ItemAdapter

    adapter = ItemAdapter(item)
    f = _fields(settings)
    return Outcome(
        url=str(adapter.get("url")), kept=True, duplicate_of=adapter.get(f["of"]),
        method=adapter.get(f["method"]), similarity=adapter.get(f["similarity"]),
        status=adapter.get(f["status"]), html=adapter.get("html"), text=adapter.get("text"),
    )


def _dropped(item: Any, exception: BaseException, settings: Any) -> Outcome:
    from itemadapter import ItemAdapter

    from neardup_pipeline.scrapy.pipeline import NearDuplicate

    adapter = ItemAdapter(item)
    if not isinstance(exception, NearDuplicate):
        return Outcome(url=str(adapter.get("url")), kept=False, reason=str(exception))
    verdict = exception.verdict
    return Outcome(
        url=str(adapter.get("url")), kept=False, duplicate_of=verdict.duplicate_of,
        method=verdict.method, similarity=verdict.similarity,
    )


def _print_summary(
    out: TextIO, start_url: str, config: Any, outcomes: list[Outcome], stats: dict[str, Any],
    *, demo: bool, fresh: bool,
) -> None:
    from neardup_pipeline.config import redact_backend

    origin = _origin(start_url)

    def short(url: str | None) -> str:
        if url and url.startswith(origin):
            return url[len(origin):] or "/"
        return str(url)

    where = f"demo site served from {_demo_dir()} at {start_url}" if demo else start_url
    print(f"\nneardup crawl: {where}", file=out)
    print(f"  backend {redact_backend(config.backend)}{' (fresh)' if fresh else ''}, "
          f"action {config.scrapy.action}, methods {','.join(config.method_names)}\n", file=out)
    nearest = _nearest_notes(outcomes, config) if demo or len(outcomes) <= NEAREST_LIMIT else {}
    width = max([len(short(o.url)) for o in outcomes] + [20])
    for o in outcomes:
        if o.duplicate_of is not None:
            word = "KEPT" if o.kept else "DROPPED"
            label = "tagged near-duplicate" if o.kept else "near-duplicate"
            note = (f"{label} of {short(o.duplicate_of)} ({o.method}, similarity "
                    f"{_fmt(o.similarity)}{_distance(o.method, o.similarity)})")
        elif not o.kept:
            word, note = "DROPPED", o.reason
        else:
            word = "KEPT"
            note = "distinct" if o.status in (None, "checked") else f"status {o.status}"
            if o.url in nearest:
                near_url, distance = nearest[o.url]
                note += (f"; nearest page {short(near_url)} at simhash distance {distance} "
                         f"(> k={config.simhash.k}, not flagged)")
        print(f"  {word:<8} {short(o.url):<{width}}  {note}", file=out)
    kept = sum(o.kept for o in outcomes)
    print(f"\n{len(outcomes)} pages: {kept} kept, {len(outcomes) - kept} dropped", file=out)
    print("stats:", file=out)
    for key in sorted(k for k in stats if k.startswith("neardup/")):
        print(f"  {key} = {stats[key]}", file=out)
    for key in ("item_scraped_count", "item_dropped_count", "finish_reason"):
        if key in stats:
            print(f"  {key} = {stats[key]}", file=out)


def _nearest_notes(outcomes: list[Outcome], config: Any) -> dict[str, tuple[str, int]]:
    """For each kept, unflagged page: its nearest earlier page by simhash, if within 2k bits.

    Shows honestly what the method missed (e.g. a reordered copy just past the threshold);
    recomputed here from the kept items because the pipeline reports only flagged matches.
    """
    if "simhash" not in config.method_names:
        return {}
    from neardup_pipeline.fingerprint import Document, Fingerprinter
    from neardup_pipeline.methods.simhash import hamming

    fingerprinter = Fingerprinter(config.replace(methods=("simhash",)))
    seen: list[tuple[str, int]] = []
    notes: dict[str, tuple[str, int]] = {}
    for o in outcomes:
        if not o.kept or (o.html is None and o.text is None):
            continue
        fp = fingerprinter.fingerprint(Document(o.url, html=o.html, text=o.text, url=o.url))
        if fp.status != "ok":
            continue
        sig = int(fp.signatures["simhash"])
        if o.duplicate_of is None and seen:
            distance, near = min((hamming(sig, s), u) for u, s in seen)
            if config.simhash.k < distance <= 4 * config.simhash.k:
                notes[o.url] = (near, distance)
        seen.append((o.url, sig))
    return notes


def _distance(method: str | None, similarity: float | None) -> str:
    if method != "simhash" or similarity is None:
        return ""
    return f", distance {round((1.0 - similarity) * 64)} bits"


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _origin(url: str) -> str:
    parsed = urlparse(url)
    return f"{parsed.scheme}://{parsed.netloc}"


def _demo_dir() -> str:
    try:
        return str(DEMO_SITE.relative_to(Path.cwd()))
    except ValueError:
        return str(DEMO_SITE)


def _delete_sqlite(path: Path) -> None:
    """A fresh index: the database file and SQLite's journal files."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the demo site without a log line per request (the summary says what happened)."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serve_local(
    handler: Callable[..., http.server.BaseHTTPRequestHandler], name: str = "local-site"
) -> Iterator[str]:
    """Serve with `handler` on 127.0.0.1 at a free port, in a thread; yields the base URL
    (no trailing slash) and stops the server on the way out. The demo crawl, the tests' sites
    and the crawl benchmark all serve this way."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@contextmanager
def _serve(root: Path) -> Iterator[str]:
    """Serve `root` on 127.0.0.1 at a free port in a thread; yields the start URL."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    with serve_local(handler, "demo-site") as base:
        yield f"{base}/index.html"


@contextmanager
def _no_server(url: str) -> Iterator[str]:
    yield url
