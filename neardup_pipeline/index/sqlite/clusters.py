"""The cluster store of the SQLite index (index/clusters.py): links, canonicals, declarations
in three small tables of the same file, written in the index's transactions.

A link is inserted only where its name has none (`ON CONFLICT DO NOTHING`), so two processes
sharing the file never replace each other's links; a canonical is replaced only by a smaller
rank, compared in the statement that writes it.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable

from neardup_pipeline.index.clusters import Offer, follow
from neardup_pipeline.index.sqlite.bands import select_in
from neardup_pipeline.index.sqlite.failures import translated


class SqliteClusters:
    """The forest in `cluster_links`, canonicals in `cluster_canonicals`, declarations in
    `declarations`; `lock` and `wrote` are the index's (its lock, its commit policy)."""

    def __init__(
        self, db: sqlite3.Connection, lock: threading.Lock, wrote: Callable[[], None],
        path: str = ":memory:",
    ) -> None:
        self._db = db
        self._lock = lock
        self._wrote = wrote
        self.path = path  # named by the errors (sqlite/failures.py)

    @translated
    def roots(self, names: Iterable[str]) -> dict[str, str]:
        wanted = list(dict.fromkeys(names))
        with self._lock:
            parent: dict[str, str] = {}
            ask = wanted
            while ask:
                found = dict(select_in(
                    self._db, "SELECT name, parent FROM cluster_links WHERE name IN ({})", ask))
                parent.update(found)
                ask = [p for p in dict.fromkeys(found.values()) if p not in parent]
            roots = {name: follow(parent, name) for name in wanted}
            far = [(root, name) for name, root in roots.items()
                   if name in parent and parent[name] != root]
            if far:  # path compression: each name on a long path points at its root
                self._db.executemany(
                    "UPDATE cluster_links SET parent = ? WHERE name = ?", far)
                self._wrote()
        return roots

    @translated
    def link(self, child: str, parent: str) -> bool:
        with self._lock:
            linked = self._db.execute(
                "INSERT INTO cluster_links (name, parent) VALUES (?, ?)"
                " ON CONFLICT (name) DO NOTHING", (child, parent)).rowcount == 1
            self._wrote()
        return linked

    @translated
    def canonicals(self, roots: Iterable[str]) -> dict[str, Offer]:
        with self._lock:
            return {root: (rank, doc_id) for root, rank, doc_id in select_in(
                self._db, "SELECT root, rank, doc_id FROM cluster_canonicals WHERE root IN ({})",
                list(dict.fromkeys(roots)))}

    @translated
    def offer(self, root: str, offer: Offer) -> None:
        with self._lock:
            self._db.execute(
                "INSERT INTO cluster_canonicals (root, rank, doc_id) VALUES (?, ?, ?)"
                " ON CONFLICT (root) DO UPDATE SET rank = excluded.rank, doc_id = excluded.doc_id"
                " WHERE (excluded.rank, excluded.doc_id) < (cluster_canonicals.rank,"
                " cluster_canonicals.doc_id)", (root, *offer))
            self._wrote()

    @translated
    def reset(self, root: str, offer: Offer | None) -> None:
        with self._lock:
            if offer is None:
                self._db.execute("DELETE FROM cluster_canonicals WHERE root = ?", (root,))
            else:
                self._db.execute(
                    "INSERT OR REPLACE INTO cluster_canonicals (root, rank, doc_id)"
                    " VALUES (?, ?, ?)", (root, *offer))
            self._wrote()

    @translated
    def declare(self, doc_id: str, url: str) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR IGNORE INTO declarations (url, doc_id) VALUES (?, ?)", (url, doc_id))
            self._wrote()

    @translated
    def declarers(self, urls: Iterable[str]) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        with self._lock:
            for url, doc_id in select_in(
                    self._db, "SELECT url, doc_id FROM declarations WHERE url IN ({})",
                    list(dict.fromkeys(urls))):
                found.setdefault(url, set()).add(doc_id)
        return found
