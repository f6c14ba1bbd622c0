"""One contract, every backend: memory, SQLite and the real Elasticsearch test server."""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from neardup_pipeline import Deduplicator, Document, NearDupConfig
from neardup_pipeline.errors import IndexParamsError
from neardup_pipeline.fingerprint import Fingerprinter
from neardup_pipeline.index import FingerprintIndex, MemoryIndex, open_index
from neardup_pipeline.methods.simhash import block_keys
from tests.index_entries import entry


def test_read_after_write_without_flush(index: FingerprintIndex) -> None:
    index.add(entry("a", 0x1234_5678_9ABC_DEF0, url="http://x/a"))
    assert index.candidates({"simhash": block_keys(0x1234_5678_9ABC_DEF1)}) == {"a"}
    got = index.get(["a", "missing"])
    assert set(got) == {"a"}
    assert got["a"].signatures == {"simhash": "123456789abcdef0"}
    assert got["a"].meta["url"] == "http://x/a"
    assert got["a"].keys["simhash"] == block_keys(0x1234_5678_9ABC_DEF0)
    assert index.count() == 1


def test_candidates_need_a_shared_key_of_the_same_method(index: FingerprintIndex) -> None:
    index.add(entry("a", 0))
    assert index.candidates({"simhash": block_keys(2**64 - 1)}) == set()
    assert index.candidates({"minhash": block_keys(0)}) == set()
    assert index.candidates({}) == set()


def test_re_adding_a_doc_id_replaces_it(index: FingerprintIndex) -> None:
    index.add(entry("a", 0))
    index.add(entry("a", 2**64 - 1))
    index.flush()
    assert index.candidates({"simhash": block_keys(0)}) == set()
    assert index.candidates({"simhash": block_keys(2**64 - 1)}) == {"a"}
    assert index.count() == 1


def test_a_key_shared_by_pages_finds_those_still_holding_it(index: FingerprintIndex) -> None:
    """Pages re-added with other keys leave a shared key one by one (the memory index keeps a
    key of one page as its id alone, of more as a set: both ways round)."""
    for doc_id in ("a", "b", "c"):
        index.add(entry(doc_id, 0))
    index.add(entry("a", 2**64 - 1))
    index.add(entry("b", 2**64 - 1))
    index.flush()
    assert index.candidates({"simhash": block_keys(0)}) == {"c"}
    index.add(entry("c", 2**64 - 1))
    index.add(entry("d", 0))
    index.flush()
    assert index.candidates({"simhash": block_keys(0)}) == {"d"}
    assert index.candidates({"simhash": block_keys(2**64 - 1)}) == {"a", "b", "c"}


def test_flush_keeps_everything_findable(index: FingerprintIndex) -> None:
    rng = random.Random(1)
    fps = {f"doc-{i}": rng.getrandbits(64) for i in range(300)}
    for doc_id, fp in fps.items():
        index.add(entry(doc_id, fp))
    index.flush()
    assert index.count() == 300
    for doc_id, fp in list(fps.items())[::37]:
        assert doc_id in index.candidates({"simhash": block_keys(fp ^ 0b101)})
    assert set(index.get(fps)) == set(fps)


def test_unusual_ids_round_trip(index: FingerprintIndex) -> None:
    ids = ["http://example.com/a?b=c&d=é#f", "x" * 2000, "слово/ٴپ", "with space"]
    for n, doc_id in enumerate(ids):
        index.add(entry(doc_id, n * 0x0101_0101_0101_0101))
    index.flush()
    assert set(index.get(ids)) == set(ids)


def test_parameters_are_recorded_and_mismatch_refused(backend_config: NearDupConfig) -> None:
    first = open_index(backend_config.backend, backend_config)
    Deduplicator(first, backend_config)
    if backend_config.backend != "memory":  # persistent: the record outlives the process
        first.close()
        first = open_index(backend_config.backend, backend_config)
    again = first
    Deduplicator(again, backend_config)  # same parameters: accepted
    with pytest.raises(IndexParamsError) as refused:
        Deduplicator(again, backend_config.replace(simhash_k=5))  # 6 blocks
    assert "simhash blocks: the index has 4, the settings 6" in str(refused.value)
    assert "simhash k: the index has 3, the settings 5" in str(refused.value)
    again.close()


def test_an_index_of_another_stored_layout_is_refused_with_the_rebuild_command(
        persistent_config: NearDupConfig) -> None:
    """Parameters recorded before signatures were packed: the bag's have no `stored`."""
    config = persistent_config.replace(methods=("bag",))
    older = copy.deepcopy(Fingerprinter(config).params())
    del older["methods"]["bag"]["stored"]
    first = open_index(config.backend, config)
    first.ensure_params(older)
    first.close()
    again = open_index(config.backend, config)
    try:
        with pytest.raises(IndexParamsError) as refused:
            Deduplicator(again, config)
        message = str(refused.value)
        assert "a layout this version does not read" in message
        assert "bag stored: the settings have it, the index not" in message
        assert "neardup dedup PAGES.jsonl -o OUT.jsonl --backend" in message
    finally:
        again.close()


