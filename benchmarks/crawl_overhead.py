"""What the neardup pipeline costs a real Scrapy crawl: the same local site, pipeline off and on.

Usage: python benchmarks/crawl_overhead.py [--pages 10000] [--timeout 900] [--concurrency 16]
                                           [--extra-methods simhash ...] [--in-thread]
                                           [--python-walk] [--rounds N]
                                           [--server nginx|python]
                                           [--backend sqlite|http://HOST:9200 ...]

Generates a site of --pages pages from the real pages of ../shared/data (the PostgreSQL 15.18 and
15.20 manuals and the installation guide in all its languages: each page keeps its body, loses its
own links, and gets a navigation block; pages beyond the source count reuse the sources in turn,
so the site holds near-duplicates too). Page i links to its parent, to i+1 and to pages 10i+1 ..
10i+10, so a breadth-first crawl from index.html reaches every page. The site is served on
127.0.0.1 by nginx from files (--server nginx, the default when Debian's nginx-light is installed:
a site's server is not the crawler's to pay for) or by a ThreadingHTTPServer in this process
(--server python, which takes a good part of one of the two cores), and crawled by the bundled
`site` spider in a subprocess, once per mode:

- off: NEARDUP_ENABLED=False (the add-on is registered, the pipeline is not loaded);
- on: a fresh SQLite index (--backend sqlite, the default) or a fresh Elasticsearch fingerprint
  index (--backend URL: a `neardup-bench-crawl-*` index per run, deleted after it), the default
  methods and action (pages fingerprinted in a child process, NEARDUP_FINGERPRINT_PROCESSES=1);
  several --backend values run every "on" mode once per backend, in the same round
  (`--backend sqlite http://127.0.0.1:9200`: SQLite and Elasticsearch side by side);
- on (in-thread) with --in-thread: the same, fingerprinted in the pipeline's worker thread
  inside the crawler's process (NEARDUP_FINGERPRINT_PROCESSES=0);
- on (Python walk) with --python-walk: the defaults with the pure-Python walk of the page tree
  (NEARDUP_PYTHON_WALK=1) instead of the C++ one: the same text, for the walk's share;
- on (METHODS) for each --extra-methods entry.

--rounds N runs the modes N times in turn (the machine drifts), every second round in the
reverse order (off, on, ...; then ..., on, off), so a drift over the run weighs on both sides
alike; each row's overhead is against the "off" run of its own round, and a last table gives
each mode's mean overhead and its range over the rounds.

Every mode runs the same settings: no robots.txt, no delay, no AutoThrottle, --concurrency
requests in parallel, LOG_LEVEL=WARNING. Each crawl stops by itself: CLOSESPIDER_TIMEOUT, and the
subprocess is killed 60 s after that. Printed: wall time (process start to exit), the crawl's
own elapsed time (Scrapy stats), pages/s, the overhead of each "on" mode against "off", and the
CPU time per page of the crawler's process and of the check process it started (getrusage), of
the Elasticsearch server when it runs on this machine (/proc, the process listening on the
URL's port), the batches of pages checked together (`neardup/batch/lookups`) and how busy the
machine's cores were during the run (/proc/stat, other work included): on two cores, the
crawler, the site's server, the check and Elasticsearch share the machine.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from html import escape
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.local_process import listening_pid, process_cpu
from benchmarks.provenance import measured_at
from neardup_pipeline.scrapy.crawl import serve_local

ROOT = Path(__file__).resolve().parents[1]

BRANCHING = 10
_BODY = re.compile(rb"<body[^>]*>(.*)</body>", re.S | re.I)
_TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.S | re.I)
_HREF = re.compile(rb"\shref\s*=", re.I)
STAT_KEYS = (
    "response_received_count", "item_scraped_count", "item_dropped_count", "elapsed_time_seconds",
    "finish_reason", "neardup/items", "neardup/checked", "neardup/duplicates", "neardup/dropped",
    "neardup/errors", "neardup/no_text", "neardup/batch/lookups", "neardup/batch/pages",
    "memusage/max",
)


# --- the site ----------------------------------------------------------------------------------


def source_pages() -> list[tuple[str, bytes]]:
    """(title, body HTML without its own links) of every page in ../shared/data's two corpora."""
    from benchmarks.corpora import installation_guide_pages, postgresql_pages

    sources = []
    for page in (*postgresql_pages(), *installation_guide_pages()):
        body = _BODY.search(page.html)
        title = _TITLE.search(page.html)
        if body is None:
            continue
        text = _HREF.sub(b" data-href=", body.group(1))  # the crawl follows our links only
        name = title.group(1).strip() if title else page.doc_id.encode()
        sources.append((name.decode("utf-8", "replace"), text))
    return sources


