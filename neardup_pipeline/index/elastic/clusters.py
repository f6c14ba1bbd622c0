"""The cluster store on Elasticsearch (index/clusters.py): a side index,
`<fingerprint_index>-clusters`, shared by every process writing the fingerprint index.

Three kinds of document, each read by id with real-time `mget` (no refresh, so a write of one
process is seen by the next read of another):
- `l:<name>`: the link of a cluster name to its parent, written with `create`, so a link is
  never replaced (409: another process linked that root first, and the caller resolves again);
- `c:<root>`: the root's canonical offer, replaced only by a smaller rank, under optimistic
  concurrency (`if_seq_no`: a concurrent offer makes the write fail and it is compared again);
- `d:<url>`: the ids of the documents declaring `url` canonical, appended the same way.
A link, once written, never changes, so links read before are kept in this process; the names
they end at are read again. The read of those ends fetches their canonicals in the same `mget`,
and a `roots` or `canonicals` call that follows at once (a join reads a cluster's roots, then
their canonicals) takes them from there instead of reading again: the same answer a few
milliseconds older. Any read may be stale the moment it is answered (a peer links a root just
after), which the protocol already allows: after each write this process reads again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from elasticsearch import ConflictError

from neardup_pipeline.index.clusters import Offer, follow
from neardup_pipeline.index.elastic.connection import Connection
from neardup_pipeline.index.elastic.documents import es_id
from neardup_pipeline.index.elastic.templates import IndexSpec, prepare_index

_MGET_CHUNK = 1_000
_LAST_READ_SECONDS = 1.0  # how old a read the next call may take over


class ElasticClusters:
    """The forest, canonicals and declarations in the side index, made on first use."""

    def __init__(self, connection: Connection, index: str) -> None:
        self._connection = connection
        self.index = index
        self._ready = False
        self._parents: dict[str, str] = {}  # links read or written: each leads to an ancestor
        self._lock = threading.Lock()
        self._last = threading.local()  # per thread: the canonicals the last `roots` read

    def _ensure_ready(self) -> None:
        if not self._ready:
            prepare_index(self._connection, IndexSpec("clusters", self.index,
                                                      "neardup-clusters"))
            self._ready = True

    def roots(self, names: Iterable[str]) -> dict[str, str]:
        """Each name's root: links known here are followed locally, and the names they end at
        are read (a root of a moment ago may have been linked since), until every end is read
        and has no link."""
        wanted = list(dict.fromkeys(names))
        with self._lock:
            parents = dict(self._parents)
        canonicals = self._recent()  # roots a call just before confirmed: not read again
        confirmed, read_at = set(canonicals), getattr(self._last, "at", 0.0)
        if not canonicals:
            read_at = time.monotonic()
        while ask := sorted({follow(parents, name) for name in wanted} - confirmed):
            confirmed.update(ask)
            found = self._sources([f"{kind}:{name}" for name in ask for kind in "lc"])
            parents.update({src["name"]: src["parent"]
                            for key, src in found.items() if key.startswith("l:")})
            for name in ask:
                held = found.get(f"c:{name}")
                canonicals[name] = None if held is None else (held["rank"], held["doc_id"])
        with self._lock:
            self._parents.update(parents)
        self._last.canonicals, self._last.at = canonicals, read_at
        return {name: follow(parents, name) for name in wanted}

    def link(self, child: str, parent: str) -> bool:
        self._forget_recent()
        self._ensure_ready()
        client = self._connection.client
        try:
            self._connection.call(partial(
                client.create, index=self.index, id=es_id(f"l:{child}"),
                document={"kind": "link", "name": child, "parent": parent},
                filter_path="result"))
        except ConflictError:
            return False
        with self._lock:
            self._parents[child] = parent
        return True

    def canonicals(self, roots: Iterable[str]) -> dict[str, Offer]:
        wanted = list(dict.fromkeys(roots))
        known = self._recent()
        result = {root: offer for root in wanted if (offer := known.get(root)) is not None}
        unread = [f"c:{root}" for root in wanted if root not in known]
        result.update({src["root"]: (src["rank"], src["doc_id"])
                       for src in self._sources(unread).values()})
        return result

    def _recent(self) -> dict[str, Offer | None]:
        """The roots the last `roots` call of this thread confirmed, with their canonicals:
        good for the reads that follow at once (a join's, milliseconds apart), never after a
        write of this process (`_forget_recent`), nor once they are a second old."""
        last: dict[str, Offer | None] = getattr(self._last, "canonicals", {})
        fresh = time.monotonic() - getattr(self._last, "at", 0.0) < _LAST_READ_SECONDS
        return dict(last) if fresh else {}

    def _forget_recent(self) -> None:
        self._last.canonicals = {}

    def offer(self, root: str, offer: Offer) -> None:
        self._forget_recent()
        def better(held: dict[str, Any] | None) -> dict[str, Any] | None:
            if held is not None and (held["rank"], held["doc_id"]) <= offer:
                return None
            return {"kind": "canonical", "root": root, "rank": offer[0], "doc_id": offer[1]}

        self._update(f"c:{root}", better)

    def reset(self, root: str, offer: Offer | None) -> None:
        self._forget_recent()
        self._ensure_ready()
        client = self._connection.client
        if offer is None:
            self._connection.call(partial(client.options(ignore_status=404).delete,
                                          index=self.index, id=es_id(f"c:{root}")))
            return
        self._connection.call(partial(
            client.index, index=self.index, id=es_id(f"c:{root}"), filter_path="result",
            document={"kind": "canonical", "root": root, "rank": offer[0], "doc_id": offer[1]}))

    def declare(self, doc_id: str, url: str) -> None:
        self._forget_recent()
        def added(held: dict[str, Any] | None) -> dict[str, Any] | None:
            declarers = list(held["declarers"]) if held is not None else []
            if doc_id in declarers:
                return None
            return {"kind": "declaration", "url": url, "declarers": [*declarers, doc_id]}

        self._update(f"d:{url}", added)

    def declarers(self, urls: Iterable[str]) -> dict[str, set[str]]:
        found = self._sources([f"d:{url}" for url in dict.fromkeys(urls)])
        return {src["url"]: set(src["declarers"]) for src in found.values()}

    def _update(self, key: str, change: Callable[[dict[str, Any] | None],
                                                 dict[str, Any] | None]) -> None:
        """Write `change(held)` over the document `key` unless it returns None; a concurrent
        write in between makes the write fail, and it is read and changed again."""
        self._ensure_ready()
        client = self._connection.client
        while True:
            held = self._connection.call(partial(
                client.options(ignore_status=404).get, index=self.index, id=es_id(key),
                realtime=True))
            source = held.body.get("_source") if held.body.get("found") else None
            document = change(source)
            if document is None:
                return
            concurrency = ({"if_seq_no": held.body["_seq_no"],
                            "if_primary_term": held.body["_primary_term"]}
                           if source is not None else {"op_type": "create"})
            try:
                self._connection.call(partial(
                    client.index, index=self.index, id=es_id(key), document=document,
                    filter_path="result", **concurrency))
                return
            except ConflictError:
                continue

    def _sources(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        """The stored documents of `keys` (absent ones left out), by key, read in real time."""
        if not keys:
            return {}
        self._ensure_ready()
        client = self._connection.client
        found: dict[str, dict[str, Any]] = {}
        by_id = {es_id(key): key for key in keys}
        ids = list(by_id)
        for start in range(0, len(ids), _MGET_CHUNK):
            answer = self._connection.call(partial(
                client.mget, index=self.index, ids=ids[start:start + _MGET_CHUNK],
                realtime=True))
            for doc in answer.body["docs"]:
                if doc.get("found"):
                    found[by_id[doc["_id"]]] = doc["_source"]
        return found
