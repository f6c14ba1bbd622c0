"""Clusters that do not depend on the order pages arrive in (issue 43): `neardup dedup` on real
copies of web articles that declare their canonical URL, in several orders.

Usage: python benchmarks/canonical_orders.py [--seed S] [--orders N] [--backends memory sqlite]
                                             [--es-url URL] [--limit N] [--keep DIR]

What it makes, from the labelled pages of ../shared/data/web-pages-multisite (`corpora.
multisite_pages`), every choice drawn from --seed:

1. Articles: the pages whose main element `cross_site_copies.main_element` finds and whose URL
   (from the labels) is http(s). An article A is its archive's page at its own URL, with every
   `<link rel="canonical">` and `<meta property|name="og:url">` removed and both written again,
   naming A, at the start of its <head> (the rest of its bytes as decoded).
2. Same-site variants of A, each declaring A canonical by both tags, as real CMSs do:
   - print: `/print` before A's path, or `print=1` added to its query (one of the two, seeded);
     a bare page: A's <title>, A's first <h1> when it lies outside the main element, then A's
     main element, nothing else;
   - AMP: `/amp` before A's path; A's page with `<html amp>` and the AMP runtime <script>, its
     scripts, styles, noscripts, iframes, SVGs and objects removed, and its forms and asides
     outside the main element (header, menus, footer and the main element stay);
   - tracking: A's URL with `utm_source`, `utm_medium` and `utm_campaign` (seeded values) in
     its query: A's bytes, unchanged.
3. Cross-site copies: `cross_site_copies.make_set`'s copies (--seed, 2 host pages per article,
   4 articles per host page: A's main element, headline and title in another real site's page,
   its chrome kept; that module's docstring says exactly how). Each, by a seeded coin, declares
   A canonical (a syndication partner) or its own URL (a scraper). Half of them, by another
   coin, carry a light edit: in one paragraph (<p>) that comes from A and holds at least two
   sentences (and no control character lxml cannot write), one sentence is dropped or two
   neighbouring sentences swap places (even odds); a copy without such a paragraph stays as it
   is (counted as unedited).
4. The other pages of the corpus (no main element, or no http(s) URL): as the archive has them,
   each its own group (the precision side).

Gold: A, its three variants and its copies are one group; every other page is a group of its
own. A document's id and url are its URL. With --limit N: N articles (a seeded sample), their
variants and copies, and the pages hosting those copies (as articles without variants).

Each run is the real command, `neardup dedup IN.jsonl -o OUT.jsonl --backend B` (default
methods), on the same documents in --orders seeded random orders and in the "worst" order
(every copy and variant, shuffled, before every article and other page, shuffled), per backend
of --backends (memory; sqlite: a fresh file per run; --es-url adds Elasticsearch, a fresh index
per run, deleted after it). Then once more in order 1 with both tags removed from every
document: the control, the same set without the markup. A run's partition groups its output
lines by `cluster` (a `no_text` line is a cluster of its own). Printed per backend, one row per
run: pairwise precision, recall and F1 against gold; same-cluster pairs; pairs differing from
order 1 (the symmetric difference of the same-cluster pairs, the control's against the marked-up
order 1); where the lines carry a boolean `canonical`, the share of gold groups of an article
whose one line saying `canonical: true` is the article itself (n/a without the field); the
run's wall time, interpreter start included.

--keep DIR keeps the inputs (`ORDER.jsonl`: {"id", "url", "html"}), `GOLD.jsonl` ({"id",
"group", "kind"}) and the outputs (`BACKEND-ORDER.out.jsonl`).
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import random
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import lxml.html
from lxml import etree

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.corpora import LabelledPage, multisite_pages
from benchmarks.cross_site_copies import DEFAULT_SEED, SetDoc, main_element, make_set, parse
from benchmarks.dedup_throughput import drop_index
from benchmarks.provenance import measured_at
from neardup_pipeline.text.canonical import declared_canonical, same_url
from neardup_pipeline.text.decode import decode_html

DEFAULT_ORDERS = 5
HOSTS_PER_ARTICLE = 2  # make_set's defaults: the cross_site.py set
ARTICLES_PER_HOST = 4
SYNDICATED_SHARE = 0.5  # of the cross-site copies, those declaring the article canonical
EDITED_SHARE = 0.5  # of the cross-site copies, those with a sentence dropped or moved
VARIANT_KINDS = ("print", "amp", "tracking")
COPY_KINDS = ("syndicated", "scraped")
_CAMPAIGNS = ("spring", "weekly", "digest", "launch", "promo")
_DECLARATION_TAG = re.compile(r"<(?:link|meta)\b[^>]*>", re.IGNORECASE)
_ATTRIBUTE = re.compile(
    r"""([a-zA-Z_:][-a-zA-Z0-9_:.]*)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""")
_OPENING = [re.compile(rf"<{tag}\b[^>]*>", re.IGNORECASE) for tag in ("head", "html")]
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# Characters lxml cannot write into a text node (a real page holds U+0007 as "&#7;").
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_AMP_DROPPED = ("script", "style", "noscript", "iframe", "svg", "object", "embed", "template")
_AMP_CHROME_DROPPED = ("form", "aside")

Pair = tuple[str, str]  # two document ids, sorted


@dataclass(frozen=True)
class Doc:
    """One document of the set: its URL (also its id), its markup and its gold group."""

    url: str
    html: str
    group: str  # the article's URL, or the page's own
    kind: str  # "article", VARIANT_KINDS, COPY_KINDS or "page"


@dataclass(frozen=True)
class Article:
    """A page with a main element: what its variants and copies are made of."""

    page: LabelledPage
    root: lxml.html.HtmlElement
    main_path: str
    headline_outside: str  # its first <h1>'s text when outside the main element, else ""
    title: str

    @property
    def main(self) -> etree._Element:
        (found,) = self.root.xpath(self.main_path)
        return found  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Run:
    label: str
    precision: float
    recall: float
    f1: float
    pairs: int
    differing: int | None  # from order 1's pairs (None: order 1 itself)
    canonical_share: float | None  # None: the lines carry no `canonical`
    seconds: float


# --- the set ------------------------------------------------------------------------------


def _declares(tag: str) -> bool:
    """Whether a <link> or <meta> tag is a canonical declaration (rel=canonical, og:url)."""
    attrs = {m.group(1).lower(): m.group(2) or m.group(3) or m.group(4) or ""
             for m in _ATTRIBUTE.finditer(tag)}
    if tag[1:5].lower() == "link":
        return "canonical" in attrs.get("rel", "").lower().split()
    return "og:url" in (attrs.get("property", "").lower(), attrs.get("name", "").lower())


def strip_declarations(html: str) -> str:
    """`html` without its canonical links and og:url metas, every other byte kept."""
    return _DECLARATION_TAG.sub(lambda m: "" if _declares(m.group(0)) else m.group(0), html)


def declare(html: str, canonical: str) -> str:
    """`html` declaring `canonical` by rel=canonical and og:url, first thing in its <head>
    (its own declarations removed: a page declares one URL)."""
    html = strip_declarations(html)
    tags = (f'<link rel="canonical" href="{escape(canonical)}">'
            f'<meta property="og:url" content="{escape(canonical)}">')
    for opening in _OPENING:
        found = opening.search(html)
        if found is not None:
            return html[:found.end()] + tags + html[found.end():]
    return tags + html


def _serialize(root: lxml.html.HtmlElement) -> str:
    html: str = lxml.html.tostring(root, encoding="unicode", method="html",
                                   doctype="<!DOCTYPE html>")
    return html


def _text(el: etree._Element) -> str:
    return " ".join("".join(str(part) for part in el.itertext()).split())


def _article(page: LabelledPage) -> Article | None:
    if not page.url.startswith(("http://", "https://")):
        return None  # its variants need a site
    root = parse(page.html)
    main = main_element(root, page)
    if main is None:
        return None
    h1s = [h for h in root.iter("h1") if _text(h)]
    outside = h1s and not any(a is main for a in h1s[0].iterancestors())
    title_el = root.find(".//title")
    title = _text(title_el) if title_el is not None else ""
    headline = _text(h1s[0]) if h1s else ""
    return Article(page, root, root.getroottree().getpath(main),
                   headline if outside else "", title or headline)


def _with_path_prefix(url: str, prefix: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, prefix + (parts.path or "/"), parts.query, ""))


def _with_query(url: str, query: str) -> str:
    parts = urlsplit(url)
    joined = f"{parts.query}&{query}" if parts.query else query
    return urlunsplit((parts.scheme, parts.netloc, parts.path, joined, ""))


def print_variant(article: Article) -> str:
    """A bare page: the article's title, headline and main element (module docstring)."""
    main = lxml.html.tostring(article.main, encoding="unicode", method="html", with_tail=False)
    headline = f"<h1>{escape(article.headline_outside)}</h1>" if article.headline_outside else ""
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{escape(article.title)}'
            f"</title></head><body>{headline}{main}</body></html>")


