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
        self._last = threading.local()  # per thread: the roots the last `roots` confirmed

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
        recent = self._recent()  # roots a call just before confirmed: not read again
        confirmed, read_at = set(recent), getattr(self._last, "at", 0.0)
        if not recent:
            read_at = time.monotonic()
        while ask := sorted({follow(parents, name) for name in wanted} - confirmed):
            confirmed.update(ask)
            found = self._docs([f"{kind}:{name}" for name in ask for kind in "lc"])
            parents.update({doc["_source"]["name"]: doc["_source"]["parent"]
                            for key, doc in found.items() if key.startswith("l:")})
            recent.update({name: found.get(f"c:{name}") for name in ask})
        with self._lock:
            self._parents.update(parents)
        self._last.docs, self._last.at = recent, read_at
        return {name: follow(parents, name) for name in wanted}

    def link(self, child: str, parent: str) -> bool:
        self._forget_recent(child)  # no longer a root
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
        held = {root: doc["_source"] for root in wanted if (doc := known.get(root)) is not None}
        unread = [f"c:{root}" for root in wanted if root not in known]
        held.update({src["root"]: src for src in self._sources(unread).values()})
        return {root: (src["rank"], src["doc_id"]) for root, src in held.items()}

    def _recent(self) -> dict[str, dict[str, Any] | None]:
        """The roots the last `roots` call of this thread confirmed, each with its canonical's
        document (None: it holds none): good for the calls that follow at once (a join's,
        milliseconds apart), not once they are a second old. This process's own writes put
        them right (`_forget_recent`)."""
        last: dict[str, dict[str, Any] | None] = getattr(self._last, "docs", {})
        fresh = time.monotonic() - getattr(self._last, "at", 0.0) < _LAST_READ_SECONDS
        return dict(last) if fresh else {}

    def _forget_recent(self, *names: str) -> None:
        """Drop what this process's write made stale: these names (none named: all)."""
        docs = getattr(self._last, "docs", {})
        self._last.docs = {n: d for n, d in docs.items() if n not in names} if names else {}

    def offer(self, root: str, offer: Offer) -> None:
        recent = self._recent()
        read = (recent[root] or {}) if root in recent else None  # {}: read, and absent
        self._forget_recent(root)

        def better(held: dict[str, Any] | None) -> dict[str, Any] | None:
            if held is not None and (held["rank"], held["doc_id"]) <= offer:
                return None
            return {"kind": "canonical", "root": root, "rank": offer[0], "doc_id": offer[1]}

        self._update(f"c:{root}", better, read)

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
                                                 dict[str, Any] | None],
                read: dict[str, Any] | None = None) -> None:
        """Write `change(held)` over the document `key` unless it returns None; a concurrent
        write in between makes the write fail, and it is read and changed again. `read`: the
        document as just read (`{}`: absent), tried before reading it."""
        self._ensure_ready()
        client = self._connection.client
        while True:
            if read is not None:
                body, read = read, None
            else:
                body = self._connection.call(partial(
                    client.options(ignore_status=404).get, index=self.index, id=es_id(key),
                    realtime=True)).body
            source = body.get("_source") if body.get("found") else None
            document = change(source)
            if document is None:
                return
            concurrency = ({"if_seq_no": body["_seq_no"],
                            "if_primary_term": body["_primary_term"]}
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
        return {key: doc["_source"] for key, doc in self._docs(keys).items()}

    def _docs(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        """`_sources` with each document's `_seq_no` and `_primary_term` (for a later write)."""
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
                    found[by_id[doc["_id"]]] = doc
        return found
