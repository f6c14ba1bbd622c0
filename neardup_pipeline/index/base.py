"""The fingerprint index contract every backend fulfils (memory, SQLite, Elasticsearch)."""

from __future__ import annotations

import atexit
import json
import logging
import threading
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeGuard, TypeVar, runtime_checkable

from neardup_pipeline.index.clusters import ClusterStore

logger = logging.getLogger(__name__)

IndexT = TypeVar("IndexT")


@dataclass(frozen=True)
class IndexEntry:
    """One stored document: its encoded signatures, lookup keys per method, and metadata.
    An index searches by the keys but need not give them back: an entry it returns may lack
    some or all (their methods make them again from the signatures).

    meta carries at least `cluster` (id of the group's original); also `url`, `duplicate_of`,
    `similarity`, `method` where known.
    """

    doc_id: str
    signatures: dict[str, Any]
    keys: dict[str, list[str]]
    meta: dict[str, Any] = field(default_factory=dict)


class FingerprintIndex(Protocol):
    """Stores fingerprints and finds candidates that share a lookup key; `clusters` keeps
    which clusters were joined and their canonicals (index/clusters.py)."""

    @property
    def clusters(self) -> ClusterStore: ...

    def ensure_params(self, params: Mapping[str, Any]) -> None:
        """Record the fingerprint parameters of a new index; refuse an index built with others."""
        ...

    def add(self, entry: IndexEntry) -> None:
        """Store (or replace, for a known doc_id) one document; visible to the next lookup."""
        ...

    def candidates(self, keys: Mapping[str, Sequence[str]]) -> set[str]:
        """Ids of stored documents sharing at least one key of the same method."""
        ...

    def get(self, ids: Iterable[str]) -> dict[str, IndexEntry]:
        """Stored entries of the given ids (unknown ids are absent from the result)."""
        ...

    def count(self) -> int: ...

    # Document frequency (the rarewords method): counted per doc id, so a re-add replaces its
    # words instead of counting them twice.
    def add_document_frequencies(self, doc_id: str, word_hashes: Iterable[int]) -> None:
        """Count the distinct 64-bit word hashes of `doc_id` in DF (replacing its earlier words)."""
        ...

    def document_frequencies(
        self, word_hashes: Iterable[int], exclude: str | None = None
    ) -> dict[int, int]:
        """DF of every given word among the counted documents, `exclude` left out."""
        ...

    def document_count(self, exclude: str | None = None) -> int:
        """Documents counted in DF, `exclude` left out."""
        ...

    def flush(self) -> None:
        """Make every write durable (and, for a shared index, visible to other processes)."""
        ...

    def close(self) -> None:
        """Make every write durable and release the backend; a second call does nothing."""
        ...

    def __enter__(self: IndexT) -> IndexT: ...

    def __exit__(self, *exc: object) -> None: ...