def test_persistent_backends_survive_reopening(persistent_config: NearDupConfig) -> None:
    backend_config = persistent_config
    first = open_index(backend_config.backend, backend_config)
    first.add(entry("kept", 42))
    first.close()
    reopened = open_index(backend_config.backend, backend_config)
    assert reopened.candidates({"simhash": block_keys(42)}) == {"kept"}
    reopened.close()


def test_deduplicator_on_every_backend(backend_config: NearDupConfig) -> None:
    text = " ".join(f"word{i % 97} token{i % 89} term{i % 83}" for i in range(400))
    index = open_index(backend_config.backend, backend_config)
    dedup = Deduplicator(index, backend_config)
    assert not dedup.process(Document("one", text=text)).is_duplicate
    second = dedup.process(Document("two", text=text + " appended words here"))
    assert second.duplicate_of == "one" and second.cluster == "one"
    again = dedup.process(Document("one", text=text))
    # Neither its own duplicate nor a duplicate of its own copy: it stays the group's original.
    assert not again.is_duplicate and again.cluster == "one"
    third = dedup.process(Document("three", text=text + " and a different tail"))
    assert third.cluster == "one"
    index.close()


@pytest.mark.parametrize(
    "settings",
    [
        {"methods": ("minhash",)},
        {"methods": ("simhash", "minhash"), "minhash_exact": True},
        {"methods": ("minhash",), "mode": "containment"},
    ],
    ids=["minhash", "both-exact", "containment"],
)
def test_minhash_keys_and_signatures_on_every_backend(
    backend_config: NearDupConfig, settings: dict[str, object]
) -> None:
    config = backend_config.replace(**settings)
    text = " ".join(f"alpha{i % 211} beta{i % 199} gamma{i % 197}" for i in range(600))
    index = open_index(config.backend, config)
    dedup = Deduplicator(index, config)
    dedup.process(Document("first", text=text))
    stored = dedup.keyed(index.get(["first"])["first"])  # keys: made from the signatures
    assert len([k for k in stored.keys["minhash"] if not k.startswith("s:")]) == 15
    if config.minhash.mode == "containment":
        assert any(k.startswith("s:") for k in stored.keys["minhash"])
    decoded = dedup.fingerprinter.decode(stored.signatures)["minhash"]
    assert decoded.values.shape == (84,)
    index.flush()  # the second lookup goes to the backend itself, not only a write cache
    containment = config.minhash.mode == "containment"
    follow = text[: len(text) // 3] if containment else text + " with a short tail"
    verdict = dedup.process(Document("second", text=follow))
    assert verdict.duplicate_of == "first"
    assert verdict.scores["minhash"] >= 0.8
    index.close()


def test_every_backend_is_a_context_manager(backend_config: NearDupConfig) -> None:
    with open_index(backend_config.backend, backend_config) as index:
        index.add(entry("inside", 42))
        assert index.candidates({"simhash": block_keys(42)}) == {"inside"}
    index.close()  # closed by the block; closing again is harmless
    if isinstance(index, MemoryIndex):
        return
    with open_index(backend_config.backend, backend_config) as reopened:
        assert reopened.candidates({"simhash": block_keys(42)}) == {"inside"}


# Written by a process that never closes its index: what it added must survive its exit.
LEFT_OPEN = """
import json, sys
from neardup_pipeline import NearDupConfig, open_index
from tests.index_entries import entry

backend, names = sys.argv[1], json.loads(sys.argv[2])
index = open_index(backend, NearDupConfig(backend=backend).replace(**names))
for n in range(5):
    index.add(entry(f"left-{n}", n * 0x0101_0101_0101_0101))
"""


def test_an_index_left_open_at_exit_keeps_what_it_was_given(
    persistent_config: NearDupConfig,
) -> None:
    config = persistent_config
    names = {} if config.backend.startswith("sqlite:") else {
        "fingerprint_index": config.elastic.fingerprint_index}
    run = subprocess.run(
        [sys.executable, "-c", LEFT_OPEN, config.backend, json.dumps(names)],
        cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True,
        timeout=120, check=False,
    )
    assert run.returncode == 0, run.stderr
    with open_index(config.backend, config) as index:
        assert index.count() == 5
        assert index.candidates({"simhash": block_keys(0x0202_0202_0202_0202)}) == {"left-2"}
