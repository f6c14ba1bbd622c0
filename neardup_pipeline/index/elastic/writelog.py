"""The write log: one total order of the fingerprint writes of every process sharing an index.

Why: a fingerprint becomes searchable only once its writer flushed and refreshed it, so two
crawler processes that check near-duplicate twins within that window would both find nothing
and both keep their page. Each process therefore, after deciding a page (or a batch) and before
its verdict leaves, appends the entries it wrote to `<fingerprint_index>-writelog`: a `create`
of the document `_id` = the next slot number. `create` is atomic per `_id` (409 when the slot is
taken), so the slots order all writers' batches, and a taken slot is read back at once with a
real-time `mget` (no refresh needed). A process that claims slot T has then read every slot
between its previous claim and T: the entries other writers published before it, which its own
lookups may not have seen. Of any two near-duplicate pages, the one whose batch holds the later
slot is thus compared with the other (verdict/deduplicator.py settles it); no timing escapes.

Each record also carries `flushed`: its writer's slots up to that number are in the fingerprint
index and searchable (flushed and refreshed), so readers keep the entries they learned from the
log only until then. A new process reads the records its peers have not flushed yet; a closing
writer appends a `closed` record. Cost for a process alone: one small `create` per batch.

The entries are the log's bulk, and once searchable they are in the fingerprint index too: the
writer then strips them from its records (`strip`), which keep the slot taken (a slot is never
created twice) and the doc `ids`. A reader that meets a stripped record fetches its entries from
the fingerprint index by id.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from elasticsearch import ApiError, ConflictError

from neardup_pipeline.errors import IndexFailure
from neardup_pipeline.index.elastic.connection import Connection, describe
from neardup_pipeline.index.elastic.documents import now
from neardup_pipeline.index.elastic.templates import IndexSpec, prepare_index

READ_AHEAD = 16  # slots read per real-time mget when a claim finds its slot taken
PAGE = 5_000  # records per search page when a new process reads its peers' unflushed records


@dataclass(frozen=True)
class LogRecord:
    """One claimed slot: a writer's batch of fingerprint documents, in order."""

    slot: int
    writer: str
    flushed: int  # the writer's slots up to this one are searchable in the fingerprint index
    closed: bool
    entries: tuple[Mapping[str, Any], ...]
    claim: str = ""
    ids: tuple[str, ...] = ()  # the doc ids of its entries, kept when they are stripped

    @property
    def stripped(self) -> bool:
        """Whether its entries were taken out (they are in the fingerprint index)."""
        return len(self.ids) > len(self.entries)


def record_from(source: Mapping[str, Any]) -> LogRecord:
    return LogRecord(
        slot=int(source["slot"]),
        writer=str(source["writer"]),
        flushed=int(source.get("flushed") or 0),
        closed=bool(source.get("closed")),
        entries=tuple(source.get("entries") or ()),
        claim=str(source.get("claim") or ""),
        ids=tuple(str(i) for i in source.get("ids") or ()),
    )


