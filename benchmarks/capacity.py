"""Bytes per page and lookup latency of the fingerprint and pages indices at 1M and 10M pages.

Fills a fresh fingerprint index and a fresh pages index, made by neardup's own mappings
(`ElasticIndex` creates them), with documents exactly as neardup stores them for the default
methods (`auto`: simhash and bag): `fingerprint_source` of the `IndexEntry` the deduplicator
records, `page_source` of the page `PagesKeeper.record` writes. At each size it flushes, reports
the primary store size per page of each index with its segment count, force-merges to one
segment and reports it again, and times the real lookup path on a mix of near-copies (found) and
new pages (misses): `ElasticIndex.candidates` (one `search` per page), `candidates_many` (one
`msearch` per batch, as the crawl and `neardup dedup` send them) and `candidates_many` followed by
`get` of every candidate found (the `mget` that verification needs).

How the pages are made. A base of real pages: every page of ../shared/data's corpora (PostgreSQL
manual, Debian installation guide, multisite web pages), each base page either a variant of one with
half its words replaced by corpus words (a distinct page) or a copy of an earlier variant with 1 %
of its words replaced (a near-duplicate), as hygiene_throughput.py makes them. The real
`Deduplicator` (default config, memory index) checks and records each base page: its entry is the
one neardup stores, its verdict gives the cluster fields of both documents. Fingerprinting 10M pages
takes CPU-hours, so page `r * B + i` of the loaded index (B base pages) is base page `i` under seed
`r`: the same entry with every hash value passed through a seeded bijection of its width (`mix`:
word and subject keys in 32 bits, minimums in 16, the site hash in 64; the simhash xor a seed mask;
a word code follows its word key, whose top 16 bits it is), its keys recomputed from the mapped
signature by the method's own `keys`, its URL and doc id those of the base page with `&r=<seed>`
appended, its cluster fields and content hash mapped alike. So every page keeps its real number of
keys (passage keys, sampled from the mapped word codes' runs: as many on average), its real
signature sizes (bytes that look random, as hash values do), its real title, text, URL length and
meta; two pages of one seed are exactly as near as their base pages were (the bijection keeps equal
minimums equal and simhash distances), and pages of different seeds share no key value but by
chance, as distinct crawled pages do. What the derivation does not keep: the pages index's
vocabulary is that of the base corpus (its text repeats once per seed, far apart in the index), so
its terms dictionary is smaller than a crawl's of the same size; the postings, norms and stored text
carry over.

Query mix: half near-copies (1 % of the words of a stored base variant replaced, fingerprinted
by the real Fingerprinter, mapped with a seed whose pages are loaded: found), half new variants
of real pages mapped with a seed never loaded (misses).

Before each size it checks the free disk (twice the estimated growth, for merges, plus 8 GiB)
and stops there, saying so, when the disk would fill. The indices are deleted at the end
unless --keep (a killed run leaves them: delete `neardup-capacity-*` by name).

Usage: python benchmarks/capacity.py --es-url URL [--sizes 1000000 10000000]
    [--pages-sizes 1000000] [--base 10000] [--base-cache FILE] [--queries 2000]
    [--out results.jsonl] [--keep]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import random
import shutil
import sys
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from elasticsearch import ApiError, Elasticsearch, helpers

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.provenance import measured_at
from neardup_pipeline.fingerprint import Document, Fingerprinter
from neardup_pipeline.index.base import IndexEntry
from neardup_pipeline.index.elastic.documents import es_id, fingerprint_source, page_source
from neardup_pipeline.index.elastic.mappings import load_mapping
from neardup_pipeline.index.elastic.store import ElasticIndex
from neardup_pipeline.index.memory import MemoryIndex
from neardup_pipeline.methods.bag_signature import (
    CODE_SHIFT,
    MINIMUM_BITS,
    WORD_BITS,
    BagSignature,
)
from neardup_pipeline.methods.contract import lookup_keys
from neardup_pipeline.verdict.deduplicator import Deduplicator

MASK = (1 << 64) - 1
RESERVE_BYTES = 8 * 2**30  # left free on the disk whatever the estimate
MISS_SEED = 1 << 30  # seeds from here on are never loaded


# ------------------------------------------------------------------ derivation (pure)

def splitmix(value: int) -> int:
    """splitmix64's finaliser: a bijection of 64-bit integers that looks random."""
    z = value & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def mix(values: np.ndarray, key: int, bits: int = 64) -> np.ndarray:
    """A seeded bijection of `bits`-bit values (splitmix64's finaliser for 64; for fewer bits a
    multiply-xorshift within that width), as the stored hash of each width is remapped."""
    z = values.astype(np.uint64) ^ np.uint64(key)
    if bits == 64:
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))
    mask, half = np.uint64((1 << bits) - 1), np.uint64(bits // 2)
    z &= mask
    z = (z * np.uint64(0xBF58476D1CE4E5B9)) & mask  # odd: a bijection mod 2^bits
    z ^= z >> half
    z = (z * np.uint64(0x94D049BB133111EB)) & mask
    return z ^ (z >> half)


def seed_key(seed: int, salt: int = 0) -> int:
    return splitmix(seed * 0x9E3779B97F4A7C15 + salt)


def derived_id(value: str, seed: int) -> str:
    """The URL or doc id of a base page's copy under `seed` (seed 0: the base page itself)."""
    if not seed:
        return value
    return f"{value}{'&' if '?' in value else '?'}r={seed}"


@dataclass(frozen=True)
class BasePage:
    """A real page as neardup recorded it: its fingerprint entry and its pages-index fields."""

    entry: IndexEntry
    page: dict[str, Any]
    decoded: dict[str, Any] = field(compare=False)  # the entry's signatures, decoded once


def mapped_codes(words: np.ndarray, mapped: np.ndarray, codes: np.ndarray, key: int
                 ) -> np.ndarray:
    """Word codes under a seed: a code is its word key's top 16 bits, so it follows its word's
    mapping (a code no kept word has is mapped in the 16-bit space)."""
    prefixes = words >> CODE_SHIFT
    at = np.minimum(np.searchsorted(prefixes, codes.astype(np.uint64)), max(words.size - 1, 0))
    found = prefixes[at] == codes if words.size else np.zeros(codes.size, bool)
    own = mapped[at] >> CODE_SHIFT if words.size else np.zeros(codes.size, np.uint64)
    return np.where(found, own, mix(codes, key, 16)).astype(np.uint16)


class Deriver:
    """Entries and pages of base pages under a seed, keys made by the methods' own `keys`."""

    def __init__(self, fingerprinter: Fingerprinter) -> None:
        self.fingerprinter = fingerprinter
        self.methods = fingerprinter.methods

    def signatures(self, decoded: Mapping[str, Any], seed: int) -> dict[str, Any]:
        """Decoded signatures with every hash value mapped by the seed's bijection."""
        key = seed_key(seed)
        out: dict[str, Any] = {}
        for name, sig in decoded.items():
            if isinstance(sig, BagSignature):
                words = mix(sig.words, key, WORD_BITS)
                order = np.argsort(words, kind="stable")  # stored sorted, as bag_of makes them
                out[name] = replace(
                    sig, words=words[order], weights=sig.weights[order],
                    minimums=mix(sig.minimums, key, MINIMUM_BITS),
                    order=mix(sig.order, key, MINIMUM_BITS),
                    sequence=mapped_codes(sig.words, words, sig.sequence, key),
                    subject=mix(sig.subject, key, WORD_BITS),
                    site=splitmix(sig.site ^ key) if sig.site else 0,
                    region=mix(sig.region, key, MINIMUM_BITS),
                )
            elif isinstance(sig, int):  # simhash: xor keeps every Hamming distance
                out[name] = sig ^ seed_key(seed, 2)
            else:
                raise TypeError(f"no derivation for method {name!r}'s signature {type(sig)}")
        return out

    def entry(self, base: BasePage, seed: int) -> IndexEntry:
        """The fingerprint entry of the base page's copy under `seed`."""
        if not seed:
            return base.entry
        sigs = self.signatures(base.decoded, seed)
        meta = dict(base.entry.meta)
        for name in ("cluster", "duplicate_of", "url"):
            if isinstance(meta.get(name), str):
                meta[name] = derived_id(meta[name], seed)
        if isinstance(meta.get("content_hash"), str):
            meta["content_hash"] = hashlib.blake2b(
                f"{meta['content_hash']}:{seed}".encode(), digest_size=16).hexdigest()
        return IndexEntry(
            derived_id(base.entry.doc_id, seed),
            {name: self.methods[name].encode(sig) for name, sig in sigs.items()},
            lookup_keys(self.methods, sigs),
            meta,
        )

    def keys(self, base: BasePage, seed: int) -> dict[str, list[str]]:
        """Only the lookup keys of the copy under `seed` (for queries)."""
        if not seed:
            return {name: list(keys) for name, keys in base.entry.keys.items()}
        return lookup_keys(self.methods, self.signatures(base.decoded, seed))


def derived_page(page: Mapping[str, Any], seed: int) -> dict[str, Any]:
    """The pages-index document of the base page's copy under `seed`."""
    out = dict(page)
    for name in ("url", "doc_id", "cluster_id", "duplicate_of", "nearest"):
        if isinstance(out.get(name), str):
            out[name] = derived_id(out[name], seed)
    return page_source(out)


# ------------------------------------------------------------------ the base of real pages

def build_base(n: int, queries: int, seed: int) -> tuple[list[BasePage], list[BasePage],
                                                          list[BasePage]]:
    """(`n` base pages checked and recorded by the real Deduplicator, found-query pages: near
    copies of stored variants, miss-query pages: new variants), all fingerprinted for real."""
    from benchmarks.hygiene_throughput import documents, edit, real_pages
    from tests.corpora import WORD

    class Recording(MemoryIndex):
        def __init__(self) -> None:
            super().__init__()
            self.recorded: dict[str, IndexEntry] = {}

        def add(self, entry: IndexEntry) -> None:
            super().add(entry)
            self.recorded[entry.doc_id] = entry

    index = Recording()
    dedup = Deduplicator(index)
    fpr = dedup.fingerprinter
    base: list[BasePage] = []
    started = time.monotonic()
    first_seen = datetime(2026, 1, 1, tzinfo=timezone.utc).timestamp()
    variants: list[tuple[str, str]] = []
    for i, doc in enumerate(documents(n, seed)):
        verdict, fp = dedup.process_and_fingerprint(Document(doc["url"], html=doc["html"],
                                                             url=doc["url"]))
        if fp is None or fp.status != "ok" or doc["url"] not in index.recorded:
            continue
        if "?v=" in doc["url"] and "copy" not in doc["url"]:
            variants.append((doc["url"], doc["html"]))
        entry = index.recorded[doc["url"]]
        cluster = verdict.cluster or verdict.doc_id
        canonical = cluster == verdict.doc_id  # policy "first": the cluster's first page
        page = {"url": doc["url"], "doc_id": verdict.doc_id, "title": fp.title, "text": fp.text,
                "cluster_id": cluster, "is_canonical": canonical,
                "duplicate_of": None if canonical else cluster,
                "nearest": verdict.duplicate_of, "similarity": verdict.similarity,
                "method": verdict.method, "text_length": len(fp.text),
                "first_seen": datetime.fromtimestamp(first_seen + i, timezone.utc).isoformat(),
                "declared_canonical": verdict.declared_canonical}
        base.append(BasePage(entry, page, fpr.decode(entry.signatures)))
        if (i + 1) % 2000 == 0:
            print(f"  base: {i + 1:,} pages checked, {time.monotonic() - started:.0f} s",
                  file=sys.stderr, flush=True)
    rng = random.Random(seed + 1)
    pages = real_pages()
    vocabulary = sorted({w for _, html in pages[::7] for w in WORD.findall(html)
                         if w.isalpha()})[:20_000]
    by_url = {b.entry.doc_id: b for b in base}

    def checked(url: str, html: str) -> BasePage | None:
        fp = fpr.fingerprint(Document(url, html=html, url=url))
        if fp.status != "ok":
            return None
        entry = IndexEntry(url, fpr.encode(fp), fp.keys, {})
        return BasePage(entry, {"stored": url}, fpr.decode(entry.signatures))

    found: list[BasePage] = []
    while len(found) < queries // 2:
        url, html = rng.choice(variants)
        if url not in by_url:
            continue
        query = checked(f"{url}&q={len(found)}", edit(html, 0.01, rng, vocabulary))
        if query is not None:
            found.append(replace(query, page={"stored": url}))
    missed: list[BasePage] = []
    while len(missed) < queries - queries // 2:
        url, html = rng.choice(pages)
        query = checked(f"{url}?new={len(missed)}", edit(html, 0.5, rng, vocabulary))
        if query is not None:
            missed.append(query)
    print(f"  base: {len(base):,} pages recorded, {len(found) + len(missed):,} query pages, "
          f"{time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    return base, found, missed


# ------------------------------------------------------------------ loading and measuring

def fingerprint_actions(index: str, base: Sequence[BasePage], deriver: Deriver,
                        start: int, stop: int) -> Iterator[dict[str, Any]]:
    for n in range(start, stop):
        seed, i = divmod(n, len(base))
        entry = deriver.entry(base[i], seed)
        yield {"_index": index, "_id": es_id(entry.doc_id), "_source": fingerprint_source(entry)}


def page_actions(index: str, base: Sequence[BasePage], start: int,
                 stop: int) -> Iterator[dict[str, Any]]:
    for n in range(start, stop):
        seed, i = divmod(n, len(base))
        source = derived_page(base[i].page, seed)
        yield {"_index": index, "_id": es_id(source["url"]), "_source": source}


def bulk_load(client: Elasticsearch, index: str, actions: Iterator[dict[str, Any]],
              chunk: int) -> None:
    """Replicas 0 and refresh off while loading (the bulk-load settings), restored after."""
    client.indices.put_settings(index=index, settings={
        "index": {"refresh_interval": "-1", "auto_expand_replicas": "false",
                  "number_of_replicas": 0}})
    try:
        for ok, info in helpers.parallel_bulk(client, actions, thread_count=2, chunk_size=chunk,
                                              max_chunk_bytes=50 * 2**20, raise_on_error=True):
            if not ok:
                raise RuntimeError(f"bulk refused: {info}")
    finally:
        client.indices.put_settings(index=index, settings={
            "index": {"refresh_interval": None, "auto_expand_replicas": "0-1"}})
        client.indices.refresh(index=index)


def store(client: Elasticsearch, index: str) -> dict[str, int]:
    stats = client.indices.stats(index=index, metric=["store", "segments", "docs"])
    primaries = stats["_all"]["primaries"]
    return {"bytes": int(primaries["store"]["size_in_bytes"]),
            "segments": int(primaries["segments"]["count"]),
            "docs": int(primaries["docs"]["count"]),
            "segment_memory": int(primaries["segments"].get("memory_in_bytes", 0))}


def disk_usage(client: Elasticsearch, index: str) -> dict[str, int]:
    """Bytes on disk by kind (`_disk_usage`): what lookups read (terms) against what only a
    fetch reads (stored fields: `_source`, `_id`)."""
    body = client.perform_request(
        "POST", f"/{index}/_disk_usage", params={"run_expensive_tasks": "true"},
        headers={"accept": "application/json"}).body
    out: dict[str, int] = {}
    for name, info in body[index]["fields"].items():
        for kind in ("inverted_index", "stored_fields", "doc_values", "points", "norms",
                     "term_vectors", "knn_vectors"):
            size = info.get(kind, {}).get("total_in_bytes", 0) if kind == "inverted_index" \
                else info.get(f"{kind}_in_bytes", 0)
            if size:
                label = name if name.endswith("_keys") or name in (
                    "text", "_id", "_source", "_recovery_source", "signatures") else "other"
                out[f"{kind}:{label}"] = out.get(f"{kind}:{label}", 0) + int(size)
    out["total"] = int(body[index]["store_size_in_bytes"])
    return out


def percentiles(seconds: Sequence[float]) -> tuple[float, float]:
    p50, p99 = np.percentile(np.array(seconds) * 1000.0, [50, 99])
    return float(p50), float(p99)


def lookups(index: ElasticIndex, asked: Sequence[Mapping[str, Sequence[str]]],
            expected: Sequence[str | None], batches: Sequence[int],
            ) -> tuple[list[dict[str, Any]], int, int]:
    """Latency rows of each lookup path on the same queries; candidates found in all, and how
    many near-copies found their stored original among their candidates."""
    for keys in asked[:50]:  # warm-up: connections, JIT
        index.candidates(keys)
    single: list[float] = []
    candidates = hits = 0
    queries_before = shard_queries(index)
    for keys, original in zip(asked, expected, strict=True):
        started = time.perf_counter()
        found = index.candidates(keys)
        single.append(time.perf_counter() - started)
        candidates += len(found)
        hits += original is not None and original in found
    per_lookup = (shard_queries(index) - queries_before) / len(asked)
    rows = [{"lookup": "`search`", "pages": 1, "seconds": single,
             "shard_queries": per_lookup}]
    for size in batches:
        timed: list[float] = []
        fetched: list[float] = []
        for start in range(0, len(asked), size):
            chunk = asked[start:start + size]
            started = time.perf_counter()
            many = index.candidates_many(chunk)
            middle = time.perf_counter()
            index.get({doc_id for ids in many for doc_id in ids})
            fetched.append(time.perf_counter() - started)
            timed.append(middle - started)
        rows.append({"lookup": "`msearch`", "pages": size, "seconds": timed})
        rows.append({"lookup": "`msearch` + `mget`", "pages": size, "seconds": fetched})
    return rows, candidates, hits


def shard_queries(index: ElasticIndex) -> int:
    """Shard-level query phases the fingerprint index has run, every copy counted: what a
    lookup costs the cluster grows with the shards it asks."""
    stats = index.client.indices.stats(index=index.fingerprint_index, metric="search")
    return int(stats["_all"]["total"]["search"]["query_total"])


def create_sharded(client: Elasticsearch, name: str, shards: int) -> None:
    """The fingerprint index as neardup makes it, with `shards` primary shards (neardup keeps
    an index that exists and adds only the fields it lacks)."""
    body = load_mapping("fingerprints")
    settings = {**body["settings"]["index"], "number_of_shards": shards}
    client.indices.create(index=name, settings={"index": settings}, mappings=body["mappings"])


def disk_free(path: str) -> int:
    return shutil.disk_usage(path).free


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--es-url", default=os.environ.get("NEARDUP_TEST_ES_URL",
                                                           "http://127.0.0.1:9200"))
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000],
                        help="fingerprint index sizes to measure at, ascending")
    parser.add_argument("--pages-sizes", type=int, nargs="*", default=[1_000_000],
                        help="sizes (among --sizes) at which the pages index grows too")
    parser.add_argument("--base", type=int, default=10_000, help="real pages fingerprinted")
    parser.add_argument("--base-cache", type=Path, help="pickle of the base (made if missing)")
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--batch", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--chunk", type=int, default=2000, help="documents per bulk request")
    parser.add_argument("--no-merge", action="store_true", help="skip the force-merges")
    parser.add_argument("--disk-path", default="/", help="filesystem of the server's data")
    parser.add_argument("--out", type=Path, help="append each size's figures as a JSON line")
    parser.add_argument("--keep", action="store_true", help="keep the indices afterwards")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--shards", type=int, default=0,
                        help="primary shards of the fingerprint index (default: neardup's)")
    args = parser.parse_args()

    if args.base_cache and args.base_cache.exists():
        base, found_q, miss_q = pickle.loads(args.base_cache.read_bytes())
    else:
        base, found_q, miss_q = build_base(args.base, args.queries, args.seed)
        if args.base_cache:
            args.base_cache.write_bytes(pickle.dumps((base, found_q, miss_q)))
    deriver = Deriver(Fingerprinter())

    tag = uuid.uuid4().hex[:8]
    fname, pname = f"neardup-capacity-fp-{tag}", f"neardup-capacity-pages-{tag}"
    client = Elasticsearch(args.es_url, request_timeout=3600)
    try:
        server = str(next(iter(client.nodes.info()["nodes"].values()))["version"])
    except ApiError:
        server = "(version not reported)"
    if args.shards:
        create_sharded(client, fname, args.shards)
    index = ElasticIndex(client, fingerprint_index=fname, pages_index=pname, ordered=False)
    rng = random.Random(args.seed + 2)
    loaded = {fname: 0, pname: 0}
    load_s = {fname: 0.0, pname: 0.0}
    per_page = {fname: 6000.0, pname: 12000.0}  # guesses until measured, for the disk check
    print(f"{measured_at()}; Elasticsearch {server}; {len(base):,} base pages", flush=True)
    try:
        for size in args.sizes:
            grow = [fname] + ([pname] if size in args.pages_sizes else [])
            need = sum((size - loaded[n]) * per_page[n] * 2 for n in grow)  # 2: merge headroom
            if need > disk_free(args.disk_path) - RESERVE_BYTES:
                print(f"stopping before {size:,}: {need / 2**30:.0f} GiB needed, "
                      f"{disk_free(args.disk_path) / 2**30:.0f} GiB free", flush=True)
                break
            result: dict[str, Any] = {"size": size, "at": measured_at(), "server": server}
            for name in grow:
                actions = (fingerprint_actions(fname, base, deriver, loaded[name], size)
                           if name == fname else page_actions(pname, base, loaded[name], size))
                started = time.monotonic()
                bulk_load(client, name, actions, args.chunk)
                load_s[name] += time.monotonic() - started
                loaded[name] = size
                print(f"  {name}: {size:,} loaded, {load_s[name]:.0f} s in all", file=sys.stderr,
                      flush=True)
            for name in (fname, pname):
                if not loaded[name]:
                    continue
                client.indices.flush(index=name)
                flushed = store(client, name)
                per_page[name] = flushed["bytes"] / max(1, flushed["docs"])
                result[name] = {"flushed": flushed, "load_s": load_s[name],
                                "docs_per_s": loaded[name] / max(load_s[name], 1e-9)}
            seeds = max(1, size // len(base))  # seeds whose every page is loaded
            asked: list[Mapping[str, Sequence[str]]] = []
            expected: list[str | None] = []
            for q in range(len(found_q) + len(miss_q)):
                if q % 2 == 0 and q // 2 < len(found_q):
                    page, seed = found_q[q // 2], rng.randrange(seeds)
                    expected.append(derived_id(page.page["stored"], seed))
                else:
                    page, seed = miss_q[min(q // 2, len(miss_q) - 1)], MISS_SEED + q
                    expected.append(None)
                asked.append(deriver.keys(page, seed))
            rows, candidates, hits = lookups(index, asked, expected, args.batch)
            result["lookups_segments"] = result[fname]["flushed"]["segments"]
            result["rows"] = [{**r, "p50_p99": percentiles(r["seconds"])} for r in rows]
            result["candidates"] = candidates
            result["found"] = f"{hits}/{sum(e is not None for e in expected)}"
            if not args.no_merge:
                for name in (fname, pname):
                    if loaded[name]:
                        started = time.monotonic()
                        client.indices.forcemerge(index=name, max_num_segments=1)
                        merged = store(client, name)
                        result[name]["merged"] = merged
                        result[name]["merge_s"] = time.monotonic() - started
                        result[name]["disk_usage"] = disk_usage(client, name)
                rows, _, _ = lookups(index, asked, expected, args.batch)
                result["rows_merged"] = [{**r, "p50_p99": percentiles(r["seconds"])}
                                         for r in rows]
            try:
                nodes = client.nodes.stats(metric="indices", index_metric="segments")
                result["node_segments"] = next(iter(nodes["nodes"].values()))["indices"][
                    "segments"]
            except Exception as exc:  # reported, not needed
                result["node_segments"] = repr(exc)
            result["disk_free"] = disk_free(args.disk_path)
            report(result, fname, pname)
            if args.out:
                for r in result.get("rows", []) + result.get("rows_merged", []):
                    r.pop("seconds", None)
                with args.out.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(result) + "\n")
    finally:
        if not args.keep:
            client.options(ignore_status=404).indices.delete(index=f"{fname},{pname}")
        index.close()
    return 0


def report(result: dict[str, Any], fname: str, pname: str) -> None:
    size = result["size"]
    print(f"\n### {size:,} pages ({result['at']}; Elasticsearch {result['server']})")
    print("\n| index | docs | flushed MiB | segments | bytes/page | merged MiB | bytes/page, "
          "1 segment | load docs/s | merge s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, name in (("fingerprints", fname), ("pages", pname)):
        info = result.get(name)
        if not info:
            continue
        fl, mg = info["flushed"], info.get("merged")
        merged = (f"{mg['bytes'] / 2**20:,.0f} | {mg['bytes'] / mg['docs']:,.0f}" if mg
                  else "- | -")
        print(f"| {label} | {fl['docs']:,} | {fl['bytes'] / 2**20:,.0f} | {fl['segments']} | "
              f"{fl['bytes'] / fl['docs']:,.0f} | {merged} | {info['docs_per_s']:,.0f} | "
              f"{info.get('merge_s', 0):.0f} |")
    for key, label in (("rows", f"as loaded ({result['lookups_segments']} segments)"),
                       ("rows_merged", "one segment")):
        if key not in result:
            continue
        print(f"\nlookups, {label}: | path | pages per request | p50 ms | p99 ms | per page "
              "at p50, ms |")
        print("|---|---|---|---|---|")
        for r in result[key]:
            p50, p99 = r["p50_p99"]
            print(f"| {r['lookup']} | {r['pages']} | {p50:.2f} | {p99:.2f} | "
                  f"{p50 / r['pages']:.3f} |")
    for name in (fname, pname):
        usage = result.get(name, {}).get("disk_usage")
        if usage:
            print(f"\n_disk_usage {name}: " + ", ".join(
                f"{k} {v / 2**20:,.1f} MiB" for k, v in sorted(usage.items())))
    print(f"\n{result['candidates']:,} candidates in all; near-copies finding their original: "
          f"{result['found']}; shard-level queries a lookup (`search`): "
          f"{result['rows'][0]['shard_queries']:.2f}")
    print(f"\nnode segments: {result.get('node_segments')}; disk free "
          f"{result['disk_free'] / 2**30:.1f} GiB", flush=True)


if __name__ == "__main__":
    sys.exit(main())
