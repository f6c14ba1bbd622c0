"""Text reuse (`neardup reuse`) on real legal texts (tests/data/textreuse-legal): a passage
copied verbatim, with words cut or lightly revised, an unrelated text, numbers and repeats, both
index paths, the output line, the report, bad input."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from neardup_pipeline.reuse import ReuseFinder, ReuseSettings
from neardup_pipeline.reuse.index import MemoryPassageIndex
from tests.cli_runner import neardup, write_jsonl

LEGAL = Path(__file__).resolve().parent / "data" / "textreuse-legal"
WEB = Path(__file__).resolve().parent / "data" / "web-pages-multisite"


def _legal(name: str) -> str:
    return (LEGAL / f"{name}.txt").read_text(encoding="utf-8")


NY, HOST = _legal("ny1850-match"), _legal("ca1851-nomatch")
# A sentence of the New York code, from its first content word to its last.
PASSAGE = NY[NY.index("persons having an interest") : NY.index("plaintiffs") + len("plaintiffs")]


def _finder() -> ReuseFinder:
    finder = ReuseFinder(MemoryPassageIndex(), ReuseSettings(language="en"))
    finder.add_source("ny1850", NY)
    return finder


def _suspect(passage: str) -> tuple[str, int]:
    """The passage put after the host's first paragraph; the text and where it starts."""
    cut = HOST.index("\n\n") + 2
    return HOST[:cut] + passage + "\n\n" + HOST[cut:], cut


def test_verbatim_passage_found_with_exact_offsets() -> None:
    text, at = _suspect(PASSAGE)
    (found,) = _finder().find(text)
    assert found.source_id == "ny1850"
    (passage,) = found.passages
    source_at = NY.index(PASSAGE)
    assert (passage.start, passage.end) == (at, at + len(PASSAGE))
    assert (passage.source_start, passage.source_end) == (source_at, source_at + len(PASSAGE))
    assert text[passage.start : passage.end] == NY[passage.source_start : passage.source_end]
    assert 0 < found.containment < 1


def test_passage_with_deletions_found() -> None:
    longer = NY[NY.index("§ 599. An executor") : NY.index("meaning of this section.") + 24]
    cut = longer.replace(" a trustee of an\nexpress trust,", "").replace(" for the\n\nbenefit "
                                                                        "of another,", "")
    cut = cut.replace(" or in whose name,", "")
    assert len(cut) < len(longer) - 60
    text, at = _suspect(cut)
    (found,) = _finder().find(text)
    (passage,) = found.passages  # one passage across the three cuts
    # "599" and "executor or administrator" before the first cut hold no 3-word seed; "of this
    # section." after "meaning" is stop words
    assert passage.end - passage.start >= 0.75 * len(cut)
    assert at <= passage.start and passage.end <= at + len(cut)
    source_at = NY.index(longer)
    assert source_at <= passage.source_start and passage.source_end <= source_at + len(longer)


def test_revised_passage_found() -> None:
    """Words swapped and replaced by synonyms, a clause moved: no run of 7 content words
    is left, yet the words between the revised ones count."""
    original = NY[NY.index("Of the parties to the action") : NY.index("in\nthe complaint") + 16]
    revised = ("Those of the parties to the action who are joined in interest must be united as "
               "plaintiffs or defendants; but if the agreement of any one who should have been "
               "joined as plaintiff cannot be got, he may be made a defendant, the reason "
               "thereof being set out in the complaint.")
    text, at = _suspect(revised)
    (found,) = _finder().find(text)
    (passage,) = found.passages
    assert at <= passage.start and passage.end <= at + len(revised)
    assert passage.end - passage.start >= 0.9 * len(revised)
    source_at = NY.index(original)
    assert source_at <= passage.source_start < passage.source_end <= source_at + len(original)
    assert NY[passage.source_end - len("complaint") : passage.source_end] == "complaint"


def test_numbers_and_repeats() -> None:
    """A calendar both texts print pairs nothing; a passage quoted many times in a suspect is
    found at each copy (in time linear in the copies), facing its one place in the source."""
    calendar = " ".join(str(day) for day in range(1, 32))
    finder = ReuseFinder(MemoryPassageIndex(), ReuseSettings(language="en"))
    finder.add_source("ny1850", NY + "\n\n" + calendar)
    assert finder.find(HOST + "\n\n" + calendar) == []
    paragraph = HOST[: HOST.index("\n\n")]
    (found,) = finder.find("".join(f"{paragraph}\n\n{PASSAGE}\n\n" for _ in range(300)))
    assert len(found.passages) == 300
    assert {(p.source_start, p.source_end) for p in found.passages} == {
        (NY.index(PASSAGE), NY.index(PASSAGE) + len(PASSAGE))}


def test_unrelated_text_gives_nothing() -> None:
    assert _finder().find(HOST) == []
    assert _finder().find("") == []