class WriteLog:
    """This process's side of the write log: the highest slot it knows, and its claims."""

    def __init__(self, connection: Connection, index: str) -> None:
        self._connection = connection
        self.index = index
        self.writer = uuid.uuid4().hex
        self.head = 0  # every slot up to here has been read (or predates this process)
        self._contended = False  # the last claim found its slot taken: read before creating

    def open(self) -> list[LogRecord]:
        """Install the log, find its head, and return the records of live peers that are not
        yet searchable in the fingerprint index (this process must see them from the start)."""
        prepare_index(self._connection, IndexSpec("writelog", self.index, "neardup-writelog"))
        client = self._connection.client
        try:
            self._connection.call(partial(client.indices.refresh, index=self.index))
            top = self._connection.call(partial(
                client.search, index=self.index, size=1, sort=[{"slot": "desc"}],
                source_includes=["slot"], track_total_hits=False,
            ))
            hits = top.body["hits"]["hits"]
            self.head = int(hits[0]["_source"]["slot"]) if hits else 0
            tail = self._read_ahead(self.head + 1)  # written since the refresh
            self.head = tail[-1].slot if tail else self.head
            records = {r.slot: r for r in [*self._unflushed(), *tail] if r.writer != self.writer}
            return [records[slot] for slot in sorted(records)]
        except ApiError as exc:
            raise IndexFailure(f"cannot read the write log {self.index!r}: {describe(exc)}") \
                from exc

    def claim(
        self, entries: Sequence[Mapping[str, Any]], flushed: int, closed: bool = False,
        searchable: bool = False,
    ) -> tuple[int, list[LogRecord]]:
        """Append `entries` at the next free slot: (that slot, the peers' records read on the
        way, in slot order). A create answered 409 means a peer took the slot: read it (and the
        following ones) and try the next. `searchable`: the entries are flushed already, and
        the record holds their ids alone."""
        claim = uuid.uuid4().hex  # tells our own record from a peer's after a retried create
        learned: list[LogRecord] = []
        client = self._connection.client
        if self._contended:  # peers are writing: one read saves a refused create
            for record in self._read_ahead(self.head + 1):
                self.head = record.slot
                learned.append(record)
        self._contended = False
        while True:
            slot = self.head + 1
            document = {
                "slot": slot, "writer": self.writer, "claim": claim, "flushed": flushed,
                "closed": closed, "entries": [] if searchable else list(entries),
                "ids": [str(entry["doc_id"]) for entry in entries], "added": now(),
            }
            try:
                self._connection.call(partial(
                    client.create, index=self.index, id=str(slot), document=document,
                    filter_path="result",
                ))
            except ConflictError:
                self._contended = True
                taken = self._read_ahead(slot)
                if not taken:
                    raise IndexFailure(
                        f"write log {self.index!r}: slot {slot} is taken but cannot be read"
                    ) from None
                for record in taken:
                    self.head = record.slot
                    if record.claim == claim:  # ours: the first attempt's answer was lost
                        return record.slot, learned
                    learned.append(record)
                continue
            except ApiError as exc:
                raise IndexFailure(f"write log claim failed: {describe(exc)}") from exc
            self.head = slot
            return slot, learned

    def strip(self, slots: Sequence[int]) -> None:
        """Take the entries out of these records of this process: they are searchable now."""
        if not slots:
            return
        body: list[dict[str, Any]] = []
        for slot in slots:
            body += [{"update": {"_index": self.index, "_id": str(slot)}},
                     {"doc": {"entries": []}}]
        client = self._connection.client
        try:
            response = self._connection.call(partial(
                client.bulk, operations=body, filter_path="errors,items.*.error"))
        except ApiError as exc:
            raise IndexFailure(f"stripping the write log failed: {describe(exc)}") from exc
        if response.body.get("errors"):
            raise IndexFailure(f"stripping the write log failed: {response.body['items'][:1]}")

    def _read_ahead(self, start: int) -> list[LogRecord]:
        """The records of the consecutive taken slots from `start` (real-time: no refresh)."""
        found: list[LogRecord] = []
        client = self._connection.client
        while True:
            ids = [str(s) for s in range(start, start + READ_AHEAD)]
            try:
                response = self._connection.call(
                    partial(client.mget, index=self.index, ids=ids, realtime=True)
                )
            except ApiError as exc:
                raise IndexFailure(f"reading the write log failed: {describe(exc)}") from exc
            for doc in response.body["docs"]:
                if not doc.get("found"):
                    return found
                found.append(record_from(doc["_source"]))
            start += READ_AHEAD

    def _unflushed(self) -> list[LogRecord]:
        """Records of peers that have not closed, past the slot each says it has flushed."""
        client = self._connection.client
        latest = self._connection.call(partial(
            client.search, index=self.index, size=10_000, collapse={"field": "writer"},
            sort=[{"slot": "desc"}], source_includes=["writer", "flushed", "closed"],
            track_total_hits=False,
        ))
        clauses = [
            {"bool": {"filter": [{"term": {"writer": s["writer"]}},
                                 {"range": {"slot": {"gt": int(s.get("flushed") or 0)}}}]}}
            for s in (hit["_source"] for hit in latest.body["hits"]["hits"])
            if not s.get("closed") and s["writer"] != self.writer
        ]
        records: list[LogRecord] = []
        after: list[Any] | None = None
        while clauses:
            page = self._connection.call(partial(
                client.search, index=self.index, size=PAGE, sort=[{"slot": "asc"}],
                query={"bool": {"should": clauses, "minimum_should_match": 1}},
                track_total_hits=False, search_after=after,
            ))
            hits = page.body["hits"]["hits"]
            records += [record_from(hit["_source"]) for hit in hits]
            if len(hits) < PAGE:
                break
            after = hits[-1]["sort"]
        return records
