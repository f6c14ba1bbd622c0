"""Reads of the fingerprint index: candidate searches (`terms` filters, one or many per round
trip) and stored documents by id (`mget`)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from typing import Any

from elasticsearch import ApiError

from neardup_pipeline.errors import IndexFailure
from neardup_pipeline.index.elastic.connection import Connection, describe
from neardup_pipeline.index.elastic.documents import es_id, keys_field

log = logging.getLogger(__name__)

MAX_CANDIDATES = 10_000  # = the default index.max_result_window
MGET_CHUNK = 1000
MSEARCH_CHUNK = 200  # candidate lookups per msearch request

Keys = Mapping[str, Sequence[str]]


def candidate_query(keys: Keys) -> dict[str, Any] | None:
    """The filter-only query for "shares a key of the same method" (None: no keys at all)."""
    should = [
        {"terms": {keys_field(method): list(dict.fromkeys(values))}}
        for method, values in keys.items()
        if values
    ]
    if not should:
        return None
    return {"bool": {"filter": [{"bool": {"should": should, "minimum_should_match": 1}}]}}


class FingerprintReader:
    """Searches and fetches on one fingerprint index; warns once when a lookup is truncated."""

    def __init__(self, connection: Connection, index: str, max_candidates: int) -> None:
        self._connection = connection
        self.index = index
        self.max_candidates = max_candidates
        self._warned_truncated = False

    def candidates(self, query: dict[str, Any], found: set[str], skip: set[str]) -> None:
        """Add the ids matching `query` to `found`, except those in `skip`."""
        client = self._connection.client
        try:
            response = self._connection.call(
                partial(client.search, index=self.index, request_cache=False, **self._body(query))
            )
        except ApiError as exc:
            raise IndexFailure(f"candidate lookup failed: {describe(exc)}") from exc
        self._collect(response.body["hits"], query, found, skip)

    def candidates_many(
        self, queries: Sequence[dict[str, Any] | None], results: list[set[str]], skip: set[str]
    ) -> None:
        """`candidates` of each query into the result at its position, per MSEARCH_CHUNK in one
        `msearch` round trip; a None query asks nothing."""
        asked = [(n, q) for n, q in enumerate(queries) if q is not None]
        for start in range(0, len(asked), MSEARCH_CHUNK):
            chunk = asked[start : start + MSEARCH_CHUNK]
            searches: list[Mapping[str, Any]] = []
            for _, query in chunk:
                searches.append({"index": self.index, "request_cache": False})
                searches.append(self._body(query))
            try:
                response = self._connection.call(
                    partial(self._connection.client.msearch, searches=searches)
                )
            except ApiError as exc:
                raise IndexFailure(f"candidate lookup failed: {describe(exc)}") from exc
            for (n, query), answer in zip(chunk, response.body["responses"], strict=True):
                if "error" in answer:  # one failed search fails the batch, as one lookup would
                    error = answer["error"]
                    reason = error.get("reason") if isinstance(error, dict) else error
                    raise IndexFailure(
                        f"candidate lookup failed: status {answer.get('status')}: {reason}"
                    )
                self._collect(answer["hits"], query, results[n], skip)

    def _body(self, query: dict[str, Any], source: bool = False) -> dict[str, Any]:
        """A filter-only search returning doc ids from doc values: no stored fields are read
        (loading `_source` or `_id` per hit doubles the latency at a million fingerprints), no
        total counted. `source`: read doc_id from `_source` (ids beyond the keyword's
        ignore_above)."""
        body: dict[str, Any] = {
            "query": query,
            "size": self.max_candidates,
            "track_total_hits": False,
            "sort": ["_doc"],  # no scoring
        }
        if source:
            body["_source"] = {"includes": ["doc_id"]}
        else:
            body.update(_source=False, stored_fields=["_none_"], docvalue_fields=["doc_id"])
        return body

    def _collect(
        self, hits: Mapping[str, Any], query: dict[str, Any], found: set[str], skip: set[str]
    ) -> None:
        """Add a lookup's hits to `found`, except those in `skip` (pending entries: their keys
        may have changed, and the write cache already answered for them)."""
        if any("doc_id" not in hit.get("fields", {}) for hit in hits["hits"]):
            # a doc id longer than the keyword's ignore_above has no doc value: ask _source
            try:
                response = self._connection.call(
                    partial(self._connection.client.search, index=self.index,
                            request_cache=False, **self._body(query, source=True))
                )
            except ApiError as exc:
                raise IndexFailure(f"candidate lookup failed: {describe(exc)}") from exc
            hits = {"hits": [{"fields": {"doc_id": [hit["_source"]["doc_id"]]}}
                             for hit in response.body["hits"]["hits"]]}
        if len(hits["hits"]) >= self.max_candidates and not self._warned_truncated:
            self._warned_truncated = True
            log.warning(
                "neardup: more than %d candidates share a key; only the first %d are verified",
                self.max_candidates,
                self.max_candidates,
            )
        for hit in hits["hits"]:
            doc_id = hit["fields"]["doc_id"][0]
            if doc_id not in skip:
                found.add(doc_id)

    def sources(
        self, ids: Sequence[str], fields: list[str] | None = None
    ) -> Iterable[Mapping[str, Any]]:
        """`_source` (or its `fields`) of each stored fingerprint document among `ids`."""
        for start in range(0, len(ids), MGET_CHUNK):
            chunk = ids[start : start + MGET_CHUNK]
            by_es_id = {es_id(doc_id): doc_id for doc_id in chunk}
            try:
                response = self._connection.call(
                    partial(self._connection.client.mget, index=self.index, ids=list(by_es_id),
                            source_includes=fields)
                )
            except ApiError as exc:
                raise IndexFailure(f"fetching stored fingerprints failed: {describe(exc)}") from exc
            for doc in response.body["docs"]:
                if doc.get("found") and by_es_id.get(doc["_id"]) == doc["_source"].get("doc_id"):
                    yield doc["_source"]  # the check guards the sha256 _id mapping
