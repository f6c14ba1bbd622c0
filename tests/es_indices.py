"""Unique neardup index names for one test, and their deletion afterwards with the side indices
the store makes beside the fingerprint index (rarewords' -df, the write log's -writelog, the
cluster store's -clusters)."""

from __future__ import annotations

import uuid

SIDE_INDICES = ("df", "writelog", "clusters")


def unique_index_names(tag: str) -> dict[str, str]:
    """Fingerprint and pages index names no other test uses."""
    suffix = uuid.uuid4().hex[:10]
    return {"fingerprint_index": f"neardup-fingerprints-{tag}-{suffix}",
            "pages_index": f"neardup-pages-{tag}-{suffix}"}


def delete_indices(url: str, names: dict[str, str]) -> None:
    """Delete the indices and their side indices, one call per index: a missing one must not
    spare the others."""
    from neardup_pipeline.index.elastic import compat  # the client only where a test needs one

    client = compat.client(url, request_timeout=30)
    try:
        fingerprints = names["fingerprint_index"]
        for name in (*names.values(), *(f"{fingerprints}-{side}" for side in SIDE_INDICES)):
            client.options(ignore_status=404).indices.delete(index=name)
    finally:
        client.close()
