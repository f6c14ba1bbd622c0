"""`neardup compare A B`: the similarity of two documents under each method, and why.

Each page is shown as the text it was reduced to (the content mode and the reader that produced
it, then the text itself, and its content region when it has one apart from that text): a match
or a miss is often explained by what was read, not by the scores. `--url-a` / `--url-b` say
where each page was fetched: its site decides whether the bag may match the two by containment
(methods.md, "Across sites"); a file has no site.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from neardup_pipeline.cli.commands import about
from neardup_pipeline.cli.inputs import load_document
from neardup_pipeline.cli.options import add_method_options, config_from_args
from neardup_pipeline.config import KNOWN_METHODS, NearDupConfig
from neardup_pipeline.fingerprint import Document, Fingerprint, Fingerprinter
from neardup_pipeline.methods.minhash import SHINGLE_WORDS
from neardup_pipeline.methods.rarewords import shared_rare_words
from neardup_pipeline.text.content import MAIN_READER
from neardup_pipeline.text.extract import walk_in_use
from neardup_pipeline.text.site import site_of

# Characters of each page's text shown on a terminal unless told otherwise: enough to see
# whether it starts with the article or with a menu.
DEFAULT_TEXT_CHARS = 400


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    compare = sub.add_parser("compare", help=about("compare"))
    compare.add_argument("a", help="file path or file:// URL (HTML or text)")
    compare.add_argument("b", help="file path or file:// URL (HTML or text)")
    for side in ("a", "b"):
        compare.add_argument(
            f"--url-{side}", metavar="URL",
            help=f"the URL page {side.upper()} was fetched from (its site: containment across "
                 "sites applies to pages of two sites)")
    add_method_options(compare)
    compare.add_argument("--json", action="store_true",
                         help="machine-readable output (with each page's full text)")
    compare.add_argument(
        "--text-chars", type=_non_negative, default=DEFAULT_TEXT_CHARS, metavar="N",
        help=f"characters of each page's text to show (default: {DEFAULT_TEXT_CHARS})",
    )
    compare.add_argument("--full-text", action="store_true",
                         help="show each page's whole text")
    compare.add_argument("--signatures", action="store_true",
                         help="with --json: each method's encoded signatures of both pages "
                         "(large; left out unless asked)")
    compare.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    if not args.method:
        args.method = list(KNOWN_METHODS)  # compare shows every method unless told otherwise
        if not args.anchors_model:
            args.method.remove("anchors")  # anchors needs a fitted model
    args.exact = True  # exact Jaccard and containment cost nothing for a single pair
    config = config_from_args(args)
    fingerprinter = Fingerprinter(config)
    doc_a, doc_b = load_document(args.a), load_document(args.b)
    if args.url_a:
        doc_a = dataclasses.replace(doc_a, url=args.url_a)
    if args.url_b:
        doc_b = dataclasses.replace(doc_b, url=args.url_b)
    fa, fb = fingerprinter.fingerprint(doc_a), fingerprinter.fingerprint(doc_b)
    result: dict[str, Any] = {
        "a": page_facts(fingerprinter, doc_a, fa),
        "b": page_facts(fingerprinter, doc_b, fb),
        "methods": {},
    }
    duplicate = False
    for name, method in fingerprinter.methods.items():
        if fa.status != "ok" or fb.status != "ok":  # no_text, or not_html (an image)
            result["methods"][name] = {"verdict": fa.status if fa.status != "ok" else fb.status}
            continue
        sa, sb = fa.signatures[name], fb.signatures[name]
        is_dup = method.is_duplicate(sa, sb)
        duplicate = duplicate or is_dup
        # the text output shows simhash's two 16-hex signatures; JSON carries them when asked
        signatures = (
            {"a": method.encode(sa), "b": method.encode(sb)}
            if args.signatures or not args.json else {}
        )
        result["methods"][name] = {
            "similarity": round(method.similarity(sa, sb), 6),
            "duplicate": is_dup,
            **signatures,
            **method.explain(sa, sb),
        }
    result["duplicate"] = duplicate
    result["shared_shingles"] = shared_shingles(fingerprinter, fa.text, fb.text)
    if "similarity" in result["methods"].get("rarewords", {}):
        words_a = fingerprinter.normalizer.words(fa.text).words
        result["shared_rare_words"] = shared_rare_words(
            words_a, fa.signatures["rarewords"], fb.signatures["rarewords"], fingerprinter.hasher
        )
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
    else:
        print_comparison(result, config, None if args.full_text else args.text_chars)
    return 0 if duplicate else 1


def page_facts(fingerprinter: Fingerprinter, doc: Document, fp: Fingerprint) -> dict[str, Any]:
    """One page as compared: its title, how it was read, and the text its signatures are of."""
    content = fingerprinter.text.content
    extracted = fingerprinter.extract(doc)  # the same pure reading fingerprint() made
    reader = extracted.parser
    return {
        "id": fp.doc_id, "title": fp.title, "words": fp.word_count, "language": fp.language,
        "site": site_of(doc.url or doc.doc_id) or None,
        "content": content, "reader": reader, "read_as": read_as(content, reader),
        "truncated": fp.truncated, "text": fp.text, "region": extracted.region or None,
    }


def read_as(content: str, reader: str) -> str:
    """Which text a page was reduced to, for people: "chromeless, by libxml2 2.14 events (C++)",
    "main, by resiliparse", "main: too little found, chromeless, by ..." or "given as text"."""
    if reader == "text":
        return "given as text"
    how = {
        "lxml": walk_in_use(),
        "bs4": "BeautifulSoup: markup libxml2 rejected",
        "scan": "linear scan: markup above the size caps",
    }.get(reader, reader)
    if content == "main" and reader != MAIN_READER:
        return f"main: too little found, chromeless, by {how}"
    return f"{content}, by {how}"


def shown_text(text: str, chars: int | None) -> str:
    """`text` cut to `chars` characters (None: whole), saying how much was left out."""
    if chars is None or len(text) <= chars:
        return text
    return f"{text[:chars]}\u2026 [{len(text) - chars} more characters: --full-text]"


def print_comparison(
    result: dict[str, Any], config: NearDupConfig, text_chars: int | None = DEFAULT_TEXT_CHARS,
) -> None:
    """The comparison for people: each page as read, one line per method, then the shared text."""
    for label in ("A", "B"):
        page = result[label.lower()]
        print(f"{label}: {page['id']} ({page['words']} words, {page['language']})")
        print(f"   title: {page['title'] or '(none)'}")
        print(f"   site: {page['site'] or '(none: --url-' + label.lower() + ' names it)'}")
        truncated = ", truncated at the size cap" if page["truncated"] else ""
        print(f"   text: {page['read_as']}{truncated}")
        print(f"   | {shown_text(page['text'], text_chars) or '(empty)'}")
        if page["region"]:
            print(f"   content region ({len(page['region'].split())} of the text's words):")
            print(f"   | {shown_text(page['region'], text_chars)}")
    for name, info in result["methods"].items():
        shown = {k: v for k, v in info.items() if name == "simhash" or k not in ("a", "b")}
        details = ", ".join(f"{k}={v}" for k, v in shown.items())
        print(f"{name}: {details}")
    shared = result["shared_shingles"]
    print(f"shared {SHINGLE_WORDS}-word shingles: {shared['count']} "
          f"of {shared['a']} (A) and {shared['b']} (B)")
    for example in shared["examples"]:
        print(f"  \u00b7 {example}")
    if "shared_rare_words" in result:
        print("shared rare words:", ", ".join(result["shared_rare_words"]) or "none")
    print("verdict:", "near-duplicate" if result["duplicate"] else "distinct")


def shared_shingles(
    fingerprinter: Fingerprinter, text_a: str, text_b: str, examples: int = 3,
) -> dict[str, Any]:
    """The canonical-word shingles both texts contain: the why behind a resemblance."""
    size = SHINGLE_WORDS
    sets = []
    for text in (text_a, text_b):
        words = fingerprinter.normalizer.words(text).words
        sets.append({" ".join(words[i : i + size]) for i in range(max(len(words) - size + 1, 0))})
    common = sorted(sets[0] & sets[1])
    step = max(len(common) // examples, 1)
    return {
        "count": len(common), "a": len(sets[0]), "b": len(sets[1]),
        "examples": common[::step][:examples],
    }


def _non_negative(value: str) -> int:
    chars = int(value)
    if chars < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {chars}")
    return chars
