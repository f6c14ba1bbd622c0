"""Document frequency (rarewords) in Elasticsearch: a side index, `<fingerprint_index>-df`.

One document per counted page (mapping in `es_mappings/df.json`, created on first use), `_id` =
the page's, holding its distinct word hashes as a `keyword` array. DF is a `terms` aggregation
over it, never a stored counter: the server has no painless, so no scripted upsert could
increment one safely, while a page document replaced by `index` (re-add) or written by two
processes at once cannot double count. Cost: every distinct word of every page is indexed once
more (about 8 bytes of term plus postings per word), and a lookup is one aggregation filtered to
the page's words. DF of pages queued but not yet searchable is counted in a local MemoryIndex.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import Any

from elasticsearch import ApiError

from neardup_pipeline.errors import IndexFailure
from neardup_pipeline.index.elastic.connection import Connection, describe
from neardup_pipeline.index.elastic.documents import es_id, now
from neardup_pipeline.index.elastic.templates import IndexSpec, prepare_index
from neardup_pipeline.index.memory import MemoryIndex

DF_CHUNK = 10_000  # words per DF aggregation: below index.max_terms_count (65,536)


class DocumentFrequencies:
    """The DF side index and the DF of the pages queued for it since the last refresh. The
    caller holds its lock around every method but `stored`."""

    def __init__(self, connection: Connection, index: str) -> None:
        self._connection = connection
        self.index = index
        self._ready = False
        self._pending = MemoryIndex()
        self._pending_ids: set[str] = set()

    def ensure_ready(self) -> None:
        """Create the side index on first use (pages-only crawls never pay for it)."""
        if not self._ready:
            prepare_index(self._connection, IndexSpec("df", self.index, "neardup-df"))
            self._ready = True

    def document(self, doc_id: str, word_hashes: Iterable[int]) -> dict[str, Any]:
        """The page's DF document (its distinct words), counted as pending until sent."""
        words = sorted({int(w) for w in word_hashes})
        source = {
            "doc_id": doc_id,
            "words": [f"{w:016x}" for w in words],
            "added": now(),
        }
        self.ensure_ready()
        self._pending.add_document_frequencies(doc_id, words)
        self._pending_ids.add(doc_id)
        return source

    def pending(
        self, wanted: list[int], exclude: str | None
    ) -> tuple[dict[int, int], int, list[str]]:
        """DF and document count of the pending pages, and the ids `stored` must leave out
        (pending ones, whose stored version is outdated, and `exclude`)."""
        self.ensure_ready()
        counts = self._pending.document_frequencies(wanted, exclude)
        documents = self._pending.document_count(exclude)
        skip = sorted(self._pending_ids | ({exclude} if exclude is not None else set()))
        return counts, documents, skip

    def stored(
        self, wanted: list[int], skip: list[str], counts: dict[int, int], documents: int
    ) -> tuple[dict[int, int], int]:
        """`counts` and `documents` plus the stored pages' DF and number, `skip` left out."""
        query = {"bool": {"must_not": [{"ids": {"values": [es_id(i) for i in skip]}}]}}
        by_hex = {f"{w:016x}": w for w in wanted}
        hexes = list(by_hex)
        client = self._connection.client
        for start in range(0, max(len(hexes), 1), DF_CHUNK):
            chunk = hexes[start : start + DF_CHUNK]
            aggs = {"df": {"filter": {"terms": {"words": chunk}}, "aggs": {"w": {"terms": {
                "field": "words", "include": chunk, "size": len(chunk)}}}}} if chunk else None
            try:
                response = self._connection.call(
                    partial(client.search, index=self.index, query=query, size=0,
                            aggs=aggs, track_total_hits=True, request_cache=False)
                )
            except ApiError as exc:
                raise IndexFailure(f"document frequency lookup failed: {describe(exc)}") from exc
            if start == 0:
                documents += int(response.body["hits"]["total"]["value"])
            if chunk:
                for bucket in response.body["aggregations"]["df"]["w"]["buckets"]:
                    word = by_hex[bucket["key"]]
                    counts[word] = counts.get(word, 0) + int(bucket["doc_count"])
        return counts, documents

    def sent(self, doc_ids: Iterable[str]) -> None:
        """These pages' DF documents are searchable now: Elasticsearch answers for them."""
        for doc_id in doc_ids:
            self._pending.remove_document_frequencies(doc_id)
            self._pending_ids.discard(doc_id)
