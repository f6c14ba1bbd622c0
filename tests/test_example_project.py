"""The example Scrapy project in crawler/ runs as its comment says: `scrapy crawl site` from
that folder (the Docker image's command), with the add-on dropping the demo site's copies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.crawl_harness import DUPLICATES, PAGES, serve_demo_site

PROJECT = Path(__file__).resolve().parent.parent / "crawler"


def test_scrapy_crawl_site_from_the_project_folder(tmp_path: Path) -> None:
    env = {name: value for name, value in os.environ.items() if not name.startswith("NEARDUP_")}
    env["NEARDUP_BACKEND"] = f"sqlite:{tmp_path / 'fp.sqlite'}"
    env["NEARDUP_METHODS"] = "simhash"
    feed = tmp_path / "kept.jsonl"
    with serve_demo_site(tmp_path) as base:
        done = subprocess.run(
            [sys.executable, "-m", "scrapy", "crawl", "site", "-a", f"start_url={base}/index.html",
             "-s", "CONCURRENT_REQUESTS=1", "-s", "DOWNLOAD_DELAY=0", "-s", "ROBOTSTXT_OBEY=0",
             "-s", "LOG_LEVEL=INFO", "-o", f"{feed}:jsonl"],
            cwd=PROJECT, env=env, capture_output=True, text=True, timeout=120, check=False,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    kept = [json.loads(line)["url"].removeprefix(base) for line in feed.read_text().splitlines()]
    assert len(kept) == PAGES - len(DUPLICATES)
    assert not set(kept) & set(DUPLICATES)
