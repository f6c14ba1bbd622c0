"""What a hygiene run was asked to do and what it did: shared by the run that marks (run.py)
and a slice that stages (stage.py)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.errors import ConfigError
from neardup_pipeline.hygiene.fields import FieldSpec
from neardup_pipeline.hygiene.marks import Mark
from neardup_pipeline.parallel.offload import can_offload


@dataclass(frozen=True)
class HygieneOptions:
    """What `neardup hygiene` was asked to do."""

    url: str
    index: str
    config: NearDupConfig
    spec: FieldSpec = field(default_factory=FieldSpec)
    into: str | None = None
    fingerprint_index: str | None = None
    processes: int = 0
    slice_: tuple[int, int] | None = None
    finish: bool = False
    dry_run: bool = False
    window: int = 1000
    batch: int = 100
    page: int = 500

    @property
    def fingerprints(self) -> str:
        """The fingerprint index of the marks' target: every run and machine marking that
        target shares it (what it holds is what the target's marks say)."""
        return self.fingerprint_index or f"{self.target}-neardup-fingerprints"

    @property
    def target(self) -> str:
        return self.into or self.index

    @property
    def checkpoints(self) -> str:
        return f"{self.fingerprints}-checkpoint"

    @property
    def staging(self) -> str:
        """Where `--slice` runs stage fingerprints for `--finish` (staged.py)."""
        return f"{self.fingerprints}-staged"

    @property
    def checkpoint_key(self) -> str:
        part = f"slice {self.slice_[0]}/{self.slice_[1]}" if self.slice_ else "all"
        return f"{self.index} -> {self.target} ({part})"

    def is_my_slice(self, key: str) -> bool:
        """Whether a checkpoint key is a `--slice` run of this content index and target."""
        return key.startswith(f"{self.index} -> {self.target} (slice ")


@dataclass
class RunResult:
    """What a run did: counts (read, checked, duplicates, unchanged, no_text, bad_field,
    repeated_id, gone, marked, from_slices; a slice: staged, staged_before), bad fields by
    problem, and (dry run) the marks."""

    counts: Counter[str] = field(default_factory=Counter)
    problems: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    resumed: bool = False
    read_now: int = 0  # documents this process read (the rate's numerator)
    marks: dict[str, Mark] = field(default_factory=dict)


def check_options(options: HygieneOptions) -> None:
    """Refuse at start what cannot work."""
    for name in (options.index, options.into or "x", options.fingerprints):
        if not name or any(c in name for c in "*,? \"<>|\\/") or name != name.lower():
            raise ConfigError(f"{name!r} is not one concrete Elasticsearch index name")
    if options.into == options.index:
        raise ConfigError("--into names the content index itself; leave it out to mark in place")
    parallel = [name for name, on in (("--processes", options.processes),
                                      ("--slice", options.slice_), ("--finish", options.finish))
                if on]
    if parallel and not can_offload(options.config):
        raise ConfigError(f"{parallel[0]} needs methods that fingerprint without the index "
                          "(simhash, minhash, bag, auto)")
    if options.slice_ is not None and (options.finish or options.dry_run):
        raise ConfigError("--slice stages fingerprints for one --finish run (which may be a "
                          "--dry-run): give it neither")
    if "anchors" in options.config.method_names and not options.config.anchors.model:
        raise ConfigError("--method anchors needs --anchors-model (fit one with `neardup anchors "
                          "fit` on documents like these)")
    if options.slice_ is not None and not 0 <= options.slice_[0] < options.slice_[1]:
        raise ConfigError("--slice I/N needs 0 <= I < N")
