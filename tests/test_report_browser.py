"""`neardup report` rendered by a real headless Chromium (Debian's package; `make browser`), and
the demo scenario end to end: crawl on Elasticsearch, `neardup search`, `neardup stats`,
`neardup report`, screenshot. Screenshot paths are printed (`pytest -s` shows them).

Chromium runs with networking features off and only opens file:// pages; the report's own
Content-Security-Policy forbids any load but inline data: images.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from neardup_pipeline.cli.main import main
from tests.crawl_harness import crawl, crawl_settings

HOSTILE = ('<script>alert("owned")</script> <img src=x onerror=alert(1)> '
           "&lt;b&gt; javascript:alert(2)")
BASE = ("Write-ahead logging keeps every change in a sequential log before the data files are "
        "touched, so a crash can be recovered by replaying the log from the last checkpoint. "
        "Checkpoints bound the replay time and let old segments be recycled. ") * 4

BAR_BLUE = (0x3B, 0x6E, 0xA5)  # report.py's histogram bars
LEFT_MARK = (0xFF, 0xD0, 0xD0)  # mark.d
RIGHT_MARK = (0xC8, 0xF2, 0xC8)  # mark.i
PROBE = """<script>
window.addEventListener("load", function () {
  var img = document.getElementById("histogram");
  var marks = document.querySelectorAll("mark.d, mark.i");
  var out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({
    complete: img.complete, width: img.naturalWidth, height: img.naturalHeight,
    marks: marks.length, scripts: document.scripts.length,
    markBackground: marks.length ? getComputedStyle(marks[marks.length - 1]).backgroundColor : "",
    clusterTables: document.querySelectorAll("table.cluster").length,
    pairs: document.querySelectorAll("section.pair").length
  });
  document.body.appendChild(out);
});
</script>"""


def chromium_binary() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail("Chromium is not installed: `make browser` installs Debian's package")
    return found


def chromium(tmp_path: Path, *args: str) -> str:
    """Run headless Chromium once (own profile, no background network); its stdout."""
    command = [
        chromium_binary(), "--headless", "--no-sandbox", "--disable-gpu",
        "--disable-background-networking", "--disable-component-update", "--no-first-run",
        "--disable-sync", "--disable-extensions", "--hide-scrollbars", "--mute-audio",
        f"--user-data-dir={tmp_path / 'chromium-profile'}", *args,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def probe(tmp_path: Path, report: Path) -> dict[str, Any]:
    """What Chromium made of the report: a copy with a probe script (the report's CSP allows no
    script, so the copy's CSP adds inline scripts) dumps the rendered facts into the DOM."""
    page = report.read_text(encoding="utf-8")
    page = page.replace("default-src 'none';", "default-src 'none'; script-src 'unsafe-inline';")
    page = page.replace("</body>", PROBE + "</body>")
    probed = tmp_path / "probed.html"
    probed.write_text(page, encoding="utf-8")
    dom = chromium(tmp_path, "--virtual-time-budget=5000", "--dump-dom", probed.as_uri())
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert found, dom[-2000:]
    return dict(json.loads(found.group(1).replace("&quot;", '"')))


def show(capsys: pytest.CaptureFixture[str], text: str) -> None:
    """Print past pytest's capture: the figures and paths belong in the test output."""
    with capsys.disabled():
        print(text)


def screenshot(
    tmp_path: Path, report: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> tuple[Path, np.ndarray]:
    """A full-height screenshot of the report (as is) and its pixels (RGB, 0-255)."""
    from matplotlib import image

    shot = tmp_path / name
    chromium(tmp_path, "--window-size=1280,2400", f"--screenshot={shot}", report.as_uri())
    assert shot.is_file() and shot.stat().st_size > 10_000
    pixels = (image.imread(str(shot))[..., :3] * 255).round().astype(int)
    show(capsys, f"\nreport screenshot: {shot}")
    return shot, pixels


def count_colour(pixels: np.ndarray, rgb: tuple[int, int, int], tolerance: int = 6) -> int:
    return int((np.abs(pixels - np.array(rgb)).max(axis=-1) <= tolerance).sum())


def test_report_from_dedup_output_renders_in_chromium(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], record_property: Any
) -> None:
    docs = [
        {"id": "wal", "url": "http://e.org/wal", "text": BASE},
        {"id": "wal-edit", "url": "https://e.org/wal-edited",
         "text": BASE.replace("crash", "power failure", 1)},
        {"id": "wal-hostile", "url": "javascript:alert(3)", "text": HOSTILE + " " + BASE},
        {"id": "other", "url": "http://e.org/other",
         "text": "Vacuum reclaims storage occupied by dead tuples in every table it visits."},
        {"id": "empty", "text": "   "},
    ]
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text("\n".join(json.dumps(d) for d in docs) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["dedup", str(corpus), "-o", str(out)]) == 0
    assert main(["stats", str(out), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["documents"] == 5 and stats["clusters"] == 2 and stats["duplicates"] == 2
    assert stats["not_checked"] == {"no_text": 1}
    assert stats["cluster_sizes"] == {"1": 1, "3": 1}

    report = tmp_path / "report.html"
    assert main(["report", str(out), "--docs", str(corpus), "-o", str(report)]) == 0
    page = report.read_text(encoding="utf-8")
    assert "<script>alert" not in page and "<img src=x" not in page  # escaped, shown as text
    assert "&lt;script&gt;alert(&quot;owned&quot;)&lt;/script&gt;" in page
    assert 'href="javascript:' not in page
    assert "http" not in re.sub(r'(href="|>)https?://e\.org[^"<]*', "", page).replace(
        "http-equiv", "")  # nothing to fetch: no external URL besides the pages' own links

    facts = probe(tmp_path, report)
    assert facts["complete"] and (facts["width"], facts["height"]) == (700, 320)  # decoded
    assert facts["scripts"] == 1  # the probe alone: page text never became a script
    assert facts["clusterTables"] == 1 and facts["pairs"] == 2
    assert facts["marks"] >= 4  # changed words on both sides of both pairs, and the legend
    assert facts["markBackground"] == "rgb(200, 242, 200)"

    shot, pixels = screenshot(tmp_path, report, "report-dedup.png", capsys)
    record_property("screenshot", str(shot))
    packed = (pixels[..., 0] << 16) | (pixels[..., 1] << 8) | pixels[..., 2]
    assert np.unique(packed).size > 50  # not blank
    assert count_colour(pixels, BAR_BLUE) > 5_000  # the histogram's bars were drawn
    assert count_colour(pixels, LEFT_MARK) > 100 and count_colour(pixels, RIGHT_MARK) > 100


@deferred_f_from_coro_f
async def test_demo_crawl_on_es_then_search_stats_report(
    site: str, es_url: str, es_index_names: dict[str, str], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The issue's scenario: the demo site crawled into Elasticsearch with the pages index and the
    `best` canonical rule; then search (collapsed), stats, and the report in Chromium."""
    pages = es_index_names["pages_index"]
    settings = crawl_settings(
        es_url, NEARDUP_METHODS=["simhash", "bag"], NEARDUP_CANONICAL="best",
        NEARDUP_FINGERPRINT_INDEX=es_index_names["fingerprint_index"],
        NEARDUP_PAGES_INDEX=pages, NEARDUP_SPOOL_PATH=str(tmp_path / "spool.sqlite"),
    )
    result = await crawl(site, settings)
    assert result.stats["finish_reason"] == "finished"
    # The mirror's running text is its original's (its banner and byline are not running text),
    # and the byte copy is its original: both tie with their originals on every criterion (a
    # shorter URL is none), so the first seen stays canonical and the copies are dropped.
    assert "/mirror/history.html" in result.dropped and "/copy/async-commit.html" in result.dropped
    assert result.stats.get("neardup/kept_canonical", 0) == 0

    assert main(["stats", "--es", es_url, "--pages-index", pages, "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    show(capsys, f"\ndemo stats: {json.dumps(stats)}")
    assert stats["documents"] == 11 and stats["clusters"] == 7 and stats["duplicates"] == 4
    assert stats["cluster_sizes"] == {"1": 3, "2": 4}

    assert main(["search", "database", "--es", es_url, "--pages-index", pages]) == 0
    printed = capsys.readouterr().out
    show(capsys, f"\nneardup search database:\n{printed}")
    # Every page but the home page, whose running text (a list of links) never says "database".
    assert printed.startswith("10 pages match 'database'; 6 clusters shown")
    assert f"{site}/articles/history.html" in printed  # the canonical copy is shown...
    assert f"{site}/mirror/history.html\n" not in printed  # ...its other copy collapsed away
    assert printed.count("2 copies") == 4

    report = tmp_path / "demo-report.html"
    assert main(["report", "--es", es_url, "--pages-index", pages, "-o", str(report)]) == 0
    capsys.readouterr()
    facts = probe(tmp_path, report)
    assert facts["complete"] and facts["width"] == 700
    assert facts["clusterTables"] == 4 and facts["pairs"] == 4
    _, pixels = screenshot(tmp_path, report, "report-demo-es.png", capsys)
    assert count_colour(pixels, BAR_BLUE) > 5_000
    assert count_colour(pixels, LEFT_MARK) > 100 and count_colour(pixels, RIGHT_MARK) > 100
