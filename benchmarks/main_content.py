"""Main-content extractors side by side: what each keeps of real pages, and what it costs.

Two corpora:
- ../shared/data/web-pages-multisite: real pages of a few hundred sites, with labelled snippets
  of each page's main content ("with") and of its boilerplate ("without"; menus, footers,
  teasers, comments; see its SOURCE.txt). Per extractor: the share of "with" snippets found in
  its text (main-content recall), the share of "without" snippets found (boilerplate leakage),
  pages left with under 50 words, and microseconds a page on one core. These labels come from
  trafilatura's own evaluation set: trafilatura was tuned on them, so its figures here flatter it.
- the PostgreSQL manual (benchmarks/corpora.py postgresql_pages, an evenly spaced sample): a
  documentation page whose text is mostly its own must keep it. "keeps own" = the extractor's
  text holds at least half the words of the page's chromeless text (a documentation page
  reduced to its title or one block fails); plus the speed on these smaller pages.

A snippet is found when it occurs in the text, both with whitespace runs collapsed to one space
(case kept, as trafilatura's evaluation does). Every extractor gets the page's bytes; those that
take a str decode it with neardup's decode_html inside the timed call.

readability-lxml is measured only where it is installed, and not in neardup's environment: it
requires chardet, whose presence makes beautifulsoup4 detect encodings with chardet instead of
charset-normalizer, which changes neardup's own decoding (text/decode.py). Measure it in a
separate virtual environment (`pip install readability-lxml`).

    .venv/bin/python -m benchmarks.main_content [--pg-sample 300] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

from benchmarks.corpora import LabelledPage, multisite_pages, postgresql_pages
from neardup_pipeline.text.content import main_content_text
from neardup_pipeline.text.decode import decode_html
from neardup_pipeline.text.extract import html_to_text

SHORT_WORDS = 50
_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w+")

Extractor = Callable[[bytes], str]


def _squeeze(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def _decoded(html: bytes) -> str:
    return decode_html(html)[0]


def chromeless(html: bytes) -> str:
    return html_to_text(html, chromeless=True).text


def whole(html: bytes) -> str:
    return html_to_text(html).text


def neardup_main(html: bytes) -> str:
    return main_content_text(html).text


def trafilatura_fast(html: bytes) -> str:
    import trafilatura

    text = trafilatura.extract(_decoded(html), fast=True, include_comments=False,
                               include_tables=True, include_links=False, include_images=False,
                               include_formatting=False, deduplicate=False)
    return text or ""


def resiliparse_main(html: bytes) -> str:
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    tree = HTMLTree.parse(_decoded(html))
    return str(extract_plain_text(tree, preserve_formatting=False, main_content=True,
                                  comments=False))


def readability_summary(html: bytes) -> str:
    import lxml.html
    from readability import Document

    summary = Document(_decoded(html)).summary(html_partial=True)
    if not summary.strip():
        return ""
    return " ".join(str(text) for text in lxml.html.fromstring(summary).itertext())


@lru_cache(maxsize=1)
def _justext_stoplist() -> frozenset[str]:
    import justext

    # Every language's stop words, as trafilatura calls jusText: pages here are many languages.
    return frozenset(word for language in justext.get_stoplists()
                     for word in justext.get_stoplist(language))


def justext_paragraphs(html: bytes) -> str:
    import justext

    paragraphs = justext.justext(_decoded(html), _justext_stoplist())
    return "\n".join(p.text for p in paragraphs if not p.is_boilerplate)


EXTRACTORS: dict[str, Extractor] = {
    "neardup chromeless": chromeless,
    "neardup whole": whole,
    "neardup main": neardup_main,
    "trafilatura fast": trafilatura_fast,
    "resiliparse main": resiliparse_main,
    "readability-lxml": readability_summary,
    "jusText": justext_paragraphs,
}


@dataclass
class LabelledScore:
    extractor: str
    pages: int
    main_recall: float
    boilerplate_leakage: float
    short_pages: int
    errors: int
    us_per_page: float


@dataclass
class OwnTextScore:
    extractor: str
    pages: int
    keeps_own: int
    short_pages: int
    errors: int
    us_per_page: float


def _run(extract: Extractor, html: bytes) -> tuple[str | None, float]:
    start = time.perf_counter()
    try:
        text: str | None = extract(html)
    except Exception:  # an extractor failing on a page is a measured outcome
        text = None
    return text, time.perf_counter() - start


def score_labelled(name: str, extract: Extractor, pages: tuple[LabelledPage, ...]) -> LabelledScore:
    found_with = total_with = found_without = total_without = short = errors = 0
    seconds = 0.0
    for page in pages:
        text, spent = _run(extract, page.html)
        seconds += spent
        if text is None:
            errors += 1
            text = ""
        squeezed = _squeeze(text)
        short += len(_WORD.findall(squeezed)) < SHORT_WORDS
        total_with += len(page.main_snippets)
        total_without += len(page.chrome_snippets)
        found_with += sum(_squeeze(s) in squeezed for s in page.main_snippets)
        found_without += sum(_squeeze(s) in squeezed for s in page.chrome_snippets)
    return LabelledScore(name, len(pages), found_with / max(total_with, 1),
                         found_without / max(total_without, 1), short, errors,
                         seconds / max(len(pages), 1) * 1e6)


def score_own_text(name: str, extract: Extractor, pages: list[bytes]) -> OwnTextScore:
    keeps = short = errors = 0
    seconds = 0.0
    for html in pages:
        reference = len(_WORD.findall(chromeless(html)))
        text, spent = _run(extract, html)
        seconds += spent
        if text is None:
            errors += 1
            text = ""
        words = len(_WORD.findall(text))
        keeps += words >= 0.5 * reference
        short += words < SHORT_WORDS <= reference
    return OwnTextScore(name, len(pages), keeps, short, errors,
                        seconds / max(len(pages), 1) * 1e6)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pg-sample", type=int, default=300,
                        help="PostgreSQL pages measured, evenly spaced (default 300)")
    parser.add_argument("--only", nargs="*", help="extractor names to run (default: all)")
    parser.add_argument("--json", type=Path, help="write the figures here as JSON")
    args = parser.parse_args(argv)
    chosen = {k: v for k, v in EXTRACTORS.items() if not args.only or k in args.only}
    try:
        import readability  # noqa: F401
    except ImportError:
        chosen.pop("readability-lxml", None)
        print("readability-lxml not installed: not measured (see this module's docstring)")
    labelled = multisite_pages()
    pg_all = postgresql_pages()
    step = max(1, len(pg_all) // max(args.pg_sample, 1))
    pg = [page.html for page in pg_all[::step][: args.pg_sample]]
    for extract in chosen.values():  # imports and first-call setup outside the timings
        _run(extract, labelled[0].html)
    print(f"web-pages-multisite: {len(labelled)} labelled pages; PostgreSQL: {len(pg)} pages")
    print(f"{'extractor':20} {'recall':>7} {'leak':>6} {'<50w':>5} {'err':>4} {'us/page':>9}"
          f" | {'PG keeps':>9} {'<50w':>5} {'us/page':>8}")
    rows = []
    for name, extract in chosen.items():
        multi = score_labelled(name, extract, labelled)
        own = score_own_text(name, extract, pg)
        rows.append({"multisite": asdict(multi), "postgresql": asdict(own)})
        print(f"{name:20} {multi.main_recall:7.3f} {multi.boilerplate_leakage:6.3f} "
              f"{multi.short_pages:5d} {multi.errors:4d} {multi.us_per_page:9.0f} | "
              f"{own.keeps_own:4d}/{own.pages:<4d} {own.short_pages:5d} {own.us_per_page:8.0f}",
              flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
