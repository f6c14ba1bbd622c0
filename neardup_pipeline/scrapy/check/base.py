"""What the pipeline asks of a check mode, and what the worker-thread checks offer each other."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol

from neardup_pipeline.fingerprint import Document, Fingerprint
from neardup_pipeline.verdict.deduplicator import Verdict


@dataclass(frozen=True)
class Checked:
    """A page's verdict, and whether it became its cluster's canonical copy (a better copy,
    NEARDUP_CANONICAL = "best"), which is kept in either action."""

    verdict: Verdict
    promoted: bool = False


class PageChecker(Protocol):
    """Checks pages for the pipeline, on the reactor, without ever blocking it."""

    async def open(self) -> None:
        """Open the index (errors, such as an index built with other parameters, raise here)."""
        ...

    async def check(self, doc: Document) -> Checked: ...

    async def close(self) -> None:
        """Finish pending work and close the index; what cannot be written is spooled."""
        ...

    def counts(self) -> Mapping[str, int]:
        """The check's own counts for the crawl's stats (a consistent snapshot)."""
        ...

    @property
    def unavailable(self) -> bool:
        """Whether pages pass unchecked right now because the index is away."""
        ...


Page = tuple[Document, Future[Fingerprint] | None]  # and its fingerprint, started in a child
Outcome = Checked | Exception  # a page's verdict, or the error that stopped its check


class IndexCheck(Protocol):
    """The check on the worker thread against an index of this process: plain, or degraded
    mode wrapped around it."""

    def open(self) -> int | None:
        """Fingerprints stored, or None when it started without the index."""
        ...

    def check_many(self, pages: Sequence[Page]) -> list[Outcome]:
        """Each page's outcome, in order: the verdicts of checking them one by one, looked up
        in batches (one round trip for many pages); an error stops its own page only."""
        ...

    def close(self) -> None: ...

    @property
    def unavailable(self) -> bool: ...


def outcome_of(check: Callable[..., Checked], *args: Any) -> Outcome:
    """`check(*args)`, or the error that stopped it (for that page alone)."""
    try:
        return check(*args)
    except Exception as exc:
        return exc
