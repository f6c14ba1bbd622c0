"""What a detection method is, and the optional capabilities one may declare.

Every method fulfils `Method`. A method that can do more says so by providing the members of a
capability Protocol below; the Fingerprinter resolves them once per method into a
`MethodCapabilities` record, which the verdict reads instead of probing attributes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from neardup_pipeline.sketch.rabin import U64Array
from neardup_pipeline.sketch.shingles import ShingleHasher


class Method(Protocol):
    """A detection method: a signature per document, lookup keys, and a pairwise verdict."""

    @property
    def name(self) -> str: ...

    def params(self) -> dict[str, object]:
        """Parameters that make signatures comparable (stored with the index)."""
        ...

    def signature(self, words: Sequence[str], hasher: ShingleHasher) -> Any: ...

    def keys(self, signature: Any) -> list[str]:
        """Lookup keys: any true near-duplicate shares at least one with the document."""
        ...

    def encode(self, signature: Any) -> Any:
        """JSON-able form stored in an index."""
        ...

    def decode(self, stored: Any) -> Any: ...

    def similarity(self, a: Any, b: Any) -> float: ...

    def is_duplicate(self, a: Any, b: Any) -> bool: ...

    def explain(self, a: Any, b: Any) -> dict[str, object]: ...


class CorpusStats(Protocol):
    """Document frequencies of word hashes (every FingerprintIndex provides them)."""

    def document_frequencies(
        self, word_hashes: Iterable[int], exclude: str | None = None
    ) -> dict[int, int]:
        """DF of each word among the documents counted, leaving out `exclude`."""
        ...

    def document_count(self, exclude: str | None = None) -> int:
        """Documents counted in DF, leaving out `exclude`."""
        ...


@runtime_checkable
class JudgesInOnePass(Protocol):
    """Similarity and verdict computed together, cheaper than `similarity` then
    `is_duplicate` (the bag runs its extra checks only on a bag that already matches)."""

    def judge(self, a: Any, b: Any) -> tuple[float, bool]: ...


@runtime_checkable
class HasMetricFloor(Protocol):
    """1 - similarity is a metric, and no duplicate is less similar than `metric_floor()`:
    the triangle inequality may then rule a cluster member out (verdict/pruning.py)."""

    def metric_floor(self) -> float | None:
        """A duplicate's least similarity; None when this configuration is no metric."""
        ...


@runtime_checkable
class MatchesBeyondTheMetric(Protocol):
    """Some pages may also match by a rule that is no metric (the bag's containment across
    sites): for them the metric floor rules no cluster member out."""

    def beyond_metric(self, signature: Any) -> bool: ...


@runtime_checkable
class CompletesFromCorpus(Protocol):
    """A signature made in two steps: `signature` from the words alone, then `complete` once
    the corpus's document frequencies are known. Fingerprints cannot then be computed ahead of
    the index (a batch's earlier pages change the later pages' DF)."""

    def complete(self, draft: Any, stats: CorpusStats | None, doc_id: str | None = None) -> Any:
        """The finished signature; `stats` None: every word counts as equally rare."""
        ...


@runtime_checkable
class WarmsUp(Method, CompletesFromCorpus, Protocol):
    """Corpus DF means little until `warmup` documents are counted: until then the method's
    similarities are scores only, and the pages recorded meanwhile are completed again once,
    when the corpus is large enough (verdict/warmup_replay.py)."""

    @property
    def warmup(self) -> int: ...

    def warming_up(self, signature: Any) -> bool:
        """Whether `signature` was completed from too young a corpus to decide on."""
        ...


@runtime_checkable
class LearnsCorpusWords(Protocol):
    """The document's distinct word hashes, added to the index's document frequencies."""

    def corpus_words(self, signature: Any) -> U64Array | None:
        """Word hashes to count (None for a signature read back from an index)."""
        ...


@runtime_checkable
class UsesTitleSubject(Protocol):
    """The signature also holds the subject words of the page's title (text/subject.py)."""

    def with_subject(self, signature: Any, words: Sequence[str], hasher: ShingleHasher) -> Any: ...


@runtime_checkable
class ComparesAcrossSites(Protocol):
    """The signature also holds the page's site (text/site.py) and its content region's lookup
    keys (text/blocks.py): a copy under another site's chrome is found and matched apart from
    that chrome."""

    def with_site(
        self, signature: Any, site: str, region: Sequence[str], hasher: ShingleHasher,
    ) -> Any: ...


@runtime_checkable
class FindsTemplateTwins(Protocol):
    """Tells two pages of one template, each about its own subject, apart: such a pair is no
    near-duplicate whatever any method's similarity."""

    def twins(self, a: Any, b: Any) -> bool: ...


@dataclass(frozen=True)
class MethodCapabilities:
    """One method and the optional capabilities it offers (None: not offered), resolved once."""

    method: Method
    one_pass: JudgesInOnePass | None = None
    metric_floor: float | None = None
    beyond_metric: MatchesBeyondTheMetric | None = None
    completes: CompletesFromCorpus | None = None
    warms_up: WarmsUp | None = None
    learns_words: LearnsCorpusWords | None = None
    uses_subject: UsesTitleSubject | None = None
    across_sites: ComparesAcrossSites | None = None
    finds_twins: FindsTemplateTwins | None = None

    @classmethod
    def of(cls, method: Method) -> MethodCapabilities:
        return cls(
            method,
            one_pass=method if isinstance(method, JudgesInOnePass) else None,
            metric_floor=method.metric_floor() if isinstance(method, HasMetricFloor) else None,
            beyond_metric=method if isinstance(method, MatchesBeyondTheMetric) else None,
            completes=method if isinstance(method, CompletesFromCorpus) else None,
            warms_up=method if isinstance(method, WarmsUp) else None,
            learns_words=method if isinstance(method, LearnsCorpusWords) else None,
            uses_subject=method if isinstance(method, UsesTitleSubject) else None,
            across_sites=method if isinstance(method, ComparesAcrossSites) else None,
            finds_twins=method if isinstance(method, FindsTemplateTwins) else None,
        )

    def floor_for(self, signature: Any) -> float | None:
        """The metric floor pruning may use for this page's candidates (None: none)."""
        if self.beyond_metric is not None and self.beyond_metric.beyond_metric(signature):
            return None
        return self.metric_floor

    def judge(self, a: Any, b: Any) -> tuple[float, bool]:
        """(similarity, near-duplicate?) of two signatures, in one pass where the method has one."""
        if self.one_pass is not None:
            return self.one_pass.judge(a, b)
        return self.method.similarity(a, b), self.method.is_duplicate(a, b)


def lookup_keys(methods: Mapping[str, Method], signatures: Mapping[str, Any],
                ) -> dict[str, list[str]]:
    """Each method's lookup keys of its signature; a method that makes none (it only verifies)
    is left out, so no index keeps a lookup structure for it."""
    return {name: found for name, sig in signatures.items()
            if (found := methods[name].keys(sig))}
