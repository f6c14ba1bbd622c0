"""In-process index: for tests and for one-shot CLI runs."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from neardup_pipeline.errors import IndexParamsError
from neardup_pipeline.index.base import (
    ClosesOnExit,
    IndexEntry,
    Membership,
    membership_of,
    params_mismatch,
)
from neardup_pipeline.index.clusters import MemoryClusters


class MemoryIndex(ClosesOnExit):
    """Dicts of entries and of key -> ids; nothing survives the process."""

    def __init__(self) -> None:
        self._entries: dict[str, IndexEntry] = {}
        # method -> key -> ids: a page's keys are looked up without a tuple made for each. A key
        # of one page (most passage and band keys) holds its id alone: no set made for it.
        self._postings: defaultdict[str, dict[str, str | set[str]]] = defaultdict(dict)
        self._params: dict[str, Any] | None = None
        self._doc_words: dict[str, frozenset[int]] = {}  # DF: each document's distinct words
        self._df: dict[int, int] = {}
        self._lock = threading.Lock()
        self.clusters = MemoryClusters()

    def ensure_params(self, params: Mapping[str, Any]) -> None:
        if self._params is None:
            self._params = dict(params)
        elif (diff := params_mismatch(self._params, params)) is not None:
            raise IndexParamsError(f"memory index built with other parameters: {diff}")

    def add(self, entry: IndexEntry) -> None:
        with self._lock:
            self._remove(entry.doc_id)
            self._entries[entry.doc_id] = entry
            doc_id = entry.doc_id
            for method, keys in entry.keys.items():
                postings = self._postings[method]
                for key in keys:
                    ids = postings.setdefault(key, doc_id)
                    if ids == doc_id:
                        continue
                    if isinstance(ids, str):
                        postings[key] = {ids, doc_id}
                    else:
                        ids.add(doc_id)

    def remove(self, doc_id: str) -> None:
        """Forget a document (the Elasticsearch write cache drops entries once searchable)."""
        with self._lock:
            self._remove(doc_id)

    def _remove(self, doc_id: str) -> None:
        old = self._entries.pop(doc_id, None)
        if old is None:
            return
        for method, keys in old.keys.items():
            postings = self._postings[method]
            for key in keys:
                ids = postings.get(key)
                if ids is None:
                    continue
                if isinstance(ids, str):
                    if ids == doc_id:
                        del postings[key]
                    continue
                ids.discard(doc_id)
                if len(ids) <= 1:
                    if ids:
                        postings[key] = ids.pop()
                    else:
                        del postings[key]

    def candidates(self, keys: Mapping[str, Sequence[str]]) -> set[str]:
        found: set[str] = set()
        with self._lock:
            for method, method_keys in keys.items():
                postings = self._postings.get(method)
                if postings is None:
                    continue
                for key in method_keys:
                    ids = postings.get(key)
                    if ids is None:
                        continue
                    if isinstance(ids, str):
                        found.add(ids)
                    else:
                        found |= ids
        return found

    def get(self, ids: Iterable[str]) -> dict[str, IndexEntry]:
        with self._lock:
            return {i: self._entries[i] for i in ids if i in self._entries}

    def memberships(self, ids: Iterable[str]) -> dict[str, Membership]:
        with self._lock:
            return {i: membership_of(self._entries[i]) for i in ids if i in self._entries}

    def count(self) -> int:
        return len(self._entries)

    def add_document_frequencies(self, doc_id: str, word_hashes: Iterable[int]) -> None:
        words = frozenset(int(w) for w in word_hashes)
        with self._lock:
            self._forget(doc_id)
            self._doc_words[doc_id] = words
            df = self._df
            for w in words:
                df[w] = df.get(w, 0) + 1

    def document_frequencies(
        self, word_hashes: Iterable[int], exclude: str | None = None
    ) -> dict[int, int]:
        with self._lock:
            own = self._doc_words.get(exclude, frozenset()) if exclude is not None else frozenset()
            return {
                int(w): self._df.get(int(w), 0) - (int(w) in own) for w in word_hashes
            }

    def document_count(self, exclude: str | None = None) -> int:
        with self._lock:
            return len(self._doc_words) - (exclude is not None and exclude in self._doc_words)

    def remove_document_frequencies(self, doc_id: str) -> None:
        """Forget a document's words (the Elasticsearch write cache drops sent entries)."""
        with self._lock:
            self._forget(doc_id)

    def _forget(self, doc_id: str) -> None:
        df = self._df
        for w in self._doc_words.pop(doc_id, frozenset()):
            if df[w] <= 1:
                del df[w]
            else:
                df[w] -= 1

    def flush(self) -> None:
        """Nothing to persist."""

    def close(self) -> None:
        """Nothing to release."""
