"""`neardup compare A B`: the similarity of two documents under each method, and why."""

from __future__ import annotations

import argparse
import json
from typing import Any

from neardup_pipeline.cli.inputs import load_document
from neardup_pipeline.cli.options import add_method_options, config_from_args
from neardup_pipeline.config import KNOWN_METHODS, NearDupConfig
from neardup_pipeline.fingerprint import Document, Fingerprinter
from neardup_pipeline.methods.minhash import SHINGLE_WORDS
from neardup_pipeline.methods.rarewords import shared_rare_words


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    compare = sub.add_parser("compare", help="similarity of two documents under each method")
    compare.add_argument("a", help="file path or file:// URL (HTML or text)")
    compare.add_argument("b", help="file path or file:// URL (HTML or text)")
    add_method_options(compare)
    compare.add_argument("--json", action="store_true", help="machine-readable output")
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
    fa, fb = fingerprinter.fingerprint(doc_a), fingerprinter.fingerprint(doc_b)
    result: dict[str, Any] = {
        "a": {"id": fa.doc_id, "words": fa.word_count, "language": fa.language},
        "b": {"id": fb.doc_id, "words": fb.word_count, "language": fb.language},
        "methods": {},
    }
    duplicate = False
    for name, method in fingerprinter.methods.items():
        if fa.status != "ok" or fb.status != "ok":
            result["methods"][name] = {"verdict": "no_text"}
            continue
        sa, sb = fa.signatures[name], fb.signatures[name]
        is_dup = method.is_duplicate(sa, sb)
        duplicate = duplicate or is_dup
        result["methods"][name] = {
            "similarity": round(method.similarity(sa, sb), 6),
            "duplicate": is_dup,
            "a": method.encode(sa),
            "b": method.encode(sb),
            **method.explain(sa, sb),
        }
    result["duplicate"] = duplicate
    result["shared_shingles"] = shared_shingles(fingerprinter, doc_a, doc_b, config)
    if "similarity" in result["methods"].get("rarewords", {}):
        words_a = fingerprinter.normalizer.words(fingerprinter.text_of(doc_a)[0]).words
        result["shared_rare_words"] = shared_rare_words(
            words_a, fa.signatures["rarewords"], fb.signatures["rarewords"], fingerprinter.hasher
        )
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
    else:
        print_comparison(result, config)
    return 0 if duplicate else 1


def print_comparison(result: dict[str, Any], config: NearDupConfig) -> None:
    """The comparison for people: one line per method, then the shared text."""
    a, b = result["a"], result["b"]
    print(f"A: {a['id']} ({a['words']} words, {a['language']})")
    print(f"B: {b['id']} ({b['words']} words, {b['language']})")
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
    fingerprinter: Fingerprinter, doc_a: Document, doc_b: Document, config: NearDupConfig,
    examples: int = 3,
) -> dict[str, Any]:
    """The canonical-word shingles both documents contain: the why behind a resemblance."""
    size = SHINGLE_WORDS
    sets = []
    for doc in (doc_a, doc_b):
        words = fingerprinter.normalizer.words(fingerprinter.text_of(doc)[0]).words
        sets.append({" ".join(words[i : i + size]) for i in range(max(len(words) - size + 1, 0))})
    common = sorted(sets[0] & sets[1])
    step = max(len(common) // examples, 1)
    return {
        "count": len(common), "a": len(sets[0]), "b": len(sets[1]),
        "examples": common[::step][:examples],
    }
