"""Batched lookups (msearch on Elasticsearch) give the one-by-one verdicts, on every backend."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from neardup_pipeline import Deduplicator, NearDupConfig
from neardup_pipeline.index import MemoryIndex, open_index
from neardup_pipeline.index.base import candidates_many
from neardup_pipeline.methods.simhash import block_keys
from tests.cli_runner import dedup_outputs, neardup
from tests.documents import corpus_with_copies
from tests.index_entries import entry
from tests.verdicts import outcome


def test_candidates_many_equals_one_lookup_each(backend_config: NearDupConfig) -> None:
    rng = random.Random(4)
    index = open_index(backend_config.backend, backend_config)
    Deduplicator(index, backend_config.replace(methods=("simhash",)))
    fps = {f"doc-{n}": rng.getrandbits(64) for n in range(120)}
    for n, (doc_id, fp) in enumerate(fps.items()):
        index.add(entry(doc_id, fp))
        if n == 80:
            index.flush()  # some stored in the backend, some pending in a write cache
    index.add(entry("doc-3", 0xDEAD))  # a pending re-add: its old keys must not match
    fps["x" * 9000] = 0x5A5A_1234_8765_F0F0  # longer than the doc_id keyword keeps (no doc value)
    index.add(entry("x" * 9000, 0x5A5A_1234_8765_F0F0))
    index.flush()
    queries: list[Mapping[str, Sequence[str]]] = [
        {"simhash": block_keys(fp ^ (1 << (n % 64)))} for n, fp in enumerate(fps.values())
    ]
    queries += [{"simhash": block_keys(0xDEAF)}, {}, {"minhash": ["nothing"]}]
    batched = candidates_many(index, queries)
    assert batched == [index.candidates(q) for q in queries]
    assert "doc-3" not in batched[3] and batched[-3] == {"doc-3"}
    assert "x" * 9000 in batched[-4]
    assert sum(len(found) for found in batched) >= 119
    index.close()


@pytest.mark.parametrize("methods", [("simhash",), ("auto",)])
def test_process_batch_gives_the_one_by_one_verdicts(
    backend_config: NearDupConfig, methods: tuple[str, ...]
) -> None:
    check_batches(backend_config.replace(methods=methods))


def test_process_batch_of_index_dependent_signatures(tmp_path: Path) -> None:
    """rarewords' signature needs DF as of its turn: such batches go one by one."""
    backend = f"sqlite:{tmp_path / 'fp.sqlite'}"
    check_batches(
        NearDupConfig(backend=backend, methods=("rarewords",)).replace(rarewords_warmup=0))


def check_batches(config: NearDupConfig) -> None:
    docs = corpus_with_copies()
    one_by_one = Deduplicator(MemoryIndex(), config)
    expected = outcome([one_by_one.process(d) for d in docs])
    index = open_index(config.backend, config)
    dedup = Deduplicator(index, config)
    got = []
    for start in range(0, len(docs), 25):  # batches that split groups and hold whole ones
        got += dedup.process_batch(docs[start : start + 25])
    index.close()
    assert outcome(got) == expected
    assert sum(1 for o in expected if o[2] is not None) > 10


def test_a_forwarding_wrapper_is_not_bypassed() -> None:
    """A view that forwards unknown attributes answers its own lookups in the batch too."""

    class View:
        def __init__(self, index: MemoryIndex) -> None:
            self.index, self.extra = index, MemoryIndex()

        def candidates(self, keys: Mapping[str, Sequence[str]]) -> set[str]:
            return self.index.candidates(keys) | self.extra.candidates(keys)

        def __getattr__(self, name: str) -> object:
            return getattr(self.index, name)

    view = View(MemoryIndex())
    view.extra.add(entry("warm", 7))
    assert candidates_many(view, [{"simhash": block_keys(7)}]) == [{"warm"}]  # type: ignore[arg-type]


def test_dedup_batch_option_keeps_the_output(tmp_path: Path) -> None:
    source, (one, sixteen) = dedup_outputs(
        tmp_path,
        ["--batch", "1", "--backend", f"sqlite:{tmp_path / 'fp-1.sqlite'}"],
        ["--batch", "16", "--backend", f"sqlite:{tmp_path / 'fp-16.sqlite'}"],
    )
    assert one == sixteen
    assert neardup("dedup", str(source), "--batch", "0").returncode == 2
