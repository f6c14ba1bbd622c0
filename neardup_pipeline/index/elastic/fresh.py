"""A fresh start on Elasticsearch: delete the indices one crawl's names stand for.

`neardup crawl --fresh` (the demo's default) means a run that remembers no earlier one; on
SQLite that is a deleted file, here the fingerprint index and the side indices named after it
(`templates.neardup_indices`), and the pages index when the crawl has one."""

from __future__ import annotations

from elasticsearch import ApiError, TransportError

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.errors import IndexFailure, IndexUnavailable
from neardup_pipeline.index.elastic.connection import client_from_config, describe
from neardup_pipeline.index.elastic.templates import neardup_indices


def delete_crawl_indices(config: NearDupConfig) -> list[str]:
    """Delete the crawl's indices that exist; the names of those deleted."""
    elastic = config.elastic
    client, location = client_from_config(config.backend, config)
    names = [spec.index for spec in neardup_indices(elastic.fingerprint_index, elastic.pages_index)]
    try:
        existing = [name for name in names if client.indices.exists(index=name)]
        if existing:
            client.indices.delete(index=",".join(existing))
    except TransportError as exc:
        raise IndexUnavailable(
            f"--fresh could not reach Elasticsearch at {location}: {describe(exc)}") from exc
    except ApiError as exc:
        raise IndexFailure(
            f"--fresh could not delete {', '.join(names)} at {location}: {describe(exc)}; "
            "delete them as an administrator, or run without --fresh") from exc
    finally:
        client.close()
    return existing