def build_site(count: int) -> dict[str, bytes]:
    """path -> page bytes of a `count`-page site; /index.html is page 0."""
    sources = source_pages()
    site: dict[str, bytes] = {}
    for i in range(count):
        title, body = sources[i % len(sources)]
        links = [f'<a href="/p/{(i - 1) // BRANCHING}.html">up</a>'] if i else []
        if i + 1 < count:
            links.append(f'<a href="/p/{i + 1}.html">next</a>')
        children = range(BRANCHING * i + 1, min(BRANCHING * i + BRANCHING + 1, count))
        links += [f'<a href="/p/{c}.html">page {c}</a>' for c in children]
        head = (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{escape(title)}'
                f"</title></head>\n<body><nav>{' | '.join(links)}</nav>\n")
        site[f"/p/{i}.html"] = head.encode() + body + b"\n</body></html>\n"
    site["/index.html"] = site["/p/0.html"]
    return site


NGINX_CONF = """daemon off;
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    default_type "text/html; charset=utf-8";
    sendfile on;
    keepalive_requests 100000;
    server {{
        listen 127.0.0.1:{port};
        root {prefix}/site;
    }}
}}
"""


def serve(site: dict[str, bytes], server: str) -> AbstractContextManager[str]:
    """The site on 127.0.0.1 from `server` ("nginx" or "python"); yields the start URL."""
    return serve_nginx(site) if server == "nginx" else serve_python(site)


def nginx_binary() -> str | None:
    """Debian's nginx (`apt-get install nginx-light`), when installed."""
    return shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None)