class ClosesOnExit:
    """`with open_index(...) as index:`: the index is closed (its writes made durable) however
    the block ends. Backends inherit this and define `close`."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self: IndexT) -> IndexT:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# Indexes still open, closed when the interpreter exits: a script that never closes its index
# keeps what it wrote. Weak references, so an index dropped by its owner is not kept alive.
_open_indexes: weakref.WeakSet[ClosesOnExit] = weakref.WeakSet()
_exit_hook_lock = threading.Lock()
_exit_hook_registered = False


def close_at_exit(index: ClosesOnExit) -> None:
    """Close `index` when the interpreter exits, unless it is closed or gone by then."""
    global _exit_hook_registered
    with _exit_hook_lock:
        _open_indexes.add(index)
        if not _exit_hook_registered:
            atexit.register(_close_open_indexes)
            _exit_hook_registered = True


def closed_before_exit(index: ClosesOnExit) -> None:
    """`index` was closed: nothing left to do for it at exit."""
    _open_indexes.discard(index)


def _close_open_indexes() -> None:
    for index in list(_open_indexes):
        try:
            index.close()
        except Exception:  # at exit there is no caller left to raise to
            logger.exception("neardup: closing %r at interpreter exit failed", index)


def cluster_store(index: FingerprintIndex) -> ClusterStore:
    """The cluster store of `index`."""
    return index.clusters


def candidates_many(
    index: FingerprintIndex, keys: Sequence[Mapping[str, Sequence[str]]]
) -> list[set[str]]:
    """`candidates` of many documents, in order: one round trip on a backend that can batch
    (a `candidates_many` method, Elasticsearch's msearch), else one lookup each.

    Declared on the class, not found on the instance: a wrapper that forwards unknown attributes
    (the batch's read-through view) must not hand the batch to the index it wraps and skip its
    own part.
    """
    if _declares_batch(index):
        return index.candidates_many(keys)
    return [index.candidates(k) for k in keys]


@dataclass(frozen=True)
class Membership:
    """Where a stored document belongs: its cluster (the group's original) and, when the two
    were compared, its similarity per method to that original and the content hash the
    original had then (a changed original makes the similarities stale)."""

    cluster: str
    to_original: Mapping[str, float] = field(default_factory=dict)
    original_hash: str | None = None


def cluster_of(entry: IndexEntry) -> str:
    """The cluster an entry belongs to (an original is its own)."""
    return str(entry.meta.get("cluster") or entry.doc_id)


def membership_of(entry: IndexEntry) -> Membership:
    """An entry's membership, read from its metadata."""
    return membership_from(entry.doc_id, entry.meta.get("cluster"), entry.meta.get("to_original"))


def membership_from(doc_id: str, cluster: object, to_original: object) -> Membership:
    """A membership from stored values: `to_original` as `to_original_meta` wrote it."""
    cluster_id = str(cluster or doc_id)
    if not isinstance(to_original, Mapping):
        return Membership(cluster_id)
    similarity = to_original.get("similarity")
    return Membership(
        cluster_id,
        {str(k): float(v) for k, v in similarity.items()} if isinstance(similarity, Mapping)
        else {},
        str(to_original.get("content_hash") or "") or None,
    )


def to_original_meta(similarity: Mapping[str, float], original_hash: str | None) -> dict[str, Any]:
    """The stored form of a member's similarity to its cluster's original."""
    return {"content_hash": original_hash, "similarity": dict(similarity)}


def memberships(index: FingerprintIndex, ids: Iterable[str]) -> dict[str, Membership]:
    """Membership of each stored id, unknown ids left out: one light lookup on a backend with a
    `memberships` method (no signatures read), else `get`.

    Declared on the class, like `candidates_many`, so a forwarding wrapper is not bypassed.
    """
    if _declares_memberships(index):
        return index.memberships(ids)
    return {doc_id: membership_of(entry) for doc_id, entry in index.get(ids).items()}


def params_mismatch(stored: Mapping[str, Any], wanted: Mapping[str, Any]) -> str | None:
    """How two parameter sets differ, one short clause per differing value
    (`simhash k: the index has 3, the settings 2`), or None when they agree."""
    a = json.loads(json.dumps(stored, sort_keys=True))
    b = json.loads(json.dumps(wanted, sort_keys=True))
    if a == b:
        return None
    diffs = list(_differences(a, b, ()))
    shown = "; ".join(diffs[:_SHOWN_DIFFERENCES])
    more = len(diffs) - _SHOWN_DIFFERENCES
    return f"{shown}; and {more} more" if more > 0 else shown


def layout_changed(stored: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """Whether two parameter sets store signatures in different layouts (a method's `stored`
    parameters): such an index cannot be read at all, whatever settings are given."""
    def layouts(params: Mapping[str, Any]) -> dict[str, Any]:
        methods = params.get("methods")
        if not isinstance(methods, Mapping):
            return {}
        return {name: p.get("stored") for name, p in methods.items() if isinstance(p, Mapping)}
    mine, theirs = layouts(stored), layouts(wanted)
    return any(mine[name] != theirs[name] for name in mine.keys() & theirs.keys())


_SHOWN_DIFFERENCES = 4
_SHOWN_VALUE_CHARS = 40


def _differences(a: Any, b: Any, path: tuple[str, ...]) -> Iterator[str]:
    """The differing leaves of two JSON values, named by their path."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            where = (*path, key)
            if key not in a:
                yield f"{_label(where)}: the settings have it, the index not"
            elif key not in b:
                yield f"{_label(where)}: the index has it, the settings not"
            elif a[key] != b[key]:
                yield from _differences(a[key], b[key], where)
        return
    yield f"{_label(path)}: the index has {_shown(a)}, the settings {_shown(b)}"


def _label(path: tuple[str, ...]) -> str:
    """`("methods", "simhash", "k")` -> `simhash k`: a method's name says what it is."""
    parts = path[1:] if path[:1] == ("methods",) and len(path) > 1 else path
    return " ".join(parts) or "parameters"


def _shown(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= _SHOWN_VALUE_CHARS else text[: _SHOWN_VALUE_CHARS - 3] + "..."


# Optional capabilities of a backend. The pipeline tests them once, when it opens the index.


@runtime_checkable
class SupportsCandidatesMany(Protocol):
    """Looks up the candidates of many documents in one round trip (Elasticsearch's msearch)."""

    def candidates_many(self, keys: Sequence[Mapping[str, Sequence[str]]]) -> list[set[str]]: ...


@runtime_checkable
class SupportsMemberships(Protocol):
    """Reads where stored documents belong without reading their signatures."""

    def memberships(self, ids: Iterable[str]) -> dict[str, Membership]: ...


@runtime_checkable
class SupportsPendingWrites(Protocol):
    """Buffers writes that a closing crawl can take over (to spool them) and queue again."""

    def take_pending(self) -> list[dict[str, Any]]:
        """Hand over the unsent writes and forget them here."""
        ...

    def requeue(self, actions: Iterable[Mapping[str, Any]]) -> None:
        """Queue writes taken earlier; they are sent with the next flush."""
        ...


@runtime_checkable
class SupportsPublish(Protocol):
    """A shared index whose writers are put in one order (Elasticsearch's write log)."""

    def publish(self) -> list[IndexEntry]:
        """Put what this process added since the last call in the order, and return what
        other writers put there before it that this process's lookups may have missed."""
        ...


@runtime_checkable
class SupportsPing(Protocol):
    """A remote backend that can say cheaply whether it answers."""

    def ping(self, timeout: float) -> bool: ...


@runtime_checkable
class SupportsCounters(Protocol):
    """Counts what went wrong (retries, refusals), for the crawl's stats."""

    @property
    def counters(self) -> Mapping[str, int]: ...


def _declares_batch(index: object) -> TypeGuard[SupportsCandidatesMany]:
    return issubclass(type(index), SupportsCandidatesMany)


def _declares_memberships(index: object) -> TypeGuard[SupportsMemberships]:
    return issubclass(type(index), SupportsMemberships)


class ForwardingIndex(ClosesOnExit):
    """A view over another index that forwards the whole contract to it; subclasses override
    what the view changes (a batch's prefetched lookups, a warm-up's in-memory writes). Every
    method is declared, so capability checks see the view's own methods, never the wrapped
    index's through attribute lookup."""

    def __init__(self, index: FingerprintIndex) -> None:
        self.index = index

    @property
    def clusters(self) -> ClusterStore:
        return self.index.clusters

    def ensure_params(self, params: Mapping[str, Any]) -> None:
        self.index.ensure_params(params)

    def add(self, entry: IndexEntry) -> None:
        self.index.add(entry)

    def candidates(self, keys: Mapping[str, Sequence[str]]) -> set[str]:
        return self.index.candidates(keys)

    def get(self, ids: Iterable[str]) -> dict[str, IndexEntry]:
        return self.index.get(ids)

    def memberships(self, ids: Iterable[str]) -> dict[str, Membership]:
        return memberships(self.index, ids)

    def count(self) -> int:
        return self.index.count()

    def add_document_frequencies(self, doc_id: str, word_hashes: Iterable[int]) -> None:
        self.index.add_document_frequencies(doc_id, word_hashes)

    def document_frequencies(
        self, word_hashes: Iterable[int], exclude: str | None = None
    ) -> dict[int, int]:
        return self.index.document_frequencies(word_hashes, exclude)

    def document_count(self, exclude: str | None = None) -> int:
        return self.index.document_count(exclude)

    def flush(self) -> None:
        self.index.flush()

    def close(self) -> None:
        """The wrapped index belongs to the caller."""
