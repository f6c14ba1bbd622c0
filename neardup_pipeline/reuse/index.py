"""The passage index contract (fingerprint -> source, position) and its in-memory form.

Unlike the near-duplicate index (index/base.py), whose keys only name candidate documents, a
reuse lookup needs where each fingerprint sits in its source, and the source's words to align
on: a small contract of its own, kept by memory (here) and SQLite (store.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from neardup_pipeline.errors import IndexParamsError
from neardup_pipeline.reuse.tokens import I64Array, Tokens
from neardup_pipeline.sketch.rabin import U64Array


@dataclass(frozen=True)
class Postings:
    """Every stored occurrence of the queried hashes: `query[n]` indexes the hash asked for,
    found in source `source[n]` at word `position[n]`."""

    query: I64Array
    source: I64Array
    position: I64Array


class PassageIndex(Protocol):
    """Sources' winnowed fingerprints with their positions, and each source's words."""

    def ensure_params(self, params: Mapping[str, object]) -> None:
        """Record the fingerprint parameters; refuse an index built with others."""
        ...

    def add(self, doc_id: str, tokens: Tokens, fingerprints: I64Array, text: str) -> bool:
        """Store a source (its kept fingerprint positions); False, storing nothing, when a
        source of that id is already there (the first one stays)."""
        ...

    def languages(self) -> set[str | None]:
        """The languages the stored sources were read in."""
        ...

    def postings(self, hashes: U64Array, language: str | None) -> Postings:
        """Where the hashes occur among the sources read in `language`."""
        ...

    def source(self, number: int) -> tuple[str, Tokens]:
        """A stored source's id and words."""
        ...

    def count(self) -> int: ...

    def close(self) -> None: ...


class _Postings:
    """One language's postings: sorted hashes and their (source, position) rows; added ones
    wait in `pending` until the next lookup sorts them in."""

    def __init__(self) -> None:
        self.hashes: U64Array = np.empty(0, dtype=np.uint64)
        self.sources: I64Array = np.empty(0, dtype=np.int64)
        self.positions: I64Array = np.empty(0, dtype=np.int64)
        self.pending: list[tuple[U64Array, I64Array, I64Array]] = []

    def lookup(self, hashes: U64Array) -> Postings:
        if self.pending:
            self._merge()
        left = np.searchsorted(self.hashes, hashes, side="left")
        counts = np.searchsorted(self.hashes, hashes, side="right") - left
        query = np.repeat(np.arange(len(hashes), dtype=np.int64), counts)
        # the rows of each hash's run: its start plus 0, 1, ... count - 1
        starts = np.repeat(left - np.cumsum(counts) + counts, counts)
        rows = starts + np.arange(len(query), dtype=np.int64)
        return Postings(query, self.sources[rows], self.positions[rows])

    def _merge(self) -> None:
        hashes = np.concatenate([self.hashes, *(p[0] for p in self.pending)])
        sources = np.concatenate([self.sources, *(p[1] for p in self.pending)])
        positions = np.concatenate([self.positions, *(p[2] for p in self.pending)])
        order = np.argsort(hashes, kind="stable")
        self.hashes, self.sources, self.positions = hashes[order], sources[order], positions[order]
        self.pending = []


class MemoryPassageIndex:
    """Postings in sorted numpy arrays, one set per language, sorted on the first lookup after
    an add: sources are added in bulk, then suspects looked up (one binary search a hash)."""

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._sources: list[tuple[str, Tokens]] = []
        self._postings: dict[str | None, _Postings] = {}
        self._params: dict[str, object] | None = None

    def ensure_params(self, params: Mapping[str, object]) -> None:
        if self._params is None:
            self._params = dict(params)
        elif self._params != dict(params):
            raise IndexParamsError(f"index built with {self._params}, asked for {dict(params)}")

    def add(self, doc_id: str, tokens: Tokens, fingerprints: I64Array, text: str) -> bool:
        if doc_id in self._ids:
            return False
        number = len(self._sources)
        self._ids[doc_id] = number
        self._sources.append((doc_id, tokens))
        postings = self._postings.setdefault(tokens.language, _Postings())
        postings.pending.append((tokens.shingles[fingerprints],
                                 np.full(len(fingerprints), number, dtype=np.int64),
                                 fingerprints))
        return True

    def languages(self) -> set[str | None]:
        return set(self._postings)

    def postings(self, hashes: U64Array, language: str | None) -> Postings:
        found = self._postings.get(language)
        if found is None:
            empty = np.empty(0, dtype=np.int64)
            return Postings(empty, empty, empty)
        return found.lookup(hashes)

    def source(self, number: int) -> tuple[str, Tokens]:
        return self._sources[number]

    def count(self) -> int:
        return len(self._sources)

    def close(self) -> None:
        self._postings = {}
