"""Permuted sorted tables (Manku, Jain & Das Sarma 2007): every stored 64-bit simhash within
Hamming distance k of a query, from t sorted, memory-mapped arrays.

Table i holds every fingerprint with its bits permuted so that the blocks of the i-th block
combination of `simhash.block_layout` come first, and is sorted. A neighbour within k agrees with
the query on every block of at least one combination (pigeonhole), so in that table it lies in the
one contiguous range whose top bits equal the query's: a binary search finds the range, and a
vectorised XOR + popcount keeps the rows within k. The top bits of table i are exactly simhash
block key i, so the unfiltered range is also "every fingerprint sharing key i", the key lookup the
other backends do.

Writes are LSM-like: new rows go to an in-memory delta (a dict per table, prefix -> rows), which
`merge` folds into a new generation of sorted files, switched by an atomic rename of the manifest;
removed rows are tombstones until then. Rows are caller-chosen integers that are never reused.
Pure data structure: no SQL, no doc ids (the SQLite backend maps rows to documents).
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import numpy as np
import numpy.typing as npt

from neardup_pipeline.methods.simhash import block_layout

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
FORMAT = 1
MANIFEST = "manifest.json"
MASK64 = (1 << 64) - 1

if hasattr(np, "bitwise_count"):  # numpy >= 2.0

    def popcount(values: U64) -> npt.NDArray[np.uint8]:
        """Set bits of each 64-bit value."""
        return cast("npt.NDArray[np.uint8]", np.bitwise_count(values))

else:  # pragma: no cover - numpy 1.x
    _BYTE_BITS = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)

    def popcount(values: U64) -> npt.NDArray[np.uint8]:
        """Set bits of each 64-bit value (a byte lookup table on numpy 1.x)."""
        per_byte = _BYTE_BITS[np.ascontiguousarray(values).view(np.uint8)]
        return cast("npt.NDArray[np.uint8]", per_byte.reshape(-1, 8).sum(axis=1, dtype=np.uint8))


def _plans(blocks: int, k: int) -> list[tuple[int, list[tuple[int, int, int]]]]:
    """Per table: (prefix width, [(source shift, width, target shift)]) of its permutation."""
    combos = block_layout(blocks, k)
    every = sorted({b for combo in combos for b in combo}, reverse=True)  # most significant first
    plans = []
    for combo in combos:
        order = list(combo) + [b for b in every if b not in combo]
        moves, top = [], 64
        for shift, width in order:
            top -= width
            moves.append((shift, width, top))
        plans.append((sum(width for _, width in combo), moves))
    return plans


def _permute(fingerprint: int, moves: list[tuple[int, int, int]]) -> int:
    out = 0
    for shift, width, target in moves:
        out |= ((fingerprint >> shift) & ((1 << width) - 1)) << target
    return out


def _permute_all(fingerprints: U64, moves: list[tuple[int, int, int]]) -> U64:
    out = np.zeros_like(fingerprints)
    for shift, width, target in moves:
        part = (fingerprints >> np.uint64(shift)) & np.uint64((1 << width) - 1)
        out |= part << np.uint64(target)
    return out


class PermutedTables:
    """Near-neighbour lookup over (row, 64-bit fingerprint) pairs; see the module doc.

    `directory` keeps the sorted tables as .npy files opened memory-mapped (None: in memory only).
    A merge runs when the delta and tombstones reach max(merge_min, merge_ratio * stored rows),
    so its cost per insert stays constant while the delta stays small.
    """

    def __init__(
        self,
        blocks: int = 4,
        k: int = 3,
        directory: str | Path | None = None,
        *,
        tag: str = "",
        merge_min: int = 10_000,
        merge_ratio: float = 0.125,
    ) -> None:
        self.blocks, self.k = blocks, k
        self.directory = Path(directory) if directory is not None else None
        self.tag = tag  # names the owner (the SQLite file's id): tables of another are ignored
        self.merge_min, self.merge_ratio = merge_min, merge_ratio
        self._plans = _plans(blocks, k)
        self._values: list[U64] = [np.zeros(0, np.uint64) for _ in self._plans]
        self._rows: list[npt.NDArray[np.integer]] = [np.zeros(0, np.uint32) for _ in self._plans]
        self._generation = ""
        self.upto = 0  # highest row held by the sorted tables
        self._delta: dict[int, int] = {}  # row -> fingerprint, not yet merged
        self._postings: list[dict[int, set[int]]] = [{} for _ in self._plans]
        self._dead: set[int] = set()  # rows of the sorted tables removed since the last merge
        if self.directory is not None:
            self._load()

    # ------------------------------------------------------------------ contents

    @property
    def tables(self) -> int:
        return len(self._plans)

    @property
    def stored(self) -> int:
        """Rows in the sorted tables (tombstoned ones included)."""
        return int(self._values[0].size)

    def __len__(self) -> int:
        return self.stored - len(self._dead) + len(self._delta)

    @property
    def pending(self) -> int:
        """Changes not yet merged: delta rows and tombstones."""
        return len(self._delta) + len(self._dead)

    def nbytes(self) -> int:
        """Bytes of the sorted tables (their files' size, headers aside)."""
        return sum(v.nbytes + r.nbytes for v, r in zip(self._values, self._rows, strict=True))

    def in_delta(self, row: int) -> bool:
        return row in self._delta

    def add(self, row: int, fingerprint: int) -> None:
        """Insert one row (in the delta: visible to the next lookup)."""
        if row in self._delta:
            self.remove(row)
        fingerprint &= MASK64
        self._delta[row] = fingerprint
        for postings, (width, moves) in zip(self._postings, self._plans, strict=True):
            postings.setdefault(_permute(fingerprint, moves) >> (64 - width), set()).add(row)

    def add_many(self, rows: npt.ArrayLike, fingerprints: npt.ArrayLike) -> None:
        """Insert many rows into the delta (`merge(rows, fingerprints)` sorts a large batch in)."""
        row_arr = np.asarray(rows, dtype=np.int64)
        fp_arr = np.asarray(fingerprints, dtype=np.uint64)
        for row, fingerprint in zip(row_arr.tolist(), fp_arr.tolist(), strict=True):
            self.add(row, fingerprint)

    def remove(self, row: int) -> None:
        """Forget a row: dropped from the delta, or tombstoned in the sorted tables."""
        fingerprint = self._delta.pop(row, None)
        if fingerprint is None:
            if row <= self.upto:
                self._dead.add(row)
            return
        for postings, (width, moves) in zip(self._postings, self._plans, strict=True):
            prefix = _permute(fingerprint, moves) >> (64 - width)
            bucket = postings[prefix]
            bucket.discard(row)
            if not bucket:
                del postings[prefix]

    # ------------------------------------------------------------------ lookups

    def near(self, fingerprint: int, k: int | None = None) -> list[int]:
        """Rows within Hamming distance k (default: the layout's k, the most it can find)."""
        k = self.k if k is None else k
        if k > self.k:
            raise ValueError(f"tables built for k <= {self.k} cannot find distance {k}")
        fingerprint &= MASK64
        found: set[int] = set()
        for t, (width, moves) in enumerate(self._plans):
            permuted = _permute(fingerprint, moves)
            values = self._values[t]
            if values.size:
                lo, hi = self._range(values, permuted >> (64 - width), width)
                if hi > lo:
                    close = popcount(values[lo:hi] ^ np.uint64(permuted)) <= k
                    found.update(self._rows[t][lo:hi][close].tolist())
            for row in self._postings[t].get(permuted >> (64 - width), ()):
                if (self._delta[row] ^ fingerprint).bit_count() <= k:
                    found.add(row)
        return sorted(found - self._dead) if self._dead else sorted(found)

    def sharing(self, keys: Sequence[tuple[int, int]]) -> list[int]:
        """Rows sharing at least one (table, prefix) key: the block-key lookup, unfiltered."""
        found: set[int] = set()
        for t, prefix in keys:
            width = self._plans[t][0]
            values = self._values[t]
            if values.size:
                lo, hi = self._range(values, prefix, width)
                found.update(self._rows[t][lo:hi].tolist())
            found.update(self._postings[t].get(prefix, ()))
        return sorted(found - self._dead) if self._dead else sorted(found)

    @staticmethod
    def _range(values: U64, prefix: int, width: int) -> tuple[int, int]:
        low = prefix << (64 - width)
        high = low | ((1 << (64 - width)) - 1)
        return (
            int(np.searchsorted(values, np.uint64(low), side="left")),
            int(np.searchsorted(values, np.uint64(high), side="right")),
        )

    def decode_keys(self, keys: Sequence[str]) -> tuple[list[tuple[int, int]], int | None]:
        """simhash block keys "<table>:<hex>" -> (table, prefix) pairs, and the fingerprint they
        spell when they are its complete key set (else None). Keys of another layout are dropped:
        no stored row can share them."""
        pairs: list[tuple[int, int]] = []
        for key in keys:
            position, sep, digits = key.partition(":")
            try:
                t, prefix = int(position), int(digits, 16)
            except ValueError:
                continue
            if not sep or not 0 <= t < self.tables or f"{t}:{prefix:x}" != key:
                continue
            if prefix >> self._plans[t][0]:
                continue
            pairs.append((t, prefix))
        if len(set(pairs)) != self.tables or {t for t, _ in pairs} != set(range(self.tables)):
            return pairs, None
        return pairs, self._spell(dict(pairs))

    def _spell(self, prefixes: dict[int, int]) -> int | None:
        """The fingerprint whose key t is prefixes[t] for every table, if one exists."""
        bits: dict[int, int] = {}  # block shift -> its bits
        for t, prefix in prefixes.items():
            width, moves = self._plans[t]
            rest = width
            for shift, block_width, _ in moves:
                if rest <= 0:
                    break
                rest -= block_width
                value = (prefix >> rest) & ((1 << block_width) - 1)
                if bits.setdefault(shift, value) != value:
                    return None
        return sum(value << shift for shift, value in bits.items())

    # ------------------------------------------------------------------ merge and files

    def merge_threshold(self) -> int:
        return max(self.merge_min, int(self.stored * self.merge_ratio))

    def needs_merge(self) -> bool:
        return self.pending >= self.merge_threshold()

    def merge(self, rows: I64 | None = None, fingerprints: U64 | None = None) -> None:
        """Fold the delta (and `rows`/`fingerprints`) into new sorted tables; drop tombstones."""
        new_rows = np.fromiter(self._delta.keys(), dtype=np.int64, count=len(self._delta))
        new_fps = np.fromiter(self._delta.values(), dtype=np.uint64, count=len(self._delta))
        if rows is not None and fingerprints is not None:
            new_rows = np.concatenate([new_rows, rows.astype(np.int64)])
            new_fps = np.concatenate([new_fps, fingerprints.astype(np.uint64)])
        if not new_rows.size and not self._dead:
            return
        dead = np.fromiter(self._dead, dtype=np.int64, count=len(self._dead))
        upto = max(self.upto, int(new_rows.max()) if new_rows.size else 0)
        row_type = np.uint32 if upto < 2**32 else np.int64
        values: list[U64] = []
        table_rows: list[npt.NDArray[np.integer]] = []
        for t, (_, moves) in enumerate(self._plans):
            old_values, old_rows = self._values[t], self._rows[t]
            if dead.size:
                keep = ~np.isin(old_rows, dead)
                old_values, old_rows = old_values[keep], old_rows[keep]
            permuted = _permute_all(new_fps, moves)
            order = np.argsort(permuted)
            sorted_new = permuted[order]
            at = np.searchsorted(old_values, sorted_new)
            values.append(np.insert(np.asarray(old_values), at, sorted_new))
            ids = np.asarray(old_rows).astype(row_type)
            table_rows.append(np.insert(ids, at, new_rows[order].astype(row_type)))
        self._install(values, table_rows, upto)
        self._delta.clear()
        self._postings = [{} for _ in self._plans]
        self._dead.clear()

    def _install(
        self, values: list[U64], rows: list[npt.NDArray[np.integer]], upto: int
    ) -> None:
        """Write a new generation (files first, then the manifest rename), then map it."""
        if self.directory is None:
            self._values, self._rows, self.upto = values, rows, upto
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        previous = self._generation
        number = int(previous.split("-")[0]) + 1 if previous else 1
        generation = f"{number:06d}-{secrets.token_hex(4)}"  # unique across processes
        files = []
        for t in range(self.tables):
            for part, array in (("values", values[t]), ("rows", rows[t])):
                name = f"g{generation}-t{t}-{part}.npy"
                with (self.directory / name).open("wb") as out:
                    np.save(out, array)
                    out.flush()
                    os.fsync(out.fileno())
                files.append(name)
        manifest = {
            "format": FORMAT,
            "blocks": self.blocks,
            "k": self.k,
            "tag": self.tag,
            "generation": generation,
            "count": int(values[0].size),
            "upto": upto,
            "files": files,
        }
        temporary = self.directory / f"{MANIFEST}.{generation}.tmp"
        temporary.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        os.replace(temporary, self.directory / MANIFEST)  # the atomic switch
        self._map(manifest)
        # Older generations (ours, or another process's): mapped files stay readable to whoever
        # has them open (POSIX unlink); one that cannot open them any more starts from the SQL.
        for old in self.directory.glob("g*.npy"):
            if old.name not in files:
                old.unlink(missing_ok=True)

    def _load(self) -> None:
        assert self.directory is not None
        try:
            manifest = json.loads((self.directory / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return  # none yet (or unreadable): start empty, the owner re-adds its rows
        wanted = {"format": FORMAT, "blocks": self.blocks, "k": self.k, "tag": self.tag}
        if any(manifest.get(name) != value for name, value in wanted.items()):
            return
        try:
            self._map(manifest)
        except (OSError, ValueError, KeyError):
            self.reset()

    def _map(self, manifest: dict[str, object]) -> None:
        assert self.directory is not None
        files = manifest["files"]
        assert isinstance(files, list)
        count = int(str(manifest["count"]))
        arrays = [
            np.load(self.directory / str(name), mmap_mode="r") if count else np.zeros(0, np.uint64)
            for name in files
        ]
        if any(a.size != count for a in arrays) or len(arrays) != 2 * self.tables:
            raise ValueError("table files do not match the manifest")
        self._values = arrays[0::2]
        self._rows = arrays[1::2]
        self.upto = int(str(manifest["upto"]))
        self._generation = str(manifest["generation"])

    def tombstones(self) -> list[int]:
        """Rows removed from the sorted tables since the last merge."""
        return sorted(self._dead)

    def reset(self) -> None:
        """Forget the sorted tables and the delta (the files stay until a merge replaces them)."""
        self.close()
        self.upto, self._generation = 0, ""
        self._delta.clear()
        self._postings = [{} for _ in self._plans]
        self._dead.clear()

    def close(self) -> None:
        """Unmap the tables (the delta is the caller's to keep: it is not written here)."""
        self._values = [np.zeros(0, np.uint64) for _ in self._plans]
        self._rows = [np.zeros(0, np.uint32) for _ in self._plans]
