"""Anchor words ("опорные слова", Ilyinsky, Kuzmin, Melkov & Segalovich 2002): the fitted model
(N words, each with a threshold on its relative term frequency) and its file format. A page's
anchor bits are the words whose tf / (max tf of the page) exceeds their threshold.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup_pipeline.errors import AnchorModelError
from neardup_pipeline.methods.modelfile import read_json_object
from neardup_pipeline.text.normalize import Normalizer
from neardup_pipeline.text.settings import TextSettings

FORMAT = "neardup-anchors"
MODEL_VERSION = 1


@dataclass(frozen=True)
class FitSettings:
    """How a model is fitted (stored in the model file): the flags of `neardup anchors fit`; the
    pipeline's warm-up fit takes these defaults."""

    words: int = 3000  # N: 3-5 thousand at web scale; small corpora give fewer
    min_df: int = 3
    max_df: float = 0.5  # share of documents
    floor_precision: float = 0.8
    edit: float = 0.1  # a small edit changes a count by max(edit * tf, edit_floor)
    edit_floor: float = 0.5  # occurrences: the count change a small edit makes at least
    min_bits: int = 3  # a document is covered with at least this many set bits
    min_support: int = 2  # documents that must set a word's bit (one alone matches nothing)

    def __post_init__(self) -> None:
        if self.words < 1 or self.min_df < 1 or self.min_bits < 1 or self.min_support < 1:
            raise AnchorModelError("words, min_df, min_bits and min_support must be >= 1")
        if not 0 < self.max_df <= 1 or not 0 <= self.floor_precision <= 1:
            raise AnchorModelError("max_df must lie in (0, 1] and floor_precision in [0, 1]")
        if not 0 <= self.edit <= 1 or not 0 <= self.edit_floor <= 1:
            raise AnchorModelError("edit and edit_floor must lie in [0, 1]")


@dataclass(frozen=True)
class AnchorModel:
    """N anchor words with thresholds; the digest names the model in index parameters."""

    words: tuple[str, ...]
    thresholds: tuple[float, ...]
    normalizer: dict[str, object]
    settings: FitSettings = field(default_factory=FitSettings)
    precision: tuple[float, ...] = ()
    support: tuple[int, ...] = ()
    stats: dict[str, object] = field(default_factory=dict, compare=False)

    @cached_property
    def digest(self) -> str:
        """Content digest of what decides signatures (not the timing stats)."""
        core = json.dumps(
            [MODEL_VERSION, self.words, self.thresholds, self.normalizer],
            sort_keys=True, ensure_ascii=False,
        )
        return hashlib.sha256(core.encode()).hexdigest()[:16]

    @cached_property
    def index(self) -> dict[str, int]:
        return {word: i for i, word in enumerate(self.words)}

    @cached_property
    def threshold_array(self) -> npt.NDArray[np.float64]:
        return np.asarray(self.thresholds, dtype=np.float64)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT, "version": MODEL_VERSION, "digest": self.digest,
            "normalizer": self.normalizer, "fit": asdict(self.settings), "stats": self.stats,
            "words": list(self.words), "thresholds": list(self.thresholds),
            "precision": list(self.precision), "support": list(self.support),
        }

    def save(self, path: str | Path) -> None:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(self.to_json(), ensure_ascii=False, indent=1) + "\n",
                          encoding="utf-8")

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AnchorModel:
        if data.get("format") != FORMAT or data.get("version") != MODEL_VERSION:
            raise AnchorModelError(
                f"not a {FORMAT} v{MODEL_VERSION} model (format={data.get('format')!r}, "
                f"version={data.get('version')!r})"
            )
        try:
            model = cls(
                tuple(str(w) for w in data["words"]),
                tuple(float(t) for t in data["thresholds"]),
                dict(data["normalizer"]),
                FitSettings(**data.get("fit", {})),
                tuple(float(p) for p in data.get("precision", ())),
                tuple(int(s) for s in data.get("support", ())),
                dict(data.get("stats", {})),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise AnchorModelError(f"malformed anchors model: {exc}") from exc
        if len(model.words) != len(model.thresholds) or len(set(model.words)) != len(model.words):
            raise AnchorModelError("anchors model needs one threshold per distinct word")
        if data.get("digest") not in (None, model.digest):
            raise AnchorModelError("anchors model digest does not match its words and thresholds")
        return model

    @classmethod
    def load(cls, path: str | Path) -> AnchorModel:
        return cls.from_json(read_json_object(path, AnchorModelError, "anchors model"))

    def bits(self, words: Sequence[str]) -> tuple[int, ...]:
        """Indices of the set bits: anchor word i with tf / max tf > threshold i."""
        if not words:
            return ()
        counts = Counter(words)
        top = max(counts.values())
        present = [(i, c) for w, c in counts.items() if (i := self.index.get(w)) is not None]
        if not present:
            return ()
        idx = np.fromiter((i for i, _ in present), dtype=np.int64, count=len(present))
        tf = np.fromiter((c for _, c in present), dtype=np.float64, count=len(present))
        return tuple(int(i) for i in np.sort(idx[tf / top > self.threshold_array[idx]]))


def check_normalizer(model: AnchorModel, wanted: Mapping[str, object]) -> None:
    """Refuse a model fitted with other text rules: its words would never match."""
    stored = {k: v for k, v in model.normalizer.items() if k != "snowball"}
    here = {k: v for k, v in wanted.items() if k != "snowball"}
    if stored and stored != here:
        raise AnchorModelError(
            f"anchors model was fitted with text rules {stored}, configuration uses {here}"
        )


def normalizer_for(text: TextSettings) -> Normalizer:
    """The normaliser every method uses (the model stores its settings)."""
    return Normalizer(text.language, remove_stopwords=text.remove_stopwords,
                      stem=text.stem, max_token_chars=text.max_token_chars)
