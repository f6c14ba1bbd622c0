"""Sources in, suspects out: for a suspect, each source it reuses, how much of the suspect that
source covers, and the passages as character offsets in both texts."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from neardup_pipeline.reuse.align import WordPassage, align
from neardup_pipeline.reuse.index import PassageIndex
from neardup_pipeline.reuse.settings import ReuseSettings
from neardup_pipeline.reuse.tokens import Tokens, content_words, read_words, tokenize
from neardup_pipeline.reuse.winnow import winnow


@dataclass(frozen=True)
class Passage:
    """Suspect text[start:end] copies source text[source_start:source_end] (character offsets;
    each passage starts at its first matched word and ends after its last)."""

    start: int
    end: int
    source_start: int
    source_end: int


@dataclass(frozen=True)
class SourceReuse:
    """One source a suspect reuses: the share of the suspect's content words inside passages
    from it (`containment`), and those passages in suspect order."""

    source_id: str
    containment: float
    passages: tuple[Passage, ...]


class ReuseFinder:
    """Indexes sources, then finds which of them each suspect copies passages from."""

    def __init__(self, index: PassageIndex, settings: ReuseSettings | None = None) -> None:
        self.settings = settings or ReuseSettings()
        self.index = index
        index.ensure_params(self.settings.fingerprint_params())

    def add_source(self, doc_id: str, text: str) -> bool:
        """Index one source; False when its id is already indexed (the first one is kept)."""
        tokens = tokenize(text, self.settings)
        return self.index.add(doc_id, tokens, winnow(tokens.shingles, self.settings.window), text)

    def find(self, text: str) -> list[SourceReuse]:
        """The sources `text` reuses, most contained first (ties by id); [] when none.

        A source's words are read by its own language's rules (stop words, stems), and so is
        the suspect when compared with it: a passage copied into a text of another language
        (an English quotation in a German page) is found."""
        if self.settings.language is not None:
            languages: set[str | None] = {self.settings.language}
        else:
            languages = self.index.languages()
        words = read_words(text)
        found: list[SourceReuse] = []
        for language in sorted(languages, key=str):
            found.extend(self._find(content_words(words, language, self.settings)))
        return sorted(found, key=lambda r: (-r.containment, r.source_id))

    def _find(self, tokens: Tokens) -> list[SourceReuse]:
        if len(tokens.shingles) == 0:
            return []
        # Every distinct shingle of the suspect, not only its winnowed ones: a source is a
        # candidate when any shingle the two share is one kept for it. Winnowing the suspect
        # too would need a shared run long enough (window + shingle - 1 words) for both to
        # keep the same one, which a revision with a synonym every few words rarely leaves.
        postings = self.index.postings(np.unique(tokens.shingles), tokens.language)
        if len(postings.source) == 0:
            return []
        # rank sources by the distinct fingerprints they share with the suspect
        pairs = np.unique(np.stack([postings.source, postings.query]), axis=1)
        sources, shared = np.unique(pairs[0], return_counts=True)
        ranked = sources[np.lexsort((sources, -shared))][: self.settings.max_candidates]
        found = []
        for number in ranked.tolist():
            source_id, source = self.index.source(number)
            passages = align(tokens, source, self.settings)
            if passages:
                found.append(_reuse(source_id, passages, tokens, source))
        return found


def align_texts(text: str, source_text: str, settings: ReuseSettings | None = None,
                ) -> list[Passage]:
    """The passages of `text` copied from `source_text`, both read in the source's language:
    text alignment of one given pair, as PAN's task poses it (no index, no candidate step)."""
    settings = settings or ReuseSettings()
    source = tokenize(source_text, settings)
    suspect = content_words(read_words(text), source.language, settings)
    passages = align(suspect, source, settings)
    return list(_reuse("", passages, suspect, source).passages) if passages else []


def _reuse(source_id: str, passages: list[WordPassage], suspect: Tokens,
           source: Tokens) -> SourceReuse:
    covered = np.zeros(suspect.words, dtype=bool)
    for p in passages:
        covered[p.start : p.end] = True
    return SourceReuse(
        source_id,
        round(float(covered.sum()) / suspect.words, 4),
        tuple(Passage(int(suspect.starts[p.start]), int(suspect.ends[p.end - 1]),
                      int(source.starts[p.source_start]), int(source.ends[p.source_end - 1]))
              for p in passages),
    )
