"""Frozen document frequencies: a versioned DF table of word hashes, for IDF feature weights.

A stored fingerprint must stay comparable with later ones, so the weights that made it must not
move: the online DF an index keeps (rarewords) grows with every page, and IDF from it would
silently drift. An `IdfTable` is fitted once (on a corpus sample: `neardup idf fit`, or the
input of `neardup eval`), saved as a versioned JSON file like the anchors model, and named in
the index parameters by its digest; an index built with another table is refused.

Definitions (the rarewords conventions: words are 64-bit hashes of canonical words):
- DF counts documents containing the word among the N fitted on; only words with DF >= min_df
  are stored (a word seen once says no more than an unseen one): any other word counts as DF 1.
- IDF = 1 + ln((N + 1) / (DF + 1)) (smoothed, never 0: a page of common words keeps a
  fingerprint), quantised to 1/16 so that weights are integers and simhash sums are exact,
  the same on every machine and in any summation order.
The table is a `CorpusStats` (rarewords), so any code that reads DF can read a frozen one too.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.errors import IdfTableError
from neardup_pipeline.methods.modelfile import read_json_object
from neardup_pipeline.sketch.rabin import U64Array
from neardup_pipeline.sketch.shingles import ShingleHasher
from neardup_pipeline.text.normalize import Normalizer

FORMAT = "neardup-idf"
TABLE_VERSION = 1
IDF_SCALE = 16  # quantum of an IDF weight: 1/16



@dataclass(frozen=True, eq=False)
class IdfTable:
    """DF of word hashes over `documents` pages (words sorted ascending, DF >= min_df); two
    tables are equal when their digests are."""

    words: U64Array = field(compare=False, repr=False)
    df: npt.NDArray[np.int64] = field(compare=False, repr=False)
    documents: int
    normalizer: dict[str, object]
    hasher: dict[str, object]
    min_df: int = 2
    stats: dict[str, object] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if self.words.shape != self.df.shape or self.documents < 0 or self.min_df < 1:
            raise IdfTableError("DF table needs one DF per word, documents >= 0, min_df >= 1")
        if self.words.size > 1 and not bool(np.all(self.words[1:] > self.words[:-1])):
            raise IdfTableError("DF table words must be distinct and sorted")

    @cached_property
    def digest(self) -> str:
        """Content digest of what decides the weights: it names the table in index params."""
        h = hashlib.sha256()
        h.update(json.dumps([TABLE_VERSION, IDF_SCALE, self.documents, self.min_df,
                             _rules(self.normalizer), self.hasher], sort_keys=True).encode())
        h.update(self.words.astype(">u8").tobytes())
        h.update(self.df.astype(">i8").tobytes())
        return h.hexdigest()[:16]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IdfTable) and other.digest == self.digest

    def __hash__(self) -> int:
        return hash(self.digest)

    @cached_property
    def _idf(self) -> npt.NDArray[np.int64]:
        return quantised_idf(self.df, self.documents)

    @cached_property
    def unseen(self) -> int:
        """Quantised IDF of a word not in the table (DF 1)."""
        return int(quantised_idf(np.ones(1, dtype=np.int64), self.documents)[0])

    def _lookup(
        self, values: npt.NDArray[np.int64], hashes: U64Array, missing: int
    ) -> npt.NDArray[np.int64]:
        """`values` (one per stored word) of each hash, in order; `missing` where not stored."""
        if self.words.size == 0:
            return np.full(hashes.size, missing, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.words, hashes), self.words.size - 1)
        return np.where(self.words[at] == hashes, values[at], missing)

    def idf(self, word_hashes: U64Array) -> npt.NDArray[np.int64]:
        """Quantised IDF (x IDF_SCALE) of each word hash, in order."""
        return self._lookup(self._idf, word_hashes, self.unseen)

    # CorpusStats (rarewords): the frozen table stands wherever DF is read.
    def document_frequencies(
        self, word_hashes: Iterable[int], exclude: str | None = None
    ) -> dict[int, int]:
        hashes = np.fromiter((int(w) for w in word_hashes), dtype=np.uint64)
        found = self._lookup(self.df, hashes, 0)
        return dict(zip(hashes.tolist(), found.tolist(), strict=True))

    def document_count(self, exclude: str | None = None) -> int:
        return self.documents

    def params(self) -> dict[str, object]:
        """What an index records about the table (the digest decides; the rest informs)."""
        return {"table": self.digest, "documents": self.documents, "scale": IDF_SCALE}

    def check(self, normalizer: Mapping[str, object], hasher: Mapping[str, object]) -> None:
        """Refuse a table made with other text rules or another hash: its words never match."""
        if _rules(self.normalizer) != _rules(normalizer):
            raise IdfTableError(f"DF table was fitted with text rules {_rules(self.normalizer)}, "
                                f"configuration uses {_rules(normalizer)}")
        if dict(self.hasher) != dict(hasher):
            raise IdfTableError(f"DF table was fitted with hash {self.hasher}, "
                                f"configuration uses {dict(hasher)}")

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT, "version": TABLE_VERSION, "digest": self.digest,
            "documents": self.documents, "min_df": self.min_df, "normalizer": self.normalizer,
            "hash": self.hasher, "stats": self.stats,
            "words": [f"{w:016x}" for w in self.words.tolist()], "df": self.df.tolist(),
        }

    def save(self, path: str | Path) -> None:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(self.to_json(), ensure_ascii=False) + "\n", encoding="utf-8")

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> IdfTable:
        if data.get("format") != FORMAT or data.get("version") != TABLE_VERSION:
            raise IdfTableError(f"not a {FORMAT} v{TABLE_VERSION} table (format="
                                f"{data.get('format')!r}, version={data.get('version')!r})")
        try:
            table = cls(
                np.asarray([int(w, 16) for w in data["words"]], dtype=np.uint64),
                np.asarray(data["df"], dtype=np.int64),
                int(data["documents"]), dict(data["normalizer"]), dict(data["hash"]),
                int(data.get("min_df", 2)), dict(data.get("stats", {})),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise IdfTableError(f"malformed DF table: {exc}") from exc
        if data.get("digest") not in (None, table.digest):
            raise IdfTableError("DF table digest does not match its contents")
        return table

    @classmethod
    def load(cls, path: str | Path) -> IdfTable:
        resolved = Path(path).resolve()
        try:
            stat = resolved.stat()
        except OSError as exc:
            raise IdfTableError(f"cannot read DF table {str(path)!r}: {exc}") from exc
        return _load_cached(str(resolved), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=8)
def _load_cached(path: str, mtime_ns: int, size: int) -> IdfTable:
    """One parse per file version: every Fingerprinter (and child process) loads the table."""
    return IdfTable.from_json(read_json_object(path, IdfTableError, "DF table"))


def quantised_idf(df: npt.NDArray[np.int64], documents: int) -> npt.NDArray[np.int64]:
    """round(IDF_SCALE * (1 + ln((N + 1) / (DF + 1)))), DF clipped to [1, N]."""
    clipped = np.clip(df, 1, max(documents, 1)).astype(np.float64)
    idf = 1.0 + np.log((documents + 1.0) / (clipped + 1.0))
    return np.rint(idf * IDF_SCALE).astype(np.int64)


def fit_idf(
    documents: Iterable[Sequence[str]],
    hasher: ShingleHasher,
    normalizer: Mapping[str, object],
    min_df: int = 2,
) -> IdfTable:
    """DF of the words of `documents` (canonical words): one pass, numpy per document."""
    parts: list[U64Array] = []
    n = 0
    for words in documents:
        n += 1
        if words:
            parts.append(np.unique(hasher.word_hashes(words)))
    every = np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)
    words_, df = np.unique(every, return_counts=True)
    keep = df >= min_df
    stats: dict[str, object] = {"vocabulary": int(words_.size), "stored": int(keep.sum())}
    return IdfTable(words_[keep].astype(np.uint64), df[keep].astype(np.int64), n,
                    dict(normalizer), hasher.params(), min_df, stats)


def fit_texts(texts: Iterable[str], config: NearDupConfig, min_df: int = 2) -> IdfTable:
    """Fit on raw texts with the configuration's text rules and hash (what simhash will read)."""
    normalizer = Normalizer(config.language, remove_stopwords=config.remove_stopwords,
                            stem=config.stem, max_token_chars=config.max_token_chars,
                            max_words=config.max_words)
    return fit_idf((normalizer.words(t).words for t in texts), ShingleHasher(config.hash),
                   normalizer.params(), min_df)


def _rules(normalizer: Mapping[str, object]) -> dict[str, object]:
    """Text rules that decide the words (the stemmer library's version does not)."""
    return {k: v for k, v in normalizer.items() if k != "snowball"}
