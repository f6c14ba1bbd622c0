"""`neardup` command line, run as a real subprocess."""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from neardup_pipeline import NearDupConfig
from neardup_pipeline.cli.main import COMMANDS, main
from neardup_pipeline.scrapy.crawl import DEMO_SITE
from tests.cli_runner import neardup, write_jsonl
from tests.crawl_harness import DUPLICATES, PAGES, crawl, crawl_settings, serve_demo_site
from tests.documents import ARTICLE

CORPUS = [
    {"id": "orig", "html": f"<html><body><nav>Home</nav><p>{ARTICLE}</p></body></html>"},
    {"id": "copy", "text": "Posted on Monday. " + ARTICLE, "url": "http://b.example/copy"},
    {"id": "other", "text": ARTICLE[::-1]},
    {"id": "empty", "html": "<html><body><img src='x.png'></body></html>"},
    {"id": "copy2", "text": ARTICLE + " Share this article."},
]


def test_dedup_writes_one_line_per_document_in_input_order(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", list(CORPUS))
    out = tmp_path / "out.jsonl"
    result = neardup("dedup", str(source), "--method", "simhash", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # no progress bar when stderr is not a terminal
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["id"] for line in lines] == [doc["id"] for doc in CORPUS]
    by_id = {line["id"]: line for line in lines}
    assert by_id["orig"] == {
        "id": "orig", "duplicate_of": None, "similarity": None, "method": None, "cluster": "orig",
        "canonical": True,
    }
    assert by_id["copy"]["duplicate_of"] == "orig" and by_id["copy"]["cluster"] == "orig"
    assert by_id["copy"]["method"] == "simhash" and 0.9 < by_id["copy"]["similarity"] <= 1
    assert by_id["copy2"]["cluster"] == "orig"
    assert by_id["other"]["duplicate_of"] is None and by_id["other"]["cluster"] == "other"
    assert by_id["empty"]["status"] == "no_text" and by_id["empty"]["cluster"] == "empty"


def test_dedup_reports_bad_lines_and_keeps_going(tmp_path: Path) -> None:
    source = write_jsonl(
        tmp_path / "in.jsonl",
        [CORPUS[0], "{not json", {"html": "<p>no id</p>"}, {"id": "x"}, [1, 2], CORPUS[1]],
    )
    result = neardup("dedup", str(source))
    assert result.returncode == 1
    ids = [json.loads(line)["id"] for line in result.stdout.splitlines()]
    assert ids == ["orig", "copy"]
    for line_number in (2, 3, 4, 5):
        assert f"in.jsonl:{line_number}:" in result.stderr
    assert "neither 'html' nor 'text'" in result.stderr


def test_dedup_reads_stdin() -> None:
    result = neardup("dedup", "-", stdin="\n".join(json.dumps(d) for d in CORPUS[:2]))
    assert result.returncode == 0
    assert json.loads(result.stdout.splitlines()[1])["duplicate_of"] == "orig"


def test_sqlite_backend_persists_between_runs(tmp_path: Path) -> None:
    backend = f"sqlite:{tmp_path / 'fp.sqlite'}"
    first = write_jsonl(tmp_path / "a.jsonl", [CORPUS[0]])
    second = write_jsonl(tmp_path / "b.jsonl", [CORPUS[1]])
    assert neardup("dedup", str(first), "--backend", backend).returncode == 0
    result = neardup("dedup", str(second), "--backend", backend)
    assert json.loads(result.stdout)["duplicate_of"] == "orig"
    refused = neardup("dedup", str(second), "--backend", backend, "--k", "2")
    assert refused.returncode == 2 and "other parameters" in refused.stderr


def test_unknown_backend_is_a_clear_error(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [CORPUS[0]])
    result = neardup("dedup", str(source), "--backend", "redis://x")
    assert result.returncode == 2 and "unknown backend" in result.stderr


def test_compare_explains_the_verdict(tmp_path: Path) -> None:
    a = tmp_path / "a.html"
    a.write_text(f"<html><body><p>{ARTICLE}</p></body></html>", encoding="utf-8")
    b = tmp_path / "b.txt"
    b.write_text("Posted on Monday. " + ARTICLE, encoding="utf-8")
    c = tmp_path / "c.txt"
    c.write_text(ARTICLE[::-1], encoding="utf-8")
    result = neardup("compare", str(a), b.as_uri(), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["duplicate"] is True
    assert report["methods"]["simhash"]["distance"] <= 3
    assert not any("a" in info or "b" in info for info in report["methods"].values())
    signed = json.loads(neardup("compare", str(a), str(b), "--json", "--signatures").stdout)
    assert len(signed["methods"]["simhash"]["a"]) == 16 and signed["methods"]["bag"]["b"]
    text = neardup("compare", str(a), str(c))
    assert text.returncode == 1 and "verdict: distinct" in text.stdout
    relative = subprocess.run(  # relative paths as a user types them
        [sys.executable, "-m", "neardup_pipeline", "compare", "a.html", "b.txt"],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
    )
    assert relative.returncode == 0 and "verdict: near-duplicate" in relative.stdout, relative


@pytest.mark.parametrize("missing", ["/nonexistent/file.html", "http://127.0.0.1:9/x"])
def test_compare_rejects_what_it_cannot_read(missing: str, tmp_path: Path) -> None:
    other = tmp_path / "x.txt"
    other.write_text("some words", encoding="utf-8")
    result = neardup("compare", missing, str(other))
    assert result.returncode == 2 and "error" in result.stderr


def test_dedup_with_minhash_and_exact_jaccard(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", list(CORPUS))
    for extra in ([], ["--exact"]):
        result = neardup("dedup", str(source), "--method", "minhash", *extra)
        assert result.returncode == 0, result.stderr
        by_id = {r["id"]: r for r in map(json.loads, result.stdout.splitlines())}
        assert by_id["copy2"]["duplicate_of"] == "orig" and by_id["copy2"]["method"] == "minhash"
        assert by_id["other"]["duplicate_of"] is None


def test_dedup_containment_mode_flags_a_short_excerpt(tmp_path: Path) -> None:
    excerpt = {"id": "excerpt", "text": ARTICLE[150:800]}
    source = write_jsonl(tmp_path / "in.jsonl", [CORPUS[0], excerpt, CORPUS[2]])
    resemblance = neardup("dedup", str(source), "--method", "minhash", "--exact")
    assert json.loads(resemblance.stdout.splitlines()[1])["duplicate_of"] is None
    result = neardup("dedup", str(source), "--mode", "containment")
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    # A cut mid-word adds a shingle or two the original lacks: containment just under 1.
    assert lines[1]["duplicate_of"] == "orig" and lines[1]["similarity"] >= 0.95
    assert lines[2]["duplicate_of"] is None
    refused = neardup("dedup", str(source), "--mode", "containment", "--method", "simhash")
    assert refused.returncode == 2 and "containment mode needs the minhash" in refused.stderr


def test_compare_reports_every_method_with_shared_shingles(tmp_path: Path) -> None:
    a = tmp_path / "a.txt"
    once = ARTICLE[: len(ARTICLE) // 3]  # ARTICLE is one paragraph three times
    a.write_text(once, encoding="utf-8")
    b = tmp_path / "b.txt"
    words = once.split()
    b.write_text(" ".join(words[: len(words) // 2]), encoding="utf-8")  # cut between words
    report = json.loads(neardup("compare", str(a), str(b), "--json").stdout)
    minhash = report["methods"]["minhash"]
    assert set(report["methods"]) == {"simhash", "minhash", "bag", "rarewords"}
    assert 0 < minhash["jaccard"] < 0.8 and minhash["containment_b_in_a"] >= 0.95
    assert minhash["containment_a_in_b"] < 0.8 and "estimate" in minhash
    assert report["shared_shingles"]["count"] > 0 and report["shared_shingles"]["examples"]


MENU = ("A Brief History of PostgreSQL", "Asynchronous Commit", "Table Basics")  # demo site nav


def test_compare_shows_the_text_each_page_was_reduced_to() -> None:
    a, b = (str(DEMO_SITE / "articles" / name)
            for name in ("transactions.html", "transactions-revised.html"))
    shown = neardup("compare", a, b, "--content", "chromeless", "--text-chars", "120")
    assert shown.returncode == 0, shown.stderr  # the exit code still says near-duplicate
    out = shown.stdout
    assert out.count("title: Transactions | Postgres Field Notes") == 2
    assert out.count("text: chromeless, by ") == 2
    assert out.count("| Transactions Transactions are a fundamental concept") == 2
    assert "more characters: --full-text]" in out and "verdict: near-duplicate" in out
    assert "shared 10-word shingles" in out and "simhash: similarity=" in out
    assert not any(item in out for item in MENU)  # the chrome is not what was compared
    full = neardup("compare", a, b, "--content", "chromeless", "--full-text").stdout
    assert "--full-text]" not in full
    assert full.count("short of rolling it back completely and starting again.") == 2


def test_compare_json_carries_each_page_text_and_how_it_was_read() -> None:
    a, b = (str(DEMO_SITE / "articles" / name) for name in ("transactions.html", "indexes.html"))
    texts = {}
    for content in ("whole", "chromeless", "main"):
        result = neardup("compare", a, b, "--content", content, "--json", "--text-chars", "5")
        assert result.returncode == 1, result.stderr  # distinct pages
        report = json.loads(result.stdout)
        pa, pb = report["a"], report["b"]
        assert pa["title"] == "Transactions | Postgres Field Notes"
        assert pb["title"] == "Indexes: an Introduction | Postgres Field Notes"
        for page in (pa, pb):
            assert page["content"] == content and page["read_as"].startswith(content)
            assert len(page["text"]) > 1000 and page["words"] > 100  # whole, not cut
        assert "short of rolling it back completely and starting again." in pa["text"]
        texts[content] = pa["text"]
        if content == "main":
            # found by the main-content reader, not the chromeless fallback
            assert pa["reader"] not in ("lxml", "bs4", "scan", "text")
            assert pa["read_as"] == f"main, by {pa['reader']}"
    assert all(item in texts["whole"] for item in MENU)
    assert not any(item in texts["chromeless"] + texts["main"] for item in MENU)


def test_eval_reports_scores_kinds_sweep_and_plot(tmp_path: Path) -> None:
    docs = write_jsonl(tmp_path / "docs.jsonl", [CORPUS[0], CORPUS[1], CORPUS[2], CORPUS[4]])
    gold = write_jsonl(tmp_path / "gold.jsonl", [
        {"id": "orig", "group": "A", "kind": "original"},
        {"id": "copy", "group": "A", "kind": "dateline"},
        {"id": "other", "group": "B", "kind": "original"},
        {"id": "copy2", "group": "A", "kind": "tail"},
    ])
    png = tmp_path / "pr.png"
    result = neardup("eval", str(docs), str(gold), "--method", "simhash", "--method", "minhash",
                     "--plot", str(png), "--json")
    assert result.returncode == 0, result.stderr
    reports = {r["method"]: r for r in json.loads(result.stdout)}
    assert reports["simhash"]["precision"] == 1.0 and reports["simhash"]["recall"] == 1.0
    assert reports["simhash"]["recall_by_kind"] == {"dateline": 1.0, "tail": 1.0}
    assert len(reports["minhash"]["sweep"]) == 6
    assert png.read_bytes()[:4] == b"\x89PNG"
    table = neardup("eval", str(docs), str(gold), "--method", "simhash")
    assert "| simhash | 1.0000 | 1.0000 | 1.0000 |" in table.stdout


@deferred_f_from_coro_f
async def test_dedup_and_report_read_the_crawl_feed(tmp_path: Path) -> None:
    """The pipeline's own feed (items with `url`, no `id`), the site crawled twice into it."""
    feed, out = tmp_path / "feed.jsonl", tmp_path / "verdicts.jsonl"
    settings = crawl_settings("memory", NEARDUP_ACTION="tag",
                              FEEDS={str(feed): {"format": "jsonlines", "overwrite": False}})
    with serve_demo_site(tmp_path) as base:
        for _ in range(2):
            await crawl(base, settings)
    items = [json.loads(line) for line in feed.read_text().splitlines()]
    assert len(items) == 2 * PAGES and not any("id" in item for item in items)
    run = neardup("dedup", str(feed), "--method", "simhash", "-o", str(out))
    assert run.returncode == 0, run.stderr
    verdicts = [json.loads(line) for line in out.read_text().splitlines()]
    assert [v["id"] for v in verdicts] == [item["url"] for item in items]
    first, again = verdicts[:PAGES], verdicts[PAGES:]
    assert {v["id"][len(base):]: v["duplicate_of"][len(base):]
            for v in first if v["duplicate_of"]} == DUPLICATES
    assert not any("status" in v for v in first)
    assert "other content" not in run.stderr  # the same pages again: nothing to say
    # the second crawl's lines are the same documents again, not copies of the first's
    for once, repeated in zip(first, again, strict=True):
        assert repeated == {**once, "status": "repeated"}
    report = tmp_path / "report.html"
    shown = neardup("report", str(out), "--docs", str(feed), "-o", str(report))
    assert shown.returncode == 0, shown.stderr
    assert f"{PAGES} documents, {PAGES - len(DUPLICATES)} clusters" in shown.stdout
    page = report.read_text(encoding="utf-8")
    assert "Text not available" not in page and "Transactions are a fundamental" in page


def test_report_says_why_a_feed_gives_no_texts(tmp_path: Path) -> None:
    feed = write_jsonl(tmp_path / "feed.jsonl", [
        {"url": "http://e.org/a", "title": "A"}, {"url": "http://e.org/b", "title": "B"}])
    out = write_jsonl(tmp_path / "v.jsonl", [
        {"id": "http://e.org/a", "duplicate_of": None, "cluster": "http://e.org/a"},
        {"id": "http://e.org/b", "duplicate_of": "http://e.org/a", "similarity": 0.95,
         "method": "simhash", "cluster": "http://e.org/a"}])
    shown = neardup("report", str(out), "--docs", str(feed), "-o", str(tmp_path / "r.html"))
    assert shown.returncode == 0, shown.stderr
    assert "2 lines have neither 'html' nor 'text'" in shown.stderr
    assert "NEARDUP_KEEP_HTML" in shown.stderr


def test_rarewords_and_anchors_say_why_a_small_input_finds_nothing(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", list(CORPUS))
    rarewords = neardup("dedup", str(source), "--method", "rarewords")
    assert rarewords.returncode == 0, rarewords.stderr
    assert "rarewords was warming up: document frequencies hold 4 documents, fewer than " \
        "the 100" in rarewords.stderr
    counted = neardup("dedup", str(source), "--method", "rarewords", "--df-pass")
    assert counted.returncode == 0 and "warming up" not in counted.stderr
    anchors = neardup("dedup", str(source), "--method", "anchors")
    assert anchors.returncode == 0, anchors.stderr
    assert "anchors found no anchor words in 5 documents: too few pages" in anchors.stderr
    fit = neardup("anchors", "fit", str(source), "-o", str(tmp_path / "model.json"))
    assert fit.returncode == 0 and "too few pages to fit a model" in fit.stderr


def test_crawl_help_states_the_methods_a_crawl_runs() -> None:
    from neardup_pipeline.scrapy.crawl import _settings

    shown = " ".join(neardup("crawl", "--help").stdout.split())
    args = argparse.Namespace(backend=None, action=None, methods=None, max_pages=None,
                              output=None, log_level="WARNING")
    ran = NearDupConfig.from_settings(_settings(args, demo=True)).method_names
    assert f"(default: NEARDUP_METHODS, else auto = {','.join(ran)})" in shown


def test_version_names_the_html_walk() -> None:
    from neardup_pipeline import __version__
    from neardup_pipeline.text.extract import walk_in_use

    result = neardup("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"neardup {__version__}", f"HTML walk: {walk_in_use()}"]


def test_each_command_lives_in_its_own_module(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    listed = capsys.readouterr().out
    names = list(COMMANDS)
    assert names == ["dedup", "compare", "crawl", "anchors", "eval", "search", "stats", "report",
                     "reuse", "hygiene", "batch", "es"]
    assert [home.rsplit(".", 1)[1] for home, _ in COMMANDS.values()] == names
    assert "{" + ",".join(names) + "}" in listed
    for _, about in COMMANDS.values():
        assert about in " ".join(listed.split())  # each help line, listed without its module


# What `neardup` runs in a fresh interpreter, then the loaded modules it names.
LOADED_PROBE = (
    "import json, sys\n"
    "from neardup_pipeline.cli.main import main\n"
    "try:\n"
    "    main(sys.argv[2:])\n"
    "except SystemExit:  # --version exits from the parser\n"
    "    pass\n"
    "named = sys.argv[1].split(',')\n"
    "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in named or m in named)))\n"
)


def loaded(argv: list[str], modules: tuple[str, ...]) -> list[str]:
    """Which of `modules` (top-level names, or full module names) `neardup argv` imports."""
    run = subprocess.run([sys.executable, "-c", LOADED_PROBE, ",".join(modules), *argv],
                         capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 0, run.stderr
    return list(json.loads(run.stdout.strip().splitlines()[-1]))


def test_a_command_imports_only_its_own_module(tmp_path: Path) -> None:
    """`neardup --version` and `neardup dedup` start without Elasticsearch, Scrapy, PySpark,
    the hygiene code or bs4: those load with the commands and pages that use them."""
    heavy = ("elasticsearch", "elastic_transport", "scrapy", "twisted", "pyspark", "bs4",
             "tldextract", "neardup_pipeline.hygiene", "neardup_pipeline.cli.hygiene",
             "neardup_pipeline.cli.report")
    sqlite = f"sqlite:{tmp_path / 'index.sqlite'}"
    out = str(tmp_path / "out.jsonl")
    for argv in (["--version"], ["dedup", "/dev/null"], ["dedup", "/dev/null", "-o", out],
                 ["dedup", "/dev/null", "-o", out, "--backend", sqlite]):
        assert loaded(argv, heavy) == [], argv


def test_options_and_config_are_checked_before_numpy_loads(tmp_path: Path) -> None:
    """Parsing, building and validating the configuration need none of the pipeline's code: an
    empty input is done, and a bad option refused, before numpy (the first page loads it)."""
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    out = str(tmp_path / "out.jsonl")
    every = ["--method", "simhash", "--method", "minhash", "--method", "bag",
             "--method", "rarewords"]
    assert loaded(["dedup", str(empty), "-o", out, *every], ("numpy",)) == []
    assert loaded(["dedup", str(empty), "--k", "99"], ("numpy",)) == []  # refused: k < 64
    assert loaded(["dedup", str(empty), "--processes", "1", "--method", "rarewords"],
                  ("numpy",)) == []  # refused: rarewords needs the index
    assert loaded(["dedup", str(empty), "-o", out], ("numpy", "lxml", "tqdm")) == []
    one = write_jsonl(tmp_path / "one.jsonl", [{"id": "a", "text": "one page of a few words"}])
    assert "numpy" in loaded(["dedup", str(one), "-o", out], ("numpy",))  # its first page


@pytest.mark.parametrize("command", [["dedup", "-"], ["compare", "a.html", "b.html"]])
def test_there_is_one_html_parser(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([*command, "--html-parser", "lxml"])
    assert exit_.value.code == 2
    assert "unrecognized arguments: --html-parser" in capsys.readouterr().err


def test_word_rules_on_the_command_line(tmp_path: Path) -> None:
    """The default: every word counts, as it is; --stopwords drops the language's stop words."""
    a = tmp_path / "a.txt"
    a.write_text(ARTICLE, encoding="utf-8")
    counts = {}
    for rules in ((), ("--stopwords", "--stem")):
        result = neardup("compare", str(a), str(a), "--json", *rules)
        assert result.returncode == 0, result.stderr
        counts[rules] = json.loads(result.stdout)["a"]["words"]
    assert counts[()] == len(re.findall(r"\w+", ARTICLE))
    assert counts[("--stopwords", "--stem")] < counts[()]


def _into_closed_pipe(*args: str) -> subprocess.CompletedProcess[str]:
    """`neardup ARGS | head -0` without a race: the pipe's reader is gone before neardup
    starts, so its first write to stdout meets a closed pipe."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([sys.executable, "-m", "neardup_pipeline", *args],
                              stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120,
                              check=False)
    finally:
        os.close(write_end)


SIGPIPE_STATUS = 128 + signal.SIGPIPE  # what a shell shows for a tool SIGPIPE killed


@pytest.mark.parametrize(("command", "status"), [
    (["stats", "--json"], SIGPIPE_STATUS),
    (["stats"], SIGPIPE_STATUS),
    (["dedup", "--method", "simhash"], SIGPIPE_STATUS),
    (["--version"], SIGPIPE_STATUS),
    (["--help"], 0),  # argparse ignores a failed write of its own messages
], ids=lambda value: " ".join(value) if isinstance(value, list) else str(value))
def test_a_closed_stdout_ends_every_command_quietly(
    command: list[str], status: int, tmp_path: Path,
) -> None:
    """As a Unix tool killed by SIGPIPE looks to its shell: status 141, nothing on stderr."""
    source = write_jsonl(tmp_path / "in.jsonl", list(CORPUS))
    verdicts = tmp_path / "verdicts.jsonl"
    assert neardup("dedup", str(source), "-o", str(verdicts)).returncode == 0
    given = {"stats": [str(verdicts)], "dedup": [str(source)]}.get(command[0], [])
    run = _into_closed_pipe(*command, *given)
    assert run.stderr == ""
    assert run.returncode == status


def test_head_reads_the_first_line_and_neardup_stops_quietly(tmp_path: Path) -> None:
    """`neardup dedup big.jsonl | head -1`, with more output than a pipe holds: neardup is
    still writing when head exits."""
    source = write_jsonl(tmp_path / "big.jsonl", [
        {"id": f"https://example.org/page/{n:05d}", "text": f"page {n} " + ARTICLE[: 40 + n % 97]}
        for n in range(1000)
    ])
    dedup = subprocess.Popen([sys.executable, "-m", "neardup_pipeline", "dedup", str(source),
                              "--method", "simhash"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert dedup.stdout is not None and dedup.stderr is not None
    head = subprocess.run(["head", "-1"], stdin=dedup.stdout, capture_output=True, timeout=120,
                          check=False)
    dedup.stdout.close()  # head holds the only reader now
    errors = dedup.stderr.read().decode()
    assert dedup.wait(timeout=120) == SIGPIPE_STATUS, errors
    assert errors == ""
    assert json.loads(head.stdout)["id"] == "https://example.org/page/00000"


README = Path(__file__).resolve().parents[1] / "README.md"
WITHOUT_MATPLOTLIB = (  # `neardup` where matplotlib was never installed: importing it fails
    "import sys; sys.modules['matplotlib'] = None\n"
    "from neardup_pipeline.cli.main import main\n"
    "raise SystemExit(main(sys.argv[1:]))\n"
)


def test_report_and_eval_plot_without_matplotlib_name_the_readme_extra(tmp_path: Path) -> None:
    installs = re.search(r'pip install "\.\[(\w+)\]" +# \+ matplotlib, for `neardup report`',
                         README.read_text(encoding="utf-8"))
    assert installs is not None, "README no longer says which extra installs matplotlib"
    wanted = f"pip install 'neardup-pipeline[{installs.group(1)}]'"
    docs = write_jsonl(tmp_path / "docs.jsonl", [CORPUS[0], CORPUS[1]])
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"id": "orig", "group": "A"},
                                                 {"id": "copy", "group": "A"}])
    verdicts = tmp_path / "verdicts.jsonl"
    assert neardup("dedup", str(docs), "-o", str(verdicts)).returncode == 0
    for command in (["report", str(verdicts), "-o", str(tmp_path / "r.html")],
                    ["eval", str(docs), str(gold), "--method", "simhash",
                     "--plot", str(tmp_path / "pr.png")]):
        run = subprocess.run([sys.executable, "-c", WITHOUT_MATPLOTLIB, *command],
                             capture_output=True, text=True, timeout=120, check=False)
        assert run.returncode == 2, run.stderr
        assert wanted in run.stderr and "Traceback" not in run.stderr, run.stderr
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "pr.png").exists()


def test_anchors_fit_on_an_input_with_a_wordless_page_warns_nothing(tmp_path: Path) -> None:
    """A page without words (punctuation only) among pages whose words are anchor candidates:
    the fit divides by no maximum tf of 0 (numpy would print a RuntimeWarning)."""
    topics = (["postgres", "vacuum", "planner"], ["kernel", "scheduler", "memory"],
              ["python", "numpy", "arrays"])
    rows: list[object] = [{"id": f"{n}-{copy}", "text": " ".join(words * 3) + f" only{n}x{copy}"}
                          for n, words in enumerate(topics) for copy in range(3)]
    rows.append({"id": "dashes", "text": "--- *** ---"})
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    run = neardup("dedup", str(source), "--method", "anchors", "-o", str(tmp_path / "out.jsonl"))
    assert run.returncode == 0, run.stderr
    assert "Warning" not in run.stderr and "divide" not in run.stderr, run.stderr
    assert "fitted on the input" in run.stderr


def test_dedup_says_when_a_repeated_id_brings_other_content(tmp_path: Path) -> None:
    """A repeated id is the same document again and is not checked; when its content differs
    (two pages under one id), the line says so instead of passing in silence."""
    words = " ".join(f"word{i}" for i in range(80))
    corpus = write_jsonl(tmp_path / "in.jsonl", [
        {"id": "a", "text": words}, {"id": "a", "text": words},
        {"id": "a", "text": "something else entirely " * 20},
    ])
    run = neardup("dedup", str(corpus), "-o", "-")  # '-': stdout, as for the input
    assert run.returncode == 0, run.stderr
    assert [json.loads(line).get("status") for line in run.stdout.splitlines()] == [
        None, "repeated", "repeated"]
    said = run.stderr.strip().splitlines()
    assert len(said) == 1 and said[0].startswith(f"neardup: {corpus}:3: id 'a' was given before")
    assert not (tmp_path / "-").exists()


def test_input_errors_read_as_sentences(tmp_path: Path) -> None:
    """json's "Invalid control character at" is not repeated as "at at"; an SQLite file given
    where verdict lines go is named as what it is, with the spelling that reads it."""
    corpus = tmp_path / "in.jsonl"
    corpus.write_text('{"id": "x", "text": "a\x01b"}\n', encoding="utf-8")
    run = neardup("dedup", str(corpus))
    assert "(Invalid control character at column " in run.stderr, run.stderr
    index = tmp_path / "fp.sqlite"
    sqlite3.connect(index).execute("CREATE TABLE t (x)").connection.close()
    stats = neardup("stats", str(index))
    assert stats.returncode == 2
    assert f"{index} is an SQLite index, not verdict lines: give it as sqlite:{index}" in \
        stats.stderr