def test_the_labelled_pair_is_found() -> None:
    """The California 1851 section borrowed from the New York code: most of it is reuse."""
    (found,) = _finder().find(_legal("ca1851-match"))
    assert found.source_id == "ny1850" and found.containment > 0.6


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    web = (WEB / "creativecommons.at.faircoin.html").read_text(encoding="utf-8")
    sources = write_jsonl(tmp_path / "sources.jsonl", [
        {"id": "ny1850", "text": NY}, {"id": "faircoin", "html": web},
        {"id": "ny1850", "text": "a second text under a known id"},
    ])
    text, _ = _suspect(PASSAGE)
    suspects = write_jsonl(tmp_path / "suspects.jsonl", [
        {"id": "copy", "text": text}, {"id": "unrelated", "text": HOST},
        {"id": "empty", "text": ""}, {"text": "no id"}, "not json",
    ])
    with suspects.open("ab") as out:  # a Latin-1 byte in a line that is otherwise fine
        out.write(b'{"id": "latin1", "text": "caf\xe9 ' + json.dumps(PASSAGE)[1:-1].encode()
                  + b'"}\n')
    return sources, suspects


@pytest.mark.integration  # subprocesses
def test_cli_output_and_the_index_path_agree(tmp_path: Path, files: tuple[Path, Path]) -> None:
    sources, suspects = files
    direct, indexed, db = tmp_path / "direct.jsonl", tmp_path / "indexed.jsonl", tmp_path / "s.db"
    run = neardup("reuse", str(sources), str(suspects), "-o", str(direct))
    assert run.returncode == 1  # two unreadable lines, named on stderr with their numbers
    assert "suspects.jsonl:4: missing 'id'" in run.stderr
    assert "suspects.jsonl:5: not JSON" in run.stderr
    assert "'ny1850' is already indexed" in run.stderr
    built = neardup("reuse", "index", str(sources), "-o", str(db))
    assert "2 sources indexed" in built.stderr
    assert neardup("reuse", "--index", str(db), str(suspects), "-o", str(indexed)).returncode == 1
    assert indexed.read_bytes() == direct.read_bytes()

    lines = [json.loads(line) for line in direct.read_text(encoding="utf-8").splitlines()]
    assert [line["id"] for line in lines] == ["copy", "unrelated", "empty", "latin1"]
    copy, unrelated, empty, latin1 = lines
    assert set(copy) == {"id", "sources"}
    (source,) = copy["sources"]
    assert set(source) == {"id", "containment", "passages"} and source["id"] == "ny1850"
    (passage,) = source["passages"]
    assert all(isinstance(n, int) for n in passage) and len(passage) == 4
    assert unrelated == {"id": "unrelated", "sources": []}
    assert empty == {"id": "empty", "sources": [], "status": "no_text"}
    assert latin1["status"] == "not_utf8" and latin1["sources"][0]["id"] == "ny1850"

    report = tmp_path / "report.html"
    for given in (sources, db):
        shown = neardup("report", str(direct), "--docs", str(suspects), "--sources", str(given),
                        "-o", str(report))
        assert shown.returncode == 0, shown.stderr
        page = report.read_text(encoding="utf-8")
        assert page.count('<div class="sides passage">') == 2  # copy and latin1
        assert "persons having an interest in the subject" in page
        assert "<code>ny1850</code>" in page


@pytest.mark.integration
def test_bad_index_is_a_clear_error(tmp_path: Path, files: tuple[Path, Path]) -> None:
    _, suspects = files
    missing = neardup("reuse", "--index", str(tmp_path / "none.db"), str(suspects))
    assert missing.returncode == 2 and "no reuse index at" in missing.stderr
    other = tmp_path / "other.db"
    other.write_bytes(b"not a database at all" * 100)
    wrong = neardup("reuse", "--index", str(other), str(suspects))
    assert wrong.returncode == 2 and "is not a neardup reuse index" in wrong.stderr
    earlier = tmp_path / "earlier.db"  # sources without their word hashes
    with sqlite3.connect(earlier) as db:
        db.execute("CREATE TABLE reuse_sources (num INTEGER PRIMARY KEY, id TEXT, language "
                   "TEXT, shingles BLOB, spans BLOB, text BLOB)")
    old = neardup("reuse", "--index", str(earlier), str(suspects))
    assert old.returncode == 2 and "of an earlier format" in old.stderr
    assert "Traceback" not in missing.stderr + wrong.stderr + old.stderr


@pytest.mark.integration  # subprocesses
def test_control_characters_are_text_and_a_binary_body_is_tagged(tmp_path: Path) -> None:
    """A short text with a few control characters (a form feed's neighbours, a stray escape)
    is read as text; a body that is not text gets a status and a warning, never a silent
    empty line."""
    noisy = "\x01\x02" + PASSAGE[:60] + "\x1b\x07" + PASSAGE[60:] + "\x03"
    assert noisy.count("\x1b") == 1 and len(noisy) < 400  # over 1% control characters
    sources = write_jsonl(tmp_path / "sources.jsonl", [{"id": "ny1850", "text": NY}])
    suspects = write_jsonl(tmp_path / "suspects.jsonl", [
        {"id": "noisy", "text": noisy},
        {"id": "png", "html": "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"},
    ])
    out = tmp_path / "out.jsonl"
    run = neardup("reuse", str(sources), str(suspects), "-o", str(out))
    noisy_line, png_line = (json.loads(line) for line in out.read_text().splitlines())
    (source,) = noisy_line["sources"]
    assert source["id"] == "ny1850" and "status" not in noisy_line
    assert png_line == {"id": "png", "sources": [], "status": "not_text"}
    assert "'png' is not text (PNG image)" in run.stderr
    assert run.returncode == 1
