"""Text reuse (`neardup reuse`) on real legal texts (tests/data/textreuse-legal): a passage
copied verbatim or with words cut, an unrelated text, both index paths, the output line, the
report, bad input."""

from __future__ import annotations

import json
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
    covered = sum(p.end - p.start for p in found.passages)
    assert covered >= 0.9 * len(cut)
    assert all(at - 10 <= p.start and p.end <= at + len(cut) for p in found.passages)


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
    assert "Traceback" not in missing.stderr + wrong.stderr
