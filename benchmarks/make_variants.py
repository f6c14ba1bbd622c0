"""Edited variants of real pages, with gold groups, for `neardup eval` (seeded, reproducible).

From pages of ../shared/data (PostgreSQL manual and the English installation guide) with at least
MIN_WORDS words, every chosen original is written once as itself and once per edit kind:

- `reorder`       the page's paragraphs (<p>, <li>, <pre>, <dt>, <dd>) in a shuffled order
- `punctuation`   a third of the punctuation marks removed or replaced by others
- `links`         existing links unwrapped, and one word in twenty wrapped in a new link
- `words2|5|10`   2%, 5% or 10% of the words replaced by words drawn from other pages
- `chrome`        the page's <body> wrapped in another page's chrome: a navigation list made of
                  that page's link texts, a sidebar of its headings, and a footer paragraph

`--source apache2-doc` draws the originals from pages outside the calibration set instead: the
English pages of the newest Debian `apache2-doc` (fetched by benchmarks/peers.py's `apt-get
download` into its cache), each edited with words and chrome of other pages of that manual.

Output: DOCS.jsonl lines {"id", "html", "url"} and GOLD.jsonl lines {"id", "group", "kind"}, where
group is the original's id: every variant is a near-duplicate of its original, and pages of
different groups are distinct (several share one site's navigation and footer, so a method that
keys on chrome produces false pairs). Usage:
    python benchmarks/make_variants.py OUT_DIR [--pages 120] [--seed 20261130]
                                       [--source shared|apache2-doc]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections.abc import Callable
from pathlib import Path

import lxml.etree
import lxml.html

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.corpora import Page, installation_guide_pages, postgresql_pages
from tests.corpora import WORD, parse, replace_words, serialize, text_nodes

MIN_WORDS = 200
BLOCKS = ("p", "li", "pre", "dt", "dd")
KINDS = ("reorder", "punctuation", "links", "words2", "words5", "words10", "chrome")
_PUNCT = re.compile(r"[.,;:!?()\"']")


def edit_text(root: lxml.html.HtmlElement, edit: Callable[[str], str]) -> None:
    for el, slot in text_nodes(root):
        setattr(el, slot, edit(getattr(el, slot)))


def reorder(root: lxml.html.HtmlElement, rng: random.Random, **_: object) -> None:
    # Outermost blocks only: shuffling a block together with one nested in it would drop or
    # duplicate text (the inner one is replaced inside an already detached parent).
    blocks = [
        el for el in root.iter(*BLOCKS)
        if el.text_content().strip()
        and not any(a.tag in BLOCKS for a in el.iterancestors())
    ]
    contents = [lxml.html.tostring(el, encoding="unicode", with_tail=False) for el in blocks]
    rng.shuffle(contents)
    for el, html in zip(blocks, contents, strict=True):
        replacement = lxml.html.fragment_fromstring(html)
        replacement.tail = el.tail
        el.getparent().replace(el, replacement)


def punctuation(root: lxml.html.HtmlElement, rng: random.Random, **_: object) -> None:
    def change(match: re.Match[str]) -> str:
        if rng.random() >= 1 / 3:
            return match.group(0)
        return rng.choice(["", ",", ";", " -", "."])

    edit_text(root, lambda text: _PUNCT.sub(change, text))


def links(root: lxml.html.HtmlElement, rng: random.Random, **_: object) -> None:
    for anchor in list(root.iter("a")):
        if anchor.getparent() is not None:
            anchor.drop_tag()
    for el, slot in text_nodes(root):
        text = getattr(el, slot)
        words = text.split(" ")
        if len(words) < 20:
            continue
        i = rng.randrange(len(words))
        if slot == "text" and WORD.fullmatch(words[i] or "-"):
            link = lxml.html.Element("a", href=f"https://example.org/ref/{rng.randrange(10**6)}")
            link.text = words[i]
            link.tail = " " + " ".join(words[i + 1 :])
            el.text = " ".join(words[:i]) + " "
            el.insert(0, link)


def chrome(root: lxml.html.HtmlElement, rng: random.Random, *, other: Page, **_: object) -> None:
    donor = parse(other)
    body = root.find("body")
    if body is None:
        return
    nav = lxml.html.Element("nav")
    items = lxml.html.Element("ul")
    for anchor in list(donor.iter("a"))[:40]:
        label = anchor.text_content().strip()
        if label:
            item = lxml.html.Element("li")
            link = lxml.html.Element("a", href=anchor.get("href") or "#")
            link.text = label
            item.append(link)
            items.append(item)
    nav.append(items)
    aside = lxml.html.Element("aside")
    for heading in list(donor.iter("h1", "h2", "h3"))[:8]:
        para = lxml.html.Element("p")
        para.text = heading.text_content().strip()
        aside.append(para)
    footer = lxml.html.Element("footer")
    paragraphs = [p.text_content().strip() for p in donor.iter("p") if p.text_content().strip()]
    footer_p = lxml.html.Element("p")
    footer_p.text = paragraphs[-1] if paragraphs else "Copyright."
    footer.append(footer_p)
    body.insert(0, nav)
    body.insert(1, aside)
    body.append(footer)


EDITS: dict[str, Callable[..., None]] = {
    "reorder": reorder,
    "punctuation": punctuation,
    "links": links,
    "words2": replace_words(0.02),
    "words5": replace_words(0.05),
    "words10": replace_words(0.10),
    "chrome": chrome,
}


def eligible(pages: tuple[Page, ...]) -> list[Page]:
    chosen = []
    for page in pages:
        body = parse(page).find("body")
        if body is not None and len(WORD.findall(body.text_content())) >= MIN_WORDS:
            chosen.append(page)
    return chosen


def pools(source: str) -> list[tuple[list[Page], list[Page]]]:
    """(pages to pick originals from, pages whose words and chrome the edits borrow)."""
    if source == "apache2-doc":
        from benchmarks.peers import CACHE, debian_corpus

        pages = debian_corpus(CACHE).pages
        newest = pages[-1].doc_id.split("/", 1)[0]
        english = [Page(p.doc_id, p.html, p.group, {}) for p in pages
                   if p.doc_id.startswith(f"{newest}/en/")]
        return [(english, english)]
    postgres = [p for p in postgresql_pages() if p.doc_id.startswith("15.20/")]
    guide = [p for p in installation_guide_pages() if p.doc_id.startswith("amd64/en/")]
    return [(postgres, guide), (guide, postgres)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--pages", type=int, default=120, help="originals per corpus")
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--source", choices=("shared", "apache2-doc"), default="shared",
                        help="../shared/data (calibration) or the Apache manual (held out)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    originals: list[Page] = []
    donors: list[Page] = []
    for pool, other_pool in pools(args.source):
        candidates = eligible(tuple(pool))
        originals += rng.sample(candidates, min(args.pages, len(candidates)))
        donors += other_pool
    vocabulary = sorted({w for p in donors[:300] for w in WORD.findall(
        parse(p).text_content()) if len(w) > 3 and not w.isdigit()})
    args.out.mkdir(parents=True, exist_ok=True)
    counts = dict.fromkeys(("original", *KINDS), 0)
    with (args.out / "DOCS.jsonl").open("w", encoding="utf-8") as docs, \
            (args.out / "GOLD.jsonl").open("w", encoding="utf-8") as gold:
        for page in originals:
            group = page.doc_id
            records = [(page.doc_id, "original", page.html.decode("utf-8", "replace"))]
            for kind in KINDS:
                root = parse(page)
                EDITS[kind](root, rng, vocabulary=vocabulary, other=rng.choice(donors))
                records.append((f"{page.doc_id}#{kind}", kind, serialize(root)))
            for doc_id, kind, html in records:
                docs.write(json.dumps({"id": doc_id, "html": html, "url": doc_id}) + "\n")
                gold.write(json.dumps({"id": doc_id, "group": group, "kind": kind}) + "\n")
                counts[kind] += 1
    print(json.dumps({"originals": len(originals), "documents": sum(counts.values()),
                      "by_kind": counts}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