def amp_variant(article: Article) -> str:
    """The article's page with AMP's simplified chrome (module docstring)."""
    root = copy.deepcopy(article.root)
    (main,) = root.xpath(article.main_path)
    for el in list(root.iter(*_AMP_DROPPED)):
        el.drop_tree()
    keep = {main, *main.iterancestors(), *main.iterdescendants()}
    for el in [el for el in root.iter(*_AMP_CHROME_DROPPED) if el not in keep]:
        if el.getparent() is not None:  # not inside a form or aside dropped already
            el.drop_tree()
    root.set("amp", "")
    head = root.find("head")
    if head is None:
        head = lxml.html.Element("head")
        root.insert(0, head)
    for meta in head.xpath("meta[@charset or translate(@http-equiv, 'CONTENT-TYPE',"
                           " 'content-type')='content-type']"):
        meta.drop_tree()
    head.insert(0, lxml.html.Element("meta", charset="utf-8"))
    head.insert(1, lxml.html.Element("script", {"async": "",
                                                "src": "https://cdn.ampproject.org/v0.js"}))
    return _serialize(root)


def _sentences(el: etree._Element) -> list[str]:
    return [s for s in _SENTENCE_END.split(_text(el)) if s]


def light_edit(html: bytes, article: Article, rng: random.Random) -> str | None:
    """A copy with one of the article's paragraphs edited (a sentence dropped or two swapped),
    or None when no paragraph of the article's in it has two sentences."""
    theirs = {_text(p) for p in article.main.iter("p")}
    root = parse(html)
    editable = [p for p in root.iter("p") if _text(p) in theirs and len(_sentences(p)) >= 2
                and not _NOT_XML.search(_text(p))]
    if not editable:
        return None
    paragraph = rng.choice(editable)
    sentences = _sentences(paragraph)
    at = rng.randrange(len(sentences) - 1)
    if rng.random() < 0.5:
        del sentences[at]
    else:
        sentences[at], sentences[at + 1] = sentences[at + 1], sentences[at]
    tail = paragraph.tail
    paragraph.clear()  # its links and emphasis go: the words stay, as plain text
    paragraph.text, paragraph.tail = " ".join(sentences), tail
    return _serialize(root)


