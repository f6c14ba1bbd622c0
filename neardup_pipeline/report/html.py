"""`neardup report`: one self-contained HTML page an operator can read and pass around.

Counts, a cluster-size histogram (a PNG made with matplotlib, inlined as a data URI), the
largest clusters, and every near-duplicate pair side by side (up to `max_pairs`) with the words
that differ highlighted. No external CSS, scripts or fonts; every page-derived string is escaped
(pages are hostile input) and only http(s) URLs become links.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from neardup_pipeline.errors import ReportError
from neardup_pipeline.extras import install_command
from neardup_pipeline.report.stats import PageRecord, Summary, group_clusters, summarize
from neardup_pipeline.report.worddiff import Segment, word_diff
from neardup_pipeline.verdict.canonical import Candidate, CanonicalPolicy, choose


@dataclass(frozen=True)
class Pair:
    """A near-duplicate shown side by side: the cluster's canonical copy and one other copy."""

    cluster: str
    canonical: PageRecord
    copy: PageRecord


def canonical_of(
    members: Sequence[PageRecord], texts: Mapping[str, str], policy: CanonicalPolicy
) -> PageRecord:
    """The copy a source marks canonical; else the rule's choice (first seen: the original)."""
    for record in members:
        if record.is_canonical:
            return record
    chosen = choose(
        (Candidate(r.doc_id, r.url or "", len(texts.get(r.doc_id, "")), None, r.order)
         for r in members),
        policy,
    )
    return next(r for r in members if r.doc_id == chosen.doc_id)


