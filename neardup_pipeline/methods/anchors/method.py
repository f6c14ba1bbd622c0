"""Anchor words as a detection method: a page's signature is the set of its anchor bits
(anchors/model.py); equal signatures (with at least `min_bits` set bits) mark near-duplicates, and
an optional Hamming tolerance widens that.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from neardup_pipeline.errors import AnchorModelError, ConfigError
from neardup_pipeline.methods.anchors.model import AnchorModel, check_normalizer, normalizer_for
from neardup_pipeline.methods.settings import AnchorsSettings as AnchorsSettings
from neardup_pipeline.sketch.shingles import ShingleHasher
from neardup_pipeline.text.settings import TextSettings


@dataclass(frozen=True)
class AnchorSignature:
    """Indices of the set bits of the N-bit anchor vector (sparse: a few dozen of thousands)."""

    bits: tuple[int, ...]

    @property
    def digest(self) -> str:
        return _digest(self.bits)


def _digest(bits: Iterable[int]) -> str:
    data = np.asarray(list(bits), dtype=">u4").tobytes()
    return hashlib.blake2b(data, digest_size=10).hexdigest()


@dataclass(frozen=True)
class AnchorsMethod:
    """Anchor-word signatures: duplicate when equal (or within `tolerance` bits), with at least
    `min_bits` set bits so that near-empty signatures do not all collide."""

    model: AnchorModel
    min_bits: int = 3
    tolerance: int = 0
    name: str = "anchors"

    def params(self) -> dict[str, object]:
        return {"model": self.model.digest, "words": len(self.model.words),
                "min_bits": self.min_bits, "tolerance": self.tolerance}

    def signature(self, words: Sequence[str], hasher: ShingleHasher) -> AnchorSignature:
        return AnchorSignature(self.model.bits(words))

    def keys(self, signature: AnchorSignature) -> list[str]:
        """The digest of the set bits; with a tolerance k, also the digests of every subset made
        by deleting up to k set bits: two signatures within Hamming distance k both reach their
        intersection that way (a deletion neighbourhood; block keys of a sparse vector would put
        every page with an empty block in one bucket)."""
        bits = signature.bits
        if len(bits) < self.min_bits:
            return []
        keys = [f"s:{signature.digest}"]
        smallest = max(1, self.min_bits - self.tolerance)
        for removed in range(1, self.tolerance + 1):
            if len(bits) - removed < smallest:
                break
            for drop in itertools.combinations(range(len(bits)), removed):
                rest = [b for j, b in enumerate(bits) if j not in drop]
                keys.append(f"d:{_digest(rest)}")
        return keys

    def encode(self, signature: AnchorSignature) -> str:
        return ",".join(map(str, signature.bits))

    def decode(self, stored: object) -> AnchorSignature:
        text = str(stored)
        return AnchorSignature(tuple(int(b) for b in text.split(",")) if text else ())

    def distance(self, a: AnchorSignature, b: AnchorSignature) -> int:
        return len(set(a.bits) ^ set(b.bits))

    def similarity(self, a: AnchorSignature, b: AnchorSignature) -> float:
        """Jaccard of the set bits (1.0 for equal signatures)."""
        union = len(set(a.bits) | set(b.bits))
        return len(set(a.bits) & set(b.bits)) / union if union else 0.0

    def is_duplicate(self, a: AnchorSignature, b: AnchorSignature) -> bool:
        if len(a.bits) < self.min_bits or len(b.bits) < self.min_bits:
            return False
        return self.distance(a, b) <= self.tolerance

    def explain(self, a: AnchorSignature, b: AnchorSignature) -> dict[str, object]:
        words = self.model.words
        return {
            "set_bits_a": len(a.bits), "set_bits_b": len(b.bits),
            "distance": self.distance(a, b), "tolerance": self.tolerance,
            "min_bits": self.min_bits, "model": self.model.digest,
            "only_a": [words[i] for i in sorted(set(a.bits) - set(b.bits))],
            "only_b": [words[i] for i in sorted(set(b.bits) - set(a.bits))],
        }


def anchors_method(
    settings: AnchorsSettings, text: TextSettings, model: AnchorModel | None = None,
) -> AnchorsMethod:
    """The anchors method of the settings: `model`, else the file settings.model names; refused
    when the model was fitted with other text rules."""
    if model is None:
        if not settings.model:
            raise ConfigError(
                "the anchors method needs a fitted model: set NEARDUP_ANCHORS_MODEL (or "
                "--anchors-model), fit one with `neardup anchors fit`, or let the pipeline fit "
                "one from its first pages"
            )
        try:
            model = AnchorModel.load(settings.model)
        except AnchorModelError as exc:
            raise ConfigError(str(exc)) from exc
    try:
        check_normalizer(model, normalizer_for(text).params())
    except AnchorModelError as exc:
        raise ConfigError(str(exc)) from exc
    return AnchorsMethod(model, min_bits=settings.min_bits, tolerance=settings.tolerance)
