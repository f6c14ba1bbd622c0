"""What a dry run would mark, as the HTML report of `neardup report` (report/html.py): counts,
cluster sizes, the largest clusters, and each copy beside its canonical copy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial

from elasticsearch import ApiError

from neardup_pipeline.errors import IndexFailure
from neardup_pipeline.fingerprint import Fingerprinter
from neardup_pipeline.hygiene.fields import FieldSpec, item_of
from neardup_pipeline.hygiene.marks import CHECKED, Mark
from neardup_pipeline.index.elastic.connection import Connection, describe
from neardup_pipeline.report.stats import PageRecord


def records_of(marks: Sequence[Mark]) -> list[PageRecord]:
    """The report's records: one per document the run would mark, in the run's order."""
    return [
        PageRecord(m.doc_id, m.cluster, None if m.canonical else m.duplicate_of or m.cluster,
                   m.similarity, m.method, m.url, is_canonical=m.canonical,
                   status="ok" if m.status == CHECKED else m.status, order=order)
        for order, m in enumerate(marks)
    ]


def texts_of(connection: Connection, index: str, spec: FieldSpec, fingerprinter: Fingerprinter,
             es_ids: Mapping[str, str]) -> dict[str, str]:
    """doc id -> the text neardup compared, for the documents of the pairs shown (`es_ids`:
    doc id -> `_id`), read again from the content index."""
    texts: dict[str, str] = {}
    ids = list(dict.fromkeys(es_ids.values()))
    client = connection.client
    for start in range(0, len(ids), 200):
        try:
            response = connection.call(partial(
                client.mget, index=index, ids=ids[start : start + 200],
                source_includes=spec.source_fields()))
        except ApiError as exc:
            raise IndexFailure(f"reading documents for the report failed: {describe(exc)}") \
                from exc
        for doc in response.body["docs"]:
            if doc.get("found"):
                item = item_of(doc, spec)
                if item.doc is not None:
                    texts[item.doc_id] = fingerprinter.text_of(item.doc)[0]
    return texts
