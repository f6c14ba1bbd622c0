"""Clusters do not depend on the order pages arrive in: the same partition and the same
canonicals for every order of one input, on the memory and SQLite indexes, with the markup real
copies carry (rel=canonical on print variants and mirrors)."""

from __future__ import annotations

import itertools
import json
import multiprocessing
import random
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from neardup_pipeline import Deduplicator, Document, NearDupConfig
from neardup_pipeline.cli.main import main
from neardup_pipeline.index import open_index
from neardup_pipeline.verdict.verdict import Verdict
from tests.corpora import postgresql_pages
from tests.es_indices import delete_indices, unique_index_names

ORDERS = 5
ARTICLE = "https://www.postgresql.org/docs/15/{}"
MIRROR = "http://mirror.example.net/pgdocs/15.18/{}"
PRINT = "https://www.postgresql.org/docs/15/{}?print=1"


def _declaring(html: bytes, canonical: str) -> str:
    """The page with `canonical` declared in its head (an existing declaration replaced)."""
    text = html.decode("utf-8", "replace")
    link = f'<link rel="canonical" href="{canonical}">'
    return text.replace("<head>", "<head>" + link, 1) if "<head>" in text else link + text


def documents(groups: int = 30) -> list[Document]:
    """Each sampled page of 15.20 as the article (naming itself), its 15.18 release on a mirror
    and a print view, both naming the article canonical."""
    by_group: dict[str, dict[str, bytes]] = defaultdict(dict)
    for page in postgresql_pages():
        by_group[page.group][page.doc_id.split("/")[0]] = page.html
    chosen = sorted(g for g, releases in by_group.items() if len(releases) == 2)[:groups]
    docs = []
    for name in chosen:
        article = ARTICLE.format(name)
        for url, html in ((article, by_group[name]["15.20"]),
                          (MIRROR.format(name), by_group[name]["15.18"]),
                          (PRINT.format(name), by_group[name]["15.20"])):
            docs.append(Document(url, html=_declaring(html, article), url=url))
    return docs


def partition(verdicts: Iterable[Verdict]) -> set[frozenset[str]]:
    clusters: dict[str, set[str]] = defaultdict(set)
    for verdict in verdicts:
        clusters[str(verdict.cluster)].add(verdict.doc_id)
    return {frozenset(members) for members in clusters.values()}


def run(docs: list[Document], backend: str, names: dict[str, str] | None = None
        ) -> list[Verdict]:
    config = NearDupConfig(backend=backend).replace(**(names or {}))
    index = open_index(backend, config)
    try:
        dedup = Deduplicator(index, config)
        verdicts = dedup.process_batch(docs)
        return dedup.as_clusters_stand(verdicts)
    finally:
        index.close()


@pytest.mark.parametrize("backend", ["memory", "sqlite", "elasticsearch"])
def test_every_order_gives_one_partition_and_one_canonical(backend: str, tmp_path: Path,
                                                           request: pytest.FixtureRequest) -> None:
    docs = documents()
    rng = random.Random(43)
    seen: list[tuple[set[frozenset[str]], dict[str, str | None]]] = []
    for order in range(ORDERS):
        shuffled = rng.sample(docs, len(docs))
        if backend == "elasticsearch":
            es_url = request.getfixturevalue("es_url")
            names = unique_index_names("orders")
            try:
                verdicts = run(shuffled, es_url, names)
            finally:
                delete_indices(es_url, names)
        else:
            spec = backend if backend == "memory" else f"sqlite:{tmp_path / f'{order}.sqlite'}"
            verdicts = run(shuffled, spec)
        seen.append((partition(verdicts), {v.doc_id: v.canonical for v in verdicts}))
    assert all(found == seen[0] for found in seen[1:])
    clusters, canonicals = seen[0]
    for members in clusters:
        articles = [m for m in members if m.startswith("https://www.postgresql.org/docs/15/")
                    and "?print" not in m]
        # every cluster holds one article's copies, and the article is their canonical
        assert len(articles) == 1, members
        assert {canonicals[m] for m in members} == {articles[0]}
    # the mirrored release and the print view are found beside their article
    grouped = sum(len(members) == 3 for members in clusters)
    assert grouped >= 0.9 * len(clusters)


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_a_page_between_two_clusters_joins_them_in_every_order(backend: str,
                                                                 tmp_path: Path) -> None:
    """o ~ m and m ~ p, but not o ~ p: whichever comes last, the three are one cluster."""
    vocab = [f"{a}{b}" for a, b in itertools.product(
        ["alpha", "bravo", "delta", "gamma", "kilo"], ["ton", "ville", "berg", "ford", "stad",
                                                       "mouth", "wick", "ham", "by", "dale"])]
    distinct = [f"{a}{b}" for a, b in itertools.product(vocab, vocab)][:140]
    texts = {"o": distinct[0:100], "m": distinct[20:120], "p": distinct[40:140]}
    config = NearDupConfig(methods=("bag",)).replace(language="en", bag_order_threshold=0.5)
    for n, order in enumerate(itertools.permutations(texts)):
        spec = "memory" if backend == "memory" else f"sqlite:{tmp_path / f'{n}.sqlite'}"
        index = open_index(spec, config)
        try:
            dedup = Deduplicator(index, config)
            verdicts = [dedup.process(Document(i, text=" ".join(texts[i]))) for i in order]
            final = dedup.as_clusters_stand(verdicts)
        finally:
            index.close()
        assert partition(final) == {frozenset(texts)}, order
        assert {v.canonical for v in final} == {v.cluster for v in final} == {order[0]}  # a tie