@dataclass(frozen=True)
class CanonicalSet:
    """The documents, in no order that means anything (the corpus's, then the copies), and
    what making them counted."""

    docs: tuple[Doc, ...]
    articles: int
    edited: int
    unedited: int  # copies drawn for an edit without a paragraph to edit


def _variants(article: Article, own: str, rng: random.Random) -> list[Doc]:
    url = article.page.url
    printed = (_with_path_prefix(url, "/print") if rng.random() < 0.5
               else _with_query(url, "print=1"))
    tracking = _with_query(url, f"utm_source=newsletter&utm_medium=email"
                                f"&utm_campaign={rng.choice(_CAMPAIGNS)}")
    return [Doc(url, own, url, "article"),
            Doc(printed, declare(print_variant(article), url), url, "print"),
            Doc(_with_path_prefix(url, "/amp"), declare(amp_variant(article), url), url, "amp"),
            Doc(tracking, own, url, "tracking")]


def make_canonical_set(seed: int, limit: int | None) -> CanonicalSet:
    """The documents of the module docstring, drawn from `seed`."""
    rng = random.Random(seed)
    pages = multisite_pages("all")
    articles = {p.doc_id: a for p in pages if (a := _article(p)) is not None}
    copies = [d for d in make_set("all", seed, HOSTS_PER_ARTICLE, ARTICLES_PER_HOST).docs
              if d.kind == "copy" and d.group in articles]
    chosen = set(articles)
    if limit is not None:
        chosen = set(rng.sample(sorted(articles), min(limit, len(articles))))
        copies = [d for d in copies if d.group in chosen]
    hosts = {d.host for d in copies}
    docs: list[Doc] = []
    for page in pages:
        own = decode_html(page.html)[0]
        if page.doc_id in chosen:
            docs += _variants(articles[page.doc_id], declare(own, page.url), rng)
        elif limit is None or page.doc_id in hosts:
            kept = declare(own, page.url) if page.doc_id in articles else own
            docs.append(Doc(page.url, kept, page.url, "page"))
    edits: list[bool | None] = []
    for made in copies:
        doc, edit = _cross_site(made, articles[made.group], rng)
        docs.append(doc)
        edits.append(edit)
    edited, unedited = edits.count(True), edits.count(False)
    return CanonicalSet(tuple(docs), len(chosen), edited, unedited)


