"""A fingerprint as a JSON document and back, bit for bit: what a slice stages for the run
that judges (staged.py). Pure.

A method's own stored form (`encode`) may round (the bag keeps its weights in 16 bits), and a
page compared by its rounded weights can land on the other side of a threshold than the same
page compared fresh, as `neardup dedup` compares it. So every numpy array of a signature travels
as its raw bytes and dtype; the method's form carries only the rest (its arrays emptied), which
gives back the signature's class. No pickle: whoever can write to the cluster cannot run code here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any, cast

import numpy as np
import pybase64

from neardup_pipeline.fingerprint import Fingerprint, Fingerprinter
from neardup_pipeline.sketch.stored import array_text

VERSION = 1  # of this record's layout: part of the digest, so an older record is not used
_NUMERIC_KINDS = frozenset("biuf")  # never an object array from stored bytes


def params_digest(fingerprinter: Fingerprinter) -> str:
    """Names the settings a fingerprint was made with: a record made under others is ignored."""
    text = json.dumps([VERSION, fingerprinter.params()], sort_keys=True, default=str)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def to_record(fingerprinter: Fingerprinter, fp: Fingerprint) -> dict[str, Any]:
    """The fingerprint without its text (the verdict reads none of it), as JSON values."""
    signatures: dict[str, Any] = {}
    for name, signature in fp.signatures.items():
        arrays = _arrays(signature)
        skeleton = (dataclasses.replace(signature, **{f: a[:0] for f, a in arrays.items()})
                    if arrays else signature)
        signatures[name] = {
            "form": fingerprinter.methods[name].encode(skeleton),
            "arrays": {f: {"dtype": a.dtype.str, "shape": list(a.shape),
                           "data": array_text(a)}
                       for f, a in arrays.items()},
        }
    return {
        "doc_id": fp.doc_id, "status": fp.status, "signatures": signatures, "keys": fp.keys,
        "language": fp.language, "word_count": fp.word_count, "title": fp.title,
        "truncated": fp.truncated, "content_hash": fp.content_hash,
        "canonical_url": fp.canonical_url,
    }


def from_record(fingerprinter: Fingerprinter, record: dict[str, Any]) -> Fingerprint:
    """The fingerprint `to_record` wrote; ValueError (or KeyError, TypeError) when the record
    is not one, or names a method not configured here."""
    signatures: dict[str, Any] = {}
    for name, stored in record["signatures"].items():
        signature = fingerprinter.methods[name].decode(stored["form"])
        arrays = {f: _array(a) for f, a in stored["arrays"].items()}
        if arrays:
            if not dataclasses.is_dataclass(signature) or isinstance(signature, type):
                raise ValueError(f"{name}: arrays for a signature without fields")
            signature = dataclasses.replace(signature, **arrays)
        signatures[name] = signature
    status = str(record["status"])
    if status not in ("ok", "no_text", "not_html"):
        raise ValueError(f"unknown status {status!r}")
    return Fingerprint(
        str(record["doc_id"]), cast(Any, status), signatures,
        {str(k): [str(v) for v in keys] for k, keys in record["keys"].items()},
        record.get("language"), int(record["word_count"]), str(record.get("title") or ""), "",
        bool(record.get("truncated")), str(record["content_hash"]), record.get("canonical_url"),
    )


def _arrays(signature: object) -> dict[str, np.ndarray[Any, Any]]:
    if not dataclasses.is_dataclass(signature) or isinstance(signature, type):
        return {}
    return {f.name: value for f in dataclasses.fields(signature)
            if isinstance(value := getattr(signature, f.name), np.ndarray)}


def _array(stored: dict[str, Any]) -> np.ndarray[Any, Any]:
    dtype = np.dtype(str(stored["dtype"]))
    if dtype.kind not in _NUMERIC_KINDS:
        raise ValueError(f"not a numeric dtype: {stored['dtype']!r}")
    data = pybase64.b64decode(str(stored["data"]), validate=True)
    return np.frombuffer(data, dtype=dtype).reshape([int(n) for n in stored["shape"]]).copy()
