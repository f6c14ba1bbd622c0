"""Fingerprints staged by slices for the one run that judges: `--slice I/N` on N machines makes
them (the CPU work), `--finish` then judges every document in the index's one order with them.

Why the verdicts are not made within each slice: a page's verdict depends on the clusters of
every page before it (which copy is a cluster's original, a copy declaring itself canonical
taking a cluster over), and the slices interleave in that order. Made apart, two copies in two
slices each find no earlier copy, or join clusters whose original another slice moved. Made in
one pass, in one order, they are `neardup dedup`'s; the fingerprints are what can be made apart.

The staging index is a cache of content, keyed by the document's `_id`: a record is used only
for the same document id, the same field and URL (the source hash) and the same settings (a
digest of the fingerprint parameters); any other document is fingerprinted by the judging run.
So a slice that never ran, ran before an edit, or ran with other settings costs time, never a
wrong cluster.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from elasticsearch import ApiError, BadRequestError, helpers

from neardup_pipeline.errors import ConfigError, IndexFailure
from neardup_pipeline.fingerprint import Fingerprinter
from neardup_pipeline.hygiene.checkpoint import FINISHED, Checkpoint
from neardup_pipeline.hygiene.fields import Item
from neardup_pipeline.hygiene.fingerprint_record import from_record, params_digest, to_record
from neardup_pipeline.index.elastic.connection import Connection, describe, error_type

log = logging.getLogger(__name__)

MGET_CHUNK = 500
# Nothing searched: records are read by `_id` only; compressed, as they are read once.
MAPPING: dict[str, Any] = {"dynamic": False, "properties": {}}
SETTINGS: dict[str, Any] = {"index": {"codec": "best_compression"}}


class StagedFingerprints:
    """The staging index `index`: records put by slices, read by the run that judges."""

    def __init__(self, connection: Connection, index: str, fingerprinter: Fingerprinter) -> None:
        self.connection, self.index, self.fingerprinter = connection, index, fingerprinter
        self.digest = params_digest(fingerprinter)

    def prepare(self) -> None:
        client = self.connection.client
        try:
            self.connection.call(lambda: client.indices.create(
                index=self.index, mappings=MAPPING, settings=SETTINGS))
        except BadRequestError as exc:
            if error_type(exc) != "resource_already_exists_exception":
                raise IndexFailure(f"cannot create staging index {self.index!r}: "
                                   f"{describe(exc)}") from exc
        except ApiError as exc:
            raise IndexFailure(f"cannot create staging index {self.index!r}: {describe(exc)}") \
                from exc

    def fill(self, items: Sequence[Item]) -> list[Item]:
        """`items`, those with a usable staged record given its fingerprint (`staged`)."""
        wanted = [i.es_id for i in items if i.doc is not None and not i.known
                  and i.fingerprint is None]
        found: dict[str, Any] = {}
        client = self.connection.client
        for start in range(0, len(wanted), MGET_CHUNK):
            try:
                response = self.connection.call(partial(
                    client.options(ignore_status=404).mget, index=self.index,
                    ids=wanted[start : start + MGET_CHUNK]))
            except ApiError as exc:
                raise IndexFailure(f"reading staged fingerprints failed: {describe(exc)}") \
                    from exc
            # no docs: the staging index does not exist (every slice's work taken up)
            found.update({d["_id"]: d["_source"] for d in response.body.get("docs", [])
                          if d.get("found")})
        return [self._filled(item, found.get(item.es_id)) for item in items]

    def _filled(self, item: Item, source: Mapping[str, Any] | None) -> Item:
        if (source is None or source.get("doc_id") != item.doc_id or not item.source_hash
                or source.get("source_hash") != item.source_hash
                or source.get("params") != self.digest):
            return item
        try:
            fp = from_record(self.fingerprinter, source["fingerprint"])
        except (KeyError, TypeError, ValueError) as exc:  # not ours: fingerprinted again
            log.warning("staged fingerprint of %r unreadable (%s): fingerprinted again",
                        item.es_id, exc)
            return item
        return replace(item, fingerprint=fp, staged=True) if fp.doc_id == item.doc_id else item

    def put(self, items: Sequence[Item]) -> int:
        """Stage the fingerprints of `items` not staged already; how many were."""
        actions = [
            {"_index": self.index, "_id": item.es_id,
             "_source": {"doc_id": item.doc_id, "source_hash": item.source_hash,
                         "params": self.digest,
                         "fingerprint": to_record(self.fingerprinter, item.fingerprint)}}
            for item in items if item.fingerprint is not None and not item.staged
        ]
        if not actions:
            return 0
        client = self.connection.client
        try:
            _, errors = self.connection.call(partial(
                helpers.bulk, client, actions, chunk_size=500, max_retries=3, initial_backoff=1,
                raise_on_error=False, stats_only=False))
        except ApiError as exc:
            raise IndexFailure(f"staging fingerprints failed: {describe(exc)}") from exc
        assert isinstance(errors, list)
        if errors:
            first = next(iter(errors[0].values()))
            raise IndexFailure(f"Elasticsearch refused {len(errors)} of {len(actions)} staged "
                               f"fingerprints in {self.index!r}: {first.get('error')}")
        return len(actions)

    def drop(self) -> None:
        """Delete the staging index: its records are in the fingerprint index now."""
        client = self.connection.client
        try:
            self.connection.call(lambda: client.options(ignore_status=404).indices.delete(
                index=self.index))
        except ApiError as exc:
            raise IndexFailure(f"deleting staging index {self.index!r} failed: "
                               f"{describe(exc)}") from exc


def slices_to_take_up(runs: Mapping[str, Checkpoint]) -> list[str]:
    """The keys of the slice runs (`runs`: this content index and target's) a judging run takes
    up; ConfigError unless they are every slice of one split and each has ended."""
    slices = {key: cp for key, cp in runs.items() if cp.slice_ is not None}
    if not slices:
        raise ConfigError("--finish found no --slice run of this index and target: run "
                          "`--slice I/N` on each machine first (the same arguments otherwise)")
    splits = sorted({cp.slice_[1] for cp in slices.values() if cp.slice_})
    if len(splits) > 1:
        raise ConfigError("--finish found slices of several splits (" + ", ".join(
            f"N={n}" for n in splits) + "): run every slice of one split; an unwanted "
            "split's checkpoints are in the -checkpoint index")
    n = splits[0]
    ended = {cp.slice_[0] for cp in slices.values() if cp.slice_ and cp.state == FINISHED}
    missing = [f"{i}/{n}" for i in range(n) if i not in ended]
    if missing:
        raise ConfigError(f"--finish: slice {', '.join(missing)} has not ended (not run, "
                          "still running, or killed: run it again, it resumes)")
    return sorted(slices)