def _cross_site(made: SetDoc, article: Article, rng: random.Random) -> tuple[Doc, bool | None]:
    """make_set's copy, declaring the article (syndicated) or itself (scraped), and whether it
    was edited (None: not drawn for an edit; False: drawn, but no paragraph to edit)."""
    syndicated = rng.random() < SYNDICATED_SHARE
    html, edit = decode_html(made.html)[0], None
    if rng.random() < EDITED_SHARE:
        edited = light_edit(made.html, article, rng)
        html, edit = (html, False) if edited is None else (edited, True)
    url = article.page.url
    declared = declare(html, url if syndicated else made.url)
    return Doc(made.url, declared, url, COPY_KINDS[0] if syndicated else COPY_KINDS[1]), edit


def check_declarations(docs: Sequence[Doc], stripped: bool) -> int:
    """Documents whose declaration neardup does not read as made: a canonical that is not the
    one written (or, `stripped`, any canonical at all). Pages kept as the archive has them are
    not checked (what they declare is theirs)."""
    wrong = 0
    for doc in docs:
        found = declared_canonical(doc.html, doc.url)
        if stripped:
            wrong += found is not None
        elif doc.kind != "page":
            wanted = doc.url if doc.kind == "scraped" else doc.group
            wrong += not same_url(found, wanted)
    return wrong


def describe(made: CanonicalSet) -> str:
    kinds = defaultdict(int, {kind: 0 for kind in ("article", *VARIANT_KINDS, *COPY_KINDS)})
    for doc in made.docs:
        kinds[doc.kind] += 1
    counts = ", ".join(f"{n:,} {kind}" for kind, n in kinds.items())
    gold = len(pairs_of(gold_groups(made.docs).values()))
    megabytes = sum(len(doc.html.encode()) for doc in made.docs) / 1e6
    return (f"{len(made.docs):,} documents ({megabytes:.0f} MB): {counts}; {made.edited} copies "
            f"edited ({made.unedited} more drawn had no paragraph to edit); {gold:,} gold pairs")


# --- orders, runs, scores -----------------------------------------------------------------