@contextmanager
def serve_nginx(site: dict[str, bytes]) -> Iterator[str]:
    """Serve `site` from files with nginx (one worker, C, sendfile): a site's server is not the
    crawler's to pay for, and a Python server on the same 2 cores takes most of one."""
    binary = nginx_binary()
    if binary is None:
        raise SystemExit("nginx not found: apt-get install nginx-light, or --server python")
    with tempfile.TemporaryDirectory() as tmp:
        prefix = Path(tmp)
        prefix.chmod(0o755)  # the worker runs as an unprivileged user when started by root
        for path, body in site.items():
            target = prefix / "site" / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(body)
        for folder in ("site", "site/p"):
            (prefix / folder).chmod(0o755)
        with socket.socket() as probe:  # a free port (nginx cannot report the one it took)
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        conf = prefix / "nginx.conf"
        conf.write_text(NGINX_CONF.format(prefix=prefix, port=port))
        process = subprocess.Popen([binary, "-p", str(prefix), "-c", str(conf)],
                                   stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 10
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if process.poll() is not None or time.monotonic() > deadline:
                        err = process.stderr.read().decode() if process.stderr else ""
                        raise SystemExit(f"nginx did not start: {err[-500:]}") from None
                    time.sleep(0.05)
            yield f"http://127.0.0.1:{port}/index.html"
        finally:
            process.terminate()
            process.wait(timeout=10)


@contextmanager
def serve_python(site: dict[str, bytes]) -> Iterator[str]:
    """Serve `site` from memory on 127.0.0.1 (free port); yields the start URL."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            body = site.get(self.path.split("?", 1)[0])
            self.send_response(200 if body is not None else 404)
            payload = body if body is not None else b"not found"
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with serve_local(Handler, "bench-site") as base:
        yield f"{base}/index.html"


# --- one crawl (the subprocess) ----------------------------------------------------------------


def child(start_url: str, concurrency: int, timeout: int) -> int:
    """Run one crawl with CrawlerProcess and print its stats as JSON on the last line."""
    from scrapy.crawler import CrawlerProcess
    from scrapy.settings import Settings

    from neardup_pipeline.scrapy.spider import SiteSpider

    settings = Settings()
    # the bundled crawl settings read NEARDUP_* from the environment
    settings.setmodule("neardup_pipeline.scrapy.crawl_settings", priority="project")
    for name, value in {
        "ROBOTSTXT_OBEY": False, "DOWNLOAD_DELAY": 0, "AUTOTHROTTLE_ENABLED": False,
        "CONCURRENT_REQUESTS": concurrency, "CONCURRENT_REQUESTS_PER_DOMAIN": concurrency,
        "LOG_LEVEL": "WARNING", "CLOSESPIDER_TIMEOUT": timeout, "TELNETCONSOLE_ENABLED": False,
        "REMOTE_CONTROL_ENABLED": False, "RETRY_ENABLED": False,
    }.items():
        settings.set(name, value, priority="cmdline")
    if os.environ.get("BENCH_SWITCH_INTERVAL"):  # the GIL's switch interval, for all modes
        sys.setswitchinterval(float(os.environ["BENCH_SWITCH_INTERVAL"]))
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(SiteSpider)
    process.crawl(crawler, start_url=start_url)
    process.start()
    stats = crawler.stats.get_stats() if crawler.stats is not None else {}
    own, helpers = (resource.getrusage(who)
                    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    cpu = {"cpu/crawler": own.ru_utime + own.ru_stime,  # helpers: the check process (joined)
           "cpu/helpers": helpers.ru_utime + helpers.ru_stime}
    print(json.dumps({**{k: stats.get(k) for k in STAT_KEYS}, **cpu}, default=str))
    return 0


def crawl(
    label: str, start_url: str, env: dict[str, str], concurrency: int, timeout: int
) -> dict[str, Any]:
    """One crawl in a subprocess; its stats plus the wall time, or what went wrong."""
    command = [sys.executable, str(Path(__file__).resolve()), "--child", start_url,
               "--concurrency", str(concurrency), "--timeout", str(timeout)]
    start = time.perf_counter()
    try:
        clean = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
        done = subprocess.run(command, env={**clean, **env}, cwd=ROOT, capture_output=True,
                              text=True, timeout=timeout + 60, check=False)
    except subprocess.TimeoutExpired:
        return {"label": label, "error": f"killed after {timeout + 60} s"}
    wall = time.perf_counter() - start
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return {"label": label, "error": f"exit {done.returncode}: {done.stderr[-2000:]}"}
    stats: dict[str, Any] = json.loads(lines[-1])
    if done.stderr.strip():
        print(f"[crawl {label}] stderr (last lines):\n{done.stderr.strip()[-1500:]}",
              file=sys.stderr)
    return {"label": label, "wall": wall, **stats}


# --- CPU outside the crawler: the Elasticsearch server, the machine ------------------------------


def machine_cpu() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot (/proc/stat): every process,
    other work on a shared machine included."""
    ticks = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    idle = ticks[3] + ticks[4]  # idle, iowait
    tick = os.sysconf("SC_CLK_TCK")
    return (sum(ticks) - idle) / tick, sum(ticks) / tick


# --- report ------------------------------------------------------------------------------------


def _mode_and_round(label: str) -> tuple[str, str]:
    mode, _, round_number = label.partition(" #")
    return mode, round_number


def report(runs: Sequence[dict[str, Any]], pages: int, concurrency: int, server: str) -> str:
    offs = {_mode_and_round(r["label"])[1]: r for r in runs  # each round's "off" run
            if _mode_and_round(r["label"])[0] == "off" and "error" not in r}
    overheads: dict[str, list[float]] = {}
    lines = [
        "| mode | pages crawled | wall s | crawl s | pages/s | overhead (crawl time) "
        "| crawler CPU ms/page | check CPU ms/page | Elasticsearch CPU ms/page | machine busy "
        "| batches | checked | duplicates | finish |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        mode, round_number = _mode_and_round(r["label"])
        base = offs.get(round_number)
        if "error" in r:
            lines.append(f"| {r['label']} | - | - | - | - | - | - | - | - | - | - | - | - "
                         f"| {r['error'][:80]} |")
            continue
        got = r.get("response_received_count") or 0
        elapsed = float(r.get("elapsed_time_seconds") or r["wall"])
        overhead = "-"
        if base is not None and r is not base:
            base_rate = (base.get("response_received_count") or 0) / float(
                base.get("elapsed_time_seconds") or base["wall"])
            share = 100 * (base_rate / (got / elapsed) - 1)
            overheads.setdefault(mode, []).append(share)
            overhead = f"{share:+.1f}%"
        lines.append(
            f"| {r['label']} | {got:,} | {r['wall']:.1f} | {elapsed:.1f} | {got / elapsed:,.1f} "
            f"| {overhead} | {_per_page(r.get('cpu/crawler'), got)} "
            f"| {_per_page(r.get('cpu/helpers'), got)} | {_per_page(r.get('cpu/server'), got)} "
            f"| {_busy(r)} | {r.get('neardup/batch/lookups') or '-'} "
            f"| {r.get('neardup/checked') or '-'} "
            f"| {r.get('neardup/duplicates') or '-'} | {r.get('finish_reason')} |"
        )
    if any(len(shares) > 1 for shares in overheads.values()):
        lines += ["", "| mode | rounds | mean overhead | range |", "|---|---|---|---|"]
        lines += [f"| {mode} | {len(shares)} | {sum(shares) / len(shares):+.1f}% "
                  f"| {min(shares):+.1f}% to {max(shares):+.1f}% |"
                  for mode, shares in overheads.items()]
    return (f"{measured_at()}: {pages:,}-page site on 127.0.0.1 served by {server}, "
            f"CONCURRENT_REQUESTS={concurrency}\n\n" + "\n".join(lines))


def _busy(run: dict[str, Any]) -> str:
    """The machine's CPU use during the run, of its cores (2 cores, both busy: 100%)."""
    busy, total = run.get("cpu/machine_busy"), run.get("cpu/machine_total")
    return f"{100 * busy / total:.0f}%" if busy is not None and total else "-"


def _per_page(seconds: float | None, pages: int) -> str:
    return f"{1000 * seconds / pages:.2f}" if seconds and pages else "-"


def on_backends(
    modes: Sequence[tuple[str, dict[str, str]]], backends: Sequence[str]
) -> list[tuple[str, dict[str, str], str]]:
    """(label, environment, backend) of every mode on every backend; "off" runs once, and a
    label names its backend when there are several."""
    runs = []
    for label, env in modes:
        for backend in backends if "NEARDUP_BACKEND" in env else backends[:1]:
            named = label
            if len(backends) > 1 and "NEARDUP_BACKEND" in env:
                named = label.replace(")", f", {_backend_name(backend)})", 1)
            runs.append((named, env, backend))
    return runs


def _backend_name(backend: str) -> str:
    return "SQLite" if backend == "sqlite" else "Elasticsearch"


def on_backend(env: dict[str, str], backend: str) -> tuple[dict[str, str], str | None]:
    """A mode's environment on `backend`: SQLite as given, or a fresh Elasticsearch index."""
    if backend == "sqlite" or "NEARDUP_BACKEND" not in env:
        return env, None
    index = f"neardup-bench-crawl-{uuid.uuid4().hex[:8]}"
    return {**env, "NEARDUP_BACKEND": backend, "NEARDUP_FINGERPRINT_INDEX": index}, index


def drop_index(url: str, index: str) -> None:
    """Delete a run's fingerprint index and its side indices: the server is not ours."""
    from elasticsearch import Elasticsearch

    with Elasticsearch(url, request_timeout=60) as client:
        client.options(ignore_status=404).indices.delete(
            index=f"{index},{index}-writelog,{index}-df,{index}-clusters", allow_no_indices=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--timeout", type=int, default=900, help="seconds per crawl (bounded)")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--extra-methods", nargs="*", default=[],
                        help="more 'on' runs with NEARDUP_METHODS set to each value")
    parser.add_argument("--in-thread", action="store_true",
                        help="one more 'on' run with NEARDUP_FINGERPRINT_PROCESSES=0")
    parser.add_argument("--python-walk", action="store_true",
                        help="one more 'on' run with the pure-Python walk of the page tree "
                             "(NEARDUP_PYTHON_WALK=1) instead of the C++ one")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run every mode this many times, alternating (the machine drifts)")
    parser.add_argument("--server", choices=("nginx", "python"),
                        default="nginx" if nginx_binary() else "python",
                        help="what serves the site: nginx (default when installed) or Python's "
                             "ThreadingHTTPServer in this process")
    parser.add_argument("--backend", nargs="+", default=["sqlite"],
                        help="index of the 'on' runs: sqlite (a fresh file each run) or an "
                             "Elasticsearch URL (a fresh index each run, deleted after); "
                             "several: every 'on' mode on each")
    parser.add_argument("--child", metavar="START_URL", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args.child, args.concurrency, args.timeout)

    started = time.perf_counter()
    site = build_site(args.pages)
    size = sum(len(v) for v in site.values()) / 1e6
    print(f"[crawl] site: {args.pages:,} pages, {size:.0f} MB, built in "
          f"{time.perf_counter() - started:.1f}s", file=sys.stderr)
    runs = []
    with serve(site, args.server) as start_url, tempfile.TemporaryDirectory() as tmp:
        modes: list[tuple[str, dict[str, str]]] = [("off", {"NEARDUP_ENABLED": "False"})]
        modes.append(("on (defaults)", {"NEARDUP_BACKEND": f"sqlite:{Path(tmp) / 'on.sqlite'}"}))
        if args.in_thread:
            modes.append(("on (in-thread)", {
                "NEARDUP_BACKEND": f"sqlite:{Path(tmp) / 'thread.sqlite'}",
                "NEARDUP_FINGERPRINT_PROCESSES": "0",
            }))
        if args.python_walk:
            modes.append(("on (Python walk)", {
                "NEARDUP_BACKEND": f"sqlite:{Path(tmp) / 'python-walk.sqlite'}",
                "NEARDUP_PYTHON_WALK": "1",
            }))
        for i, methods in enumerate(args.extra_methods):
            modes.append((f"on ({methods})", {
                "NEARDUP_BACKEND": f"sqlite:{Path(tmp) / f'extra{i}.sqlite'}",
                "NEARDUP_METHODS": methods,
            }))
        every = on_backends(modes, args.backend)
        order = [(n, mode) for n in range(args.rounds)
                 for mode in (every if n % 2 == 0 else every[::-1])]
        for round_number, (label, env, backend) in order:
            if args.rounds > 1:  # every round starts from an empty index of its own
                label = f"{label} #{round_number + 1}"
                env = {k: v.replace(".sqlite", f".{round_number}.sqlite") for k, v in env.items()}
            print(f"[crawl] {label} ...", file=sys.stderr, flush=True)
            env, index = on_backend(env, backend)
            server = listening_pid(backend) if index is not None else None
            server_before, machine_before = process_cpu(server), machine_cpu()
            try:
                run = crawl(label, start_url, env, args.concurrency, args.timeout)
            finally:
                if index is not None:
                    drop_index(backend, index)
            server_after, machine_after = process_cpu(server), machine_cpu()
            if server_before is not None and server_after is not None:
                run["cpu/server"] = server_after - server_before  # its drop_index included
            run["cpu/machine_busy"] = machine_after[0] - machine_before[0]
            run["cpu/machine_total"] = machine_after[1] - machine_before[1]
            runs.append(run)
            print(f"[crawl] {label}: {json.dumps(run)[:400]}", file=sys.stderr, flush=True)
    print(report(runs, args.pages, args.concurrency, args.server))
    return 0 if all("error" not in r for r in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
