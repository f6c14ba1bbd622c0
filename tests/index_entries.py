"""Index entries made straight from a simhash fingerprint, for tests of the index backends."""

from __future__ import annotations

from neardup_pipeline.index import IndexEntry
from neardup_pipeline.methods.simhash import block_keys


def entry(doc_id: str, fingerprint: int, **meta: object) -> IndexEntry:
    """`doc_id` stored with the 64-bit simhash `fingerprint`, its block keys, and its own
    cluster unless `meta` says otherwise."""
    return IndexEntry(
        doc_id,
        {"simhash": f"{fingerprint:016x}"},
        {"simhash": block_keys(fingerprint)},
        {"cluster": doc_id, **meta},
    )