def orders(docs: Sequence[Doc], seed: int, count: int) -> dict[str, list[Doc]]:
    """`count` seeded random orders ("1", "2", ...) and "worst": every copy and variant before
    every article and other page, each part shuffled."""
    made: dict[str, list[Doc]] = {}
    for number in range(1, count + 1):
        shuffled = list(docs)
        random.Random(f"{seed}/order/{number}").shuffle(shuffled)
        made[str(number)] = shuffled
    rng = random.Random(f"{seed}/order/worst")
    first = [doc for doc in docs if doc.kind not in ("article", "page")]
    last = [doc for doc in docs if doc.kind in ("article", "page")]
    rng.shuffle(first)
    rng.shuffle(last)
    made["worst"] = first + last
    return made


def write_input(path: Path, docs: Iterable[Doc]) -> None:
    with path.open("w", encoding="utf-8") as out:
        for doc in docs:
            out.write(json.dumps({"id": doc.url, "url": doc.url, "html": doc.html}) + "\n")


def write_gold(path: Path, docs: Iterable[Doc]) -> None:
    with path.open("w", encoding="utf-8") as out:
        for doc in docs:
            out.write(json.dumps({"id": doc.url, "group": doc.group, "kind": doc.kind}) + "\n")


def neardup_command() -> list[str]:
    """The installed `neardup` beside this interpreter, else the package's module."""
    script = Path(sys.executable).with_name("neardup")
    return [str(script)] if script.exists() else [sys.executable, "-m", "neardup_pipeline"]


def run_dedup(source: Path, output: Path, backend: str, es_url: str | None) -> float:
    """`neardup dedup` on `source` into `output`; its wall time. An Elasticsearch run writes a
    fresh index, deleted after it (the server is the user's)."""
    command = [*neardup_command(), "dedup", str(source), "-o", str(output), "--backend", backend]
    index = f"neardup-orders-bench-{uuid.uuid4().hex[:8]}"
    if es_url is not None:
        command += ["--fingerprint-index", index]
    start = time.perf_counter()
    try:
        subprocess.run(command, check=True)
        return time.perf_counter() - start
    finally:
        if es_url is not None:
            drop_index(es_url, index)


