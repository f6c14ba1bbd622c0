"""An entry's signatures as one `docs.signatures` blob: a method's stored string that is base64
(the packed signatures are) kept as the bytes it encodes, a quarter smaller than its text;
anything else as JSON. Read back exactly: the same strings and values the entry was given.

Layout: a 2-byte length, a JSON header `[[method, kind, length], ...]` (kind "b": base64 text
kept as its bytes; "j": JSON), then each method's bytes in turn.
"""

from __future__ import annotations

import binascii
import json
import struct
from collections.abc import Mapping
from typing import Any

import pybase64

_LENGTH = struct.Struct("<H")


def pack_signatures(signatures: Mapping[str, Any]) -> bytes:
    header: list[list[object]] = []
    parts: list[bytes] = []
    for method, value in signatures.items():
        raw = _base64_bytes(value)
        kind = "b" if raw is not None else "j"
        if raw is None:
            raw = json.dumps(value).encode("utf-8")
        header.append([method, kind, len(raw)])
        parts.append(raw)
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    return _LENGTH.pack(len(head)) + head + b"".join(parts)


def unpack_signatures(blob: bytes) -> dict[str, Any]:
    (size,) = _LENGTH.unpack_from(blob)
    at = _LENGTH.size + size
    signatures: dict[str, Any] = {}
    for method, kind, length in json.loads(blob[_LENGTH.size:at]):
        raw = blob[at:at + length]
        at += length
        signatures[method] = (pybase64.b64encode_as_string(raw) if kind == "b"
                              else json.loads(raw))
    return signatures


def _base64_bytes(value: object) -> bytes | None:
    """The bytes `value` encodes when it is base64 text that encodes back to itself."""
    if not isinstance(value, str):
        return None
    try:
        raw = pybase64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw if pybase64.b64encode_as_string(raw) == value else None
