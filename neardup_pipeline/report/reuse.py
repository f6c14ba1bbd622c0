"""The text-reuse report: each suspect's reused passages side by side with its sources'.

One self-contained HTML page (the near-duplicate report's style, no scripts): per suspect, each
source with its containment, then every passage as two columns, the suspect's text on the left
and the source's on the right, with the words that differ marked. Every text is escaped.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from neardup_pipeline.report.html import _HEAD
from neardup_pipeline.report.worddiff import Segment, word_diff


@dataclass(frozen=True)
class ReuseLine:
    """One line of `neardup reuse` output."""

    doc_id: str
    sources: tuple[tuple[str, float, tuple[tuple[int, int, int, int], ...]], ...]
    status: str | None = None


def reuse_line(obj: object) -> ReuseLine:
    """A parsed output line -> ReuseLine; ValueError for anything else."""
    if not isinstance(obj, dict) or "id" not in obj or not isinstance(obj.get("sources"), list):
        raise ValueError("not a neardup reuse line ({\"id\", \"sources\": [...]})")
    sources = []
    for source in obj["sources"]:
        passages = tuple((int(a), int(b), int(c), int(d)) for a, b, c, d in source["passages"])
        sources.append((str(source["id"]), float(source["containment"]), passages))
    return ReuseLine(str(obj["id"]), tuple(sources), obj.get("status"))


def render_reuse_report(
    lines: Sequence[ReuseLine], suspects: Mapping[str, str], sources: Mapping[str, str], *,
    origin: str, max_suspects: int = 200, max_words: int = 2000,
) -> str:
    """The report as one HTML string; a passage whose texts are not given says so."""
    with_reuse = [line for line in lines if line.sources]
    shown = with_reuse[:max_suspects]
    parts = [
        _HEAD.replace("<title>neardup report</title>", "<title>neardup reuse report</title>")
        .replace("</style></head>", f"{_STYLE}</style></head>"),
        "<h1>neardup reuse report</h1>",
        f"<p class=meta>Source: <code>{_e(origin)}</code> · generated "
        f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC</p>",
        "<table id=counts class=counts>"
        f"<tr><th>suspects</th><td>{len(lines):,}</td></tr>"
        f"<tr><th>reusing a source</th><td>{len(with_reuse):,}</td></tr>"
        f"<tr><th>(suspect, source) pairs</th><td>"
        f"{sum(len(line.sources) for line in lines):,}</td></tr></table>",
        f"<h2>Reused passages</h2><p class=meta>{len(shown)} of {len(with_reuse)} suspects "
        "shown; each passage as the suspect has it (left) and as the source has it (right); "
        '<mark class="d">words only on the left</mark>, <mark class="i">words only on the '
        "right</mark>.</p>",
        *(_suspect(line, suspects, sources, n, max_words) for n, line in enumerate(shown, 1)),
        "</body></html>\n",
    ]
    return "\n".join(parts)


def _suspect(line: ReuseLine, suspects: Mapping[str, str], sources: Mapping[str, str],
             number: int, max_words: int) -> str:
    out = [f'<section class=suspect id="suspect-{number}"><h3>Suspect <code>'
           f"{_e(line.doc_id)}</code></h3>"]
    text = suspects.get(line.doc_id)
    for source_id, containment, passages in line.sources:
        out.append(f"<h4>Source <code>{_e(source_id)}</code> · containment "
                   f"{containment:.3f} · {len(passages)} passage(s)</h4>")
        source_text = sources.get(source_id)
        for start, end, source_start, source_end in passages:
            where = (f"<p class=meta>suspect characters {start:,}-{end:,} · source characters "
                     f"{source_start:,}-{source_end:,}</p>")
            if text is None or source_text is None:
                missing = "suspect" if text is None else "source"
                out.append(f"{where}<p class=missing>The {missing}'s text is not available "
                           "(give it with --docs / --sources).</p>")
                continue
            diff = word_diff(text[start:end], source_text[source_start:source_end], max_words)
            out.append(f'{where}<div class="sides passage"><div class="side left">'
                       f'{_segments(diff.left, "d")}</div><div class="side right">'
                       f'{_segments(diff.right, "i")}</div></div>')
    out.append("</section>")
    return "".join(out)


def _segments(segments: list[Segment], cls: str) -> str:
    return " ".join(
        _e(s.text) if s.kind == "same" else f'<mark class="{cls}">{_e(s.text)}</mark>'
        for s in segments
    )


def _e(text: str) -> str:
    return html.escape(str(text), quote=True)


_STYLE = """.suspect { border-top: 1px solid #ddd; margin-top: 1em; }
.suspect h3, .suspect h4 { word-break: break-all; } .suspect h4 { font-weight: 500; }
.passage { margin-bottom: .8em; }
"""