def test_dedup_writes_the_final_clusters(tmp_path: Path) -> None:
    """`neardup dedup`: grouping the output by `cluster` gives the partition, in any order, and
    one line of each cluster says it is the canonical."""
    docs = documents(groups=12)
    outputs = []
    for order in range(3):
        shuffled = random.Random(order).sample(docs, len(docs))
        source, out = tmp_path / f"in{order}.jsonl", tmp_path / f"out{order}.jsonl"
        source.write_text("".join(json.dumps({"id": d.doc_id, "url": d.url, "html": d.html})
                                  + "\n" for d in shuffled), encoding="utf-8")
        assert main(["dedup", str(source), "-o", str(out)]) == 0
        lines = [json.loads(line) for line in out.read_text().splitlines()]
        assert [line["id"] for line in lines] == [d.doc_id for d in shuffled]  # input order
        clusters: dict[str, set[str]] = defaultdict(set)
        for line in lines:
            clusters[line["cluster"]].add(line["id"])
            assert line["canonical"] == (line["duplicate_of"] is None)
        for members in clusters.values():
            assert sum(line["canonical"] for line in lines if line["id"] in members) == 1
        outputs.append({line["id"]: (line["cluster"], line["duplicate_of"], line["similarity"])
                        for line in lines})
    assert outputs[0] == outputs[1] == outputs[2]


def _writer(es_url: str, names: dict[str, str], docs: list[Document], barrier: Any) -> None:
    """One crawler process: its share of the pages, in its own order, on the shared index."""
    config = NearDupConfig(backend=es_url).replace(**names)
    index = open_index(es_url, config)
    try:
        dedup = Deduplicator(index, config)
        barrier.wait()
        for start in range(0, len(docs), 5):
            dedup.process_batch(docs[start:start + 5])
    finally:
        index.close()


def test_four_crawler_processes_on_one_index_give_the_partition_of_one(es_url: str) -> None:
    """The pages shared out among 4 processes checking at once on one Elasticsearch index: the
    clusters the index holds at the end are those of one process reading them in order."""
    docs = documents(groups=24)
    expected = partition(run(docs, "memory"))
    shuffled = random.Random(44).sample(docs, len(docs))
    names = unique_index_names("four")
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(4)
    workers = [context.Process(target=_writer, args=(es_url, names, shuffled[n::4], barrier))
               for n in range(4)]
    try:
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=300)
            assert worker.exitcode == 0
        config = NearDupConfig(backend=es_url).replace(**names)
        index = open_index(es_url, config)
        try:
            final = Deduplicator(index, config).canonicals_of(d.doc_id for d in docs)
        finally:
            index.close()
    finally:
        for worker in workers:
            if worker.is_alive():
                worker.kill()
        delete_indices(es_url, names)
    clusters: dict[str, set[str]] = defaultdict(set)
    for doc_id, canonical in final.items():
        clusters[canonical].add(doc_id)
    assert {frozenset(m) for m in clusters.values()} == expected
