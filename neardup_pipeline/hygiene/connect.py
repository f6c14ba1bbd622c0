"""The run's one way to Elasticsearch: the project's client factory, wrapped in a Connection
(bounded retries, readable errors). Reader processes come through here too."""

from __future__ import annotations

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.index.elastic.connection import Connection, client_from_settings


def connect(url: str, config: NearDupConfig) -> Connection:
    """A connection to `url` with the configuration's credentials, TLS and timeouts."""
    client, location = client_from_settings(url, config.elastic)
    connection = Connection(client, location, config.elastic.retry_seconds)
    connection.manage_templates = config.elastic.manage_templates
    try:
        connection.probe()
    except BaseException:
        client.close()
        raise
    return connection
