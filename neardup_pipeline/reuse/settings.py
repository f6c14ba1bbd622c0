"""What decides text-reuse detection: shingle size, winnowing window, passage thresholds.

The defaults are measured (benchmarks/text_reuse.py, docs/reuse.md): every length counts content
words, the words left after stop words are removed (about half of running English text).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from neardup_pipeline.errors import ConfigError


@dataclass(frozen=True)
class ReuseSettings:
    """Detection parameters; `fingerprint_params` are those an index is built with."""

    shingle: int = 3  # words per shingle: one revised word breaks only `shingle` of them
    window: int = 4  # winnowing window: any shared run of window + shingle - 1 words is seen
    min_words: int = 7  # content words a passage matches in order (about one sentence): a
    # shared name or phrase is shorter
    max_gap: int = 20  # content words between two pieces of one passage in the suspect
    max_source_gap: int = 100  # and in the source (a summary leaves whole sentences out)
    min_density: float = 0.5  # share of a passage's suspect words that occur in its source
    min_in_order: float = 0.35  # share of them matched in order (seeds and their extensions)
    min_similarity: float = 0.4  # shared words / sqrt(product of the two sides' lengths)
    max_candidates: int = 100  # sources aligned per suspect, most shared fingerprints first
    language: str | None = None  # ISO 639-1 for every text; None: detected per text
    stopwords: bool = True
    stem: bool = True

    def __post_init__(self) -> None:
        for name in ("shingle", "window", "min_words", "max_candidates"):
            if getattr(self, name) < 1:
                raise ConfigError(f"reuse {name} must be >= 1, got {getattr(self, name)}")
        for name in ("max_gap", "max_source_gap"):
            if getattr(self, name) < 0:
                raise ConfigError(f"reuse {name} must be >= 0, got {getattr(self, name)}")
        for name in ("min_density", "min_in_order", "min_similarity"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(f"reuse {name} must be in [0, 1], got {getattr(self, name)}")

    def fingerprint_params(self) -> dict[str, object]:
        """What the stored fingerprints depend on: a query with others would miss them."""
        names = ("shingle", "window", "language", "stopwords", "stem")
        return {name: value for name, value in asdict(self).items() if name in names}
