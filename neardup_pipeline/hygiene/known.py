"""What earlier runs checked: a document whose fingerprint is stored with the hash of this very
content needs nothing (its marks were written with it); an edited one is checked again, and so
is one a run that could not read it marked `bad_field` (its marks are put right), and, when the
marks are in the content index itself, one that carries none."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import partial

from elasticsearch import ApiError

from neardup_pipeline.errors import IndexFailure
from neardup_pipeline.hygiene.fields import BAD_FIELD, Item
from neardup_pipeline.index.elastic.connection import Connection, describe
from neardup_pipeline.index.elastic.documents import es_id

SOURCE_HASH = "source_hash"  # in a fingerprint entry's metadata: the hash of what was checked
CONTENT_ID = "content_id"  # ... and the `_id` of its document in the content index
MGET_CHUNK = 1000


def with_known(connection: Connection, fingerprint_index: str, items: Sequence[Item],
               marks_in_place: bool = False) -> list[Item]:
    """`items`, those checked before with the same content marked `known` (one `mget` per
    thousand documents, reading two small fields). `marks_in_place`: the items were read with
    their marks, and one without marks is not known, whatever its fingerprint says."""
    stored: dict[str, str] = {}
    ids = [item.doc_id for item in items if item.doc is not None]
    client = connection.client
    for start in range(0, len(ids), MGET_CHUNK):
        chunk = {es_id(doc_id): doc_id for doc_id in ids[start : start + MGET_CHUNK]}
        try:
            response = connection.call(partial(
                client.options(ignore_status=404).mget, index=fingerprint_index, ids=list(chunk),
                source_includes=["doc_id", f"meta.{SOURCE_HASH}"]))
        except ApiError as exc:
            raise IndexFailure(f"reading the fingerprint index failed: {describe(exc)}") from exc
        for doc in response.body.get("docs", []):  # no docs: the index does not exist yet
            source = doc.get("_source") or {}
            if doc.get("found") and chunk.get(doc["_id"]) == source.get("doc_id"):
                stored[source["doc_id"]] = str((source.get("meta") or {}).get(SOURCE_HASH, ""))
    return [
        replace(item, known=True)
        if item.doc is not None and item.source_hash and item.marked != BAD_FIELD
        and stored.get(item.doc_id) == item.source_hash
        and (item.marked is not None or not marks_in_place)
        else item
        for item in items
    ]
