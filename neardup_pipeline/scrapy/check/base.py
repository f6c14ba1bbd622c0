"""What the pipeline asks of a check mode, and what the worker-thread checks offer each other."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Protocol

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


class IndexCheck(Protocol):
    """The check on the worker thread against an index of this process: plain, or degraded
    mode wrapped around it."""

    def open(self) -> int | None:
        """Fingerprints stored, or None when it started without the index."""
        ...

    def check(self, doc: Document, pending: Future[Fingerprint] | None) -> Checked:
        """`pending`: the page's fingerprint, started in a child process."""
        ...

    def close(self) -> None: ...

    @property
    def unavailable(self) -> bool: ...