def read_output(path: Path) -> list[dict[str, object]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def partition(records: Sequence[dict[str, object]]) -> dict[str, list[str]]:
    """Output lines grouped by `cluster`; a `no_text` line is a cluster of its own."""
    clusters: dict[str, list[str]] = defaultdict(list)
    for record in records:
        doc_id = str(record["id"])
        key = doc_id if record.get("status") == "no_text" else str(record["cluster"])
        clusters[key].append(doc_id)
    return clusters


def gold_groups(docs: Iterable[Doc]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = defaultdict(list)
    for doc in docs:
        groups[doc.group].append(doc.url)
    return groups


def pairs_of(groups: Iterable[Sequence[str]]) -> set[Pair]:
    return {pair for members in groups for pair in itertools.combinations(sorted(members), 2)}


def canonical_share(records: Sequence[dict[str, object]], docs: Sequence[Doc]) -> float | None:
    """Share of the articles' gold groups whose one line saying `canonical: true` is the
    article's; None when the lines carry no boolean `canonical`."""
    says = {str(r["id"]): r["canonical"] for r in records
            if isinstance(r.get("canonical"), bool)}
    if not says:
        return None
    groups = {g: m for g, m in gold_groups(docs).items() if len(m) > 1}
    right = sum([m for m in members if says.get(m) is True] == [group]
                for group, members in groups.items())
    return right / len(groups) if groups else 1.0


def score(label: str, records: Sequence[dict[str, object]], docs: Sequence[Doc],
          first: set[Pair] | None, seconds: float) -> tuple[Run, set[Pair]]:
    """The run's row, and its same-cluster pairs (order 1's are the others' reference)."""
    predicted = pairs_of(partition(records).values())
    gold = pairs_of(gold_groups(docs).values())
    good = len(predicted & gold)
    precision = good / len(predicted) if predicted else 1.0
    recall = good / len(gold) if gold else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    differing = None if first is None else len(predicted ^ first)
    return Run(label, precision, recall, f1, len(predicted), differing,
               canonical_share(records, docs), seconds), predicted


def table(runs: Sequence[Run]) -> str:
    lines = ["| order | precision | recall | F1 | same-cluster pairs | pairs differing from "
             "order 1 | canonical = article | wall s |", "|---|---|---|---|---|---|---|---|"]
    for run in runs:
        differing = "-" if run.differing is None else f"{run.differing:,}"
        share = "n/a" if run.canonical_share is None else f"{run.canonical_share:.4f}"
        lines.append(f"| {run.label} | {run.precision:.4f} | {run.recall:.4f} | {run.f1:.4f} "
                     f"| {run.pairs:,} | {differing} | {share} | {run.seconds:.1f} |")
    return "\n".join(lines)


def _label(order: str) -> str:
    if order == "worst":
        return "worst (copies first)"
    if order == "stripped":
        return "control: markup stripped, order 1"
    return f"{order} (seeded)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--orders", type=int, default=DEFAULT_ORDERS,
                        help=f"seeded random orders (default {DEFAULT_ORDERS}), then 'worst'")
    parser.add_argument("--backends", nargs="+", choices=("memory", "sqlite"),
                        default=["memory", "sqlite"])
    parser.add_argument("--es-url", help="also run on this Elasticsearch (a fresh index a run)")
    parser.add_argument("--limit", type=int, metavar="N",
                        help="N articles (a seeded sample) instead of all: a quick run")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="keep the inputs, GOLD.jsonl and the outputs in DIR")
    args = parser.parse_args()
    if args.orders < 1:
        parser.error("--orders must be at least 1")
    made = make_canonical_set(args.seed, args.limit)
    docs = made.docs
    print(describe(made), file=sys.stderr, flush=True)
    stripped = [Doc(d.url, strip_declarations(d.html), d.group, d.kind) for d in docs]
    wrong = check_declarations(docs, stripped=False), check_declarations(stripped, stripped=True)
    if any(wrong):
        print(f"warning: {wrong[0]} documents declare another canonical than the one written, "
              f"{wrong[1]} still declare one once stripped", file=sys.stderr)
    runs_of = orders(docs, args.seed, args.orders)
    by_id = {doc.url: doc for doc in stripped}
    runs_of["stripped"] = [by_id[doc.url] for doc in runs_of["1"]]
    backends: dict[str, str | None] = dict.fromkeys(args.backends)
    if args.es_url:
        backends["elasticsearch"] = args.es_url
    results: dict[str, list[Run]] = {name: [] for name in backends}
    partitions: dict[tuple[str, str], set[Pair]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        write_gold(folder / "GOLD.jsonl", docs)
        for order, ordered in runs_of.items():
            source = folder / f"{order}.jsonl"
            write_input(source, ordered)
            for name, es_url in backends.items():  # in turns: the shared machine drifts
                spec = {"memory": "memory", "sqlite": f"sqlite:{Path(tmp) / f'{order}.sqlite'}",
                        "elasticsearch": es_url}[name]
                output = folder / f"{name}-{order}.out.jsonl"
                seconds = run_dedup(source, output, str(spec), es_url)
                records = read_output(output)
                first = partitions.get((name, "1"))
                run, pairs = score(_label(order), records, docs, first, seconds)
                partitions[(name, order)] = pairs
                results[name].append(run)
                print(f"[canonical_orders] {name} {run.label}: F1 {run.f1:.4f}, "
                      f"{seconds:.1f} s", file=sys.stderr, flush=True)
                if args.keep is None:
                    output.unlink()
            if args.keep is None:
                source.unlink()
    print(f"{measured_at()}; seed {args.seed}, {args.orders} seeded orders"
          + (f", --limit {args.limit}" if args.limit is not None else "") + ".")
    print(describe(made) + ".")
    for name, runs in results.items():
        print(f"\n{name}:\n")
        print(table(runs))
    if len(backends) > 1:
        same = all(len({frozenset(partitions[(name, order)]) for name in backends}) == 1
                   for order in runs_of)
        print(f"\nsame partition on every backend, order by order: {'yes' if same else 'NO'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
