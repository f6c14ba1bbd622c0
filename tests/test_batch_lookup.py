"""Batched lookups (msearch on Elasticsearch) give the one-by-one verdicts, on every backend."""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from neardup_pipeline import Deduplicator, Document, NearDupConfig
from neardup_pipeline.index import IndexEntry, MemoryIndex, open_index
from neardup_pipeline.index.base import candidates_many
from neardup_pipeline.methods.simhash import block_keys
from neardup_pipeline.verdict.deduplicator import Verdict

from .test_cli import neardup, write_jsonl


def corpus(seed: int = 9) -> list[Document]:
    """Originals followed closely by edited copies (same batch), re-checked ids, an empty page."""
    rng = random.Random(seed)
    words = [f"w{n}" for n in range(400)]
    docs: list[Document] = []
    for n in range(40):
        text = [rng.choice(words) for _ in range(150)]
        docs.append(Document(f"d{n}", text=" ".join(text)))
        for m in range(rng.randint(0, 2)):
            edited = list(text)
            for _ in range(rng.randint(0, 3)):
                edited[rng.randrange(len(edited))] = rng.choice(words)
            docs.append(Document(f"d{n}-{m}", text=" ".join(edited)))
        if n % 13 == 5:  # the same id again, in the same batch: changed and unchanged
            docs.append(Document(f"d{n}", text=" ".join(reversed(text))))
            docs.append(Document(f"d{n - 1}", text=docs[-4].text))
        if n == 20:
            docs.append(Document("empty", text="too short"))
    return docs


def outcome(verdicts: Sequence[Verdict]) -> list[tuple[object, ...]]:
    return [
        (v.doc_id, v.status, v.duplicate_of, v.similarity, v.method, v.cluster) for v in verdicts
    ]


def entry(doc_id: str, fingerprint: int) -> IndexEntry:
    return IndexEntry(
        doc_id, {"simhash": f"{fingerprint:016x}"}, {"simhash": block_keys(fingerprint)},
        {"cluster": doc_id},
    )


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
    check_batches(NearDupConfig(backend=backend, methods=("rarewords",), rarewords_warmup=0))


def check_batches(config: NearDupConfig) -> None:
    docs = corpus()
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


def dedup_outputs(tmp_path: Path, *options: list[str]) -> tuple[Path, list[list[object]]]:
    """The corpus (with one unreadable line) through `neardup dedup` once per option list."""
    rows: list[object] = [{"id": d.doc_id, "text": d.text} for d in corpus()]
    rows.insert(7, "not json")
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    outputs: list[list[object]] = []
    for n, extra in enumerate(options):
        out = tmp_path / f"out-{n}.jsonl"
        run = neardup("dedup", str(source), "-o", str(out), *extra)
        assert run.returncode == 1 and "skipped as unreadable" in run.stderr, run.stderr
        outputs.append([json.loads(line) for line in out.read_text().splitlines()])
        assert len(outputs[-1]) == len(rows) - 1
    return source, outputs


def test_dedup_batch_option_keeps_the_output(tmp_path: Path) -> None:
    source, (one, sixteen) = dedup_outputs(
        tmp_path,
        ["--batch", "1", "--backend", f"sqlite:{tmp_path / 'fp-1.sqlite'}"],
        ["--batch", "16", "--backend", f"sqlite:{tmp_path / 'fp-16.sqlite'}"],
    )
    assert one == sixteen
    assert neardup("dedup", str(source), "--batch", "0").returncode == 2