def pairs_of(
    records: Sequence[PageRecord], texts: Mapping[str, str], policy: CanonicalPolicy,
    max_pairs: int,
) -> tuple[list[Pair], int]:
    """(pairs shown, pairs in all): every copy against its canonical, largest clusters first."""
    clusters = group_clusters(records)
    pairs: list[Pair] = []
    total = 0
    for cluster, members in sorted(clusters.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        if len(members) < 2:
            continue
        canonical = canonical_of(members, texts, policy)
        for member in members:
            if member.doc_id != canonical.doc_id:
                total += 1
                if len(pairs) < max_pairs:
                    pairs.append(Pair(cluster, canonical, member))
    return pairs, total


def histogram_png(sizes: Mapping[int, int]) -> bytes:
    """Bar chart of clusters by size, as PNG bytes (matplotlib, Agg: no display needed)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
    except ImportError as exc:
        raise ReportError(
            f"neardup report draws its histogram with matplotlib: {install_command('plots')}"
        ) from exc
    fig = Figure(figsize=(7, 3.2), dpi=100)
    ax = fig.add_subplot()
    xs = sorted(sizes) or [1]
    ax.bar([str(x) for x in xs], [sizes.get(x, 0) for x in xs], color="#3b6ea5")
    ax.set_xlabel("cluster size (pages)")
    ax.set_ylabel("clusters")
    ax.set_title("Cluster sizes")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # clusters come whole
    if sizes and max(sizes.values()) > 50 * max(min(sizes.values()), 1):
        ax.set_yscale("log")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def render_report(
    records: Sequence[PageRecord],
    texts: Mapping[str, str],
    *,
    source: str,
    policy: CanonicalPolicy = "first",
    largest: int = 10,
    max_pairs: int = 200,
    max_words: int = 5000,
) -> str:
    """The whole report as one HTML string. `texts`: doc id -> text (pairs without text say so)."""
    summary = summarize(records, largest=largest)
    png = base64.b64encode(histogram_png(summary.size_histogram)).decode("ascii")
    clusters = group_clusters(records)
    pairs, total_pairs = pairs_of(records, texts, policy, max_pairs)
    pair_ids = {(p.cluster, p.copy.doc_id): f"pair-{n}" for n, p in enumerate(pairs, start=1)}
    marked = any(r.is_canonical is not None for r in records)
    rule = "as the index marks it" if marked else policy
    parts = [
        _HEAD,
        "<h1>neardup report</h1>",
        f"<p class=meta>Source: <code>{_e(source)}</code> · generated "
        f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC · canonical copy: {_e(rule)}</p>",
        _counts(summary),
        '<h2>Cluster sizes</h2><img id=histogram alt="Histogram of cluster sizes" '
        f'src="data:image/png;base64,{png}">',
        f"<h2>Largest clusters</h2>{_clusters(summary, clusters, texts, policy, pair_ids)}",
        f"<h2>Pairs side by side</h2><p class=meta>{len(pairs)} of {total_pairs} pairs shown "
        "(each copy against its cluster's canonical copy; "
        '<mark class="d">words only on the left</mark>, <mark class="i">words only on the '
        "right</mark>).</p>",
        *(_pair(p, texts, pair_ids[(p.cluster, p.copy.doc_id)], max_words) for p in pairs),
        "</body></html>\n",
    ]
    return "\n".join(parts)


def _counts(s: Summary) -> str:
    rows = [("documents", s.documents), ("checked", s.checked), ("clusters", s.clusters),
            ("duplicates", s.duplicates)]
    rows += [(f"duplicates by {m}", n) for m, n in s.by_method.items()]
    rows += [(f"not checked ({why})", n) for why, n in s.not_checked.items()]
    body = "".join(f"<tr><th>{_e(k)}</th><td>{v:,}</td></tr>" for k, v in rows)
    return f"<table id=counts class=counts>{body}</table>"


def _clusters(
    s: Summary, clusters: Mapping[str, list[PageRecord]], texts: Mapping[str, str],
    policy: CanonicalPolicy, pair_ids: Mapping[tuple[str, str], str],
) -> str:
    out = []
    for cluster_id, size in s.largest:
        if size < 2:
            continue  # a page alone is no near-duplicate cluster
        members = clusters.get(cluster_id, [])
        canonical = canonical_of(members, texts, policy) if members else None
        rows = []
        for r in sorted(members, key=lambda m: canonical is None or m.doc_id != canonical.doc_id):
            is_canon = canonical is not None and r.doc_id == canonical.doc_id
            anchor = pair_ids.get((cluster_id, r.doc_id))
            view = f'<a href="#{anchor}">side by side</a>' if anchor else ""
            rows.append(
                f"<tr{' class=canon' if is_canon else ''}><td>{'canonical' if is_canon else ''}"
                f"</td><td>{_link(r)}</td><td>{_e(r.title or '')}</td>"
                f"<td>{_e(r.method or '')}</td><td>{_num(r.similarity)}</td><td>{view}</td></tr>"
            )
        out.append(
            f"<table class=cluster><caption>Cluster <code>{_e(cluster_id)}</code>: {size} "
            "pages</caption><tr><th></th><th>page</th><th>title</th><th>method</th>"
            f"<th>similarity</th><th></th></tr>{''.join(rows)}</table>"
        )
    return "\n".join(out) or "<p>No near-duplicate clusters.</p>"


def _pair(p: Pair, texts: Mapping[str, str], anchor: str, max_words: int) -> str:
    head = (f"<h3>{_link(p.canonical)} ↔ {_link(p.copy)}</h3><p class=meta>"
            f"{_e(p.copy.method or 'near-duplicate')}, similarity {_num(p.copy.similarity)}")
    left, right = texts.get(p.canonical.doc_id), texts.get(p.copy.doc_id)
    if left is None or right is None:
        return (f'<section class=pair id="{anchor}">{head}</p><p class=missing>Text not '
                "available (give the input corpus with --docs).</p></section>")
    diff = word_diff(left, right, max_words=max_words)
    note = f" · words {100 * diff.ratio:.1f}% alike" + (
        f" · first {max_words:,} words compared" if diff.truncated else "")
    return (
        f'<section class=pair id="{anchor}">{head}{note}</p><div class=sides>'
        f'<div class="side left">{_segments(diff.left, "d")}</div>'
        f'<div class="side right">{_segments(diff.right, "i")}</div></div></section>'
    )


def _segments(segments: list[Segment], cls: str) -> str:
    return " ".join(
        _e(s.text) if s.kind == "same" else f'<mark class="{cls}">{_e(s.text)}</mark>'
        for s in segments
    )


def _link(r: PageRecord) -> str:
    label = _e(r.url or r.doc_id)
    if r.url and r.url.lower().startswith(("http://", "https://")):
        return f'<a href="{_e(r.url)}" rel="noreferrer nofollow">{label}</a>'
    return f"<code>{label}</code>"


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def _e(text: str) -> str:
    return html.escape(str(text), quote=True)


_HEAD = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; \
style-src 'unsafe-inline'">
<title>neardup report</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 1200px;
       padding: 0 1em; color: #222; }
h1 { margin-bottom: .2em; } h2 { margin-top: 1.6em; border-bottom: 1px solid #ddd; }
.meta { color: #666; } code { font-size: 90%; }
table { border-collapse: collapse; margin: .6em 0 1.2em; }
th, td { padding: .2em .6em; text-align: left; border-bottom: 1px solid #eee;
         vertical-align: top; }
table.counts td { text-align: right; font-variant-numeric: tabular-nums; }
caption { text-align: left; font-weight: 600; padding: .3em 0; }
tr.canon td { background: #eef5ff; font-weight: 600; }
#histogram { max-width: 100%; border: 1px solid #eee; }
.pair { border-top: 1px solid #ddd; margin-top: 1em; }
.pair h3 { font-size: 100%; word-break: break-all; }
.sides { display: grid; grid-template-columns: 1fr 1fr; gap: 1em; }
.side { white-space: pre-wrap; word-wrap: break-word; background: #fafafa; padding: .6em;
        border: 1px solid #eee; max-height: 30em; overflow: auto; }
mark.d { background: #ffd0d0; } mark.i { background: #c8f2c8; }
.missing { color: #a33; }
</style></head><body>"""
