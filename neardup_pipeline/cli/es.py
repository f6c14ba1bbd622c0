"""`neardup es ...`: Elasticsearch administration, run once by someone with more rights than a
crawl needs.

`neardup es install-templates --es URL` installs or updates neardup's index templates (cluster
privilege `manage_index_templates`); crawls and commands with NEARDUP_ES_MANAGE_TEMPLATES off
then only check them, and their role needs no cluster privilege beyond `monitor`.
"""

from __future__ import annotations

import argparse
import json

from neardup_pipeline.cli.commands import about
from neardup_pipeline.cli.options import add_es_options, es_settings
from neardup_pipeline.index.elastic.settings import ElasticSettings

DEFAULT_FINGERPRINT_INDEX = ElasticSettings.fingerprint_index


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = sub.add_parser("es", help=about("es"))
    actions = group.add_subparsers(dest="es_command", required=True)
    install = actions.add_parser(
        "install-templates",
        help="install or update neardup's index templates (needs manage_index_templates)",
        description="Install or update neardup's composable index templates, once, as a user "
        "with the cluster privilege manage_index_templates; crawls and commands with "
        "NEARDUP_ES_MANAGE_TEMPLATES=false then only check them.",
    )
    add_es_options(install, required=True)
    install.add_argument(
        "--fingerprint-index", default=DEFAULT_FINGERPRINT_INDEX, metavar="NAME",
        help="the crawls' fingerprint index (NEARDUP_FINGERPRINT_INDEX; default "
        f"{DEFAULT_FINGERPRINT_INDEX}): a name outside neardup's patterns gets templates of "
        "its own, as a crawl would install them",
    )
    install.add_argument("--json", action="store_true", help="machine-readable output")
    install.set_defaults(func=cmd_install_templates)


def cmd_install_templates(args: argparse.Namespace) -> int:
    from neardup_pipeline.index.elastic.connection import Connection, client_from_settings
    from neardup_pipeline.index.elastic.templates import install_templates, neardup_indices

    settings = es_settings(args)
    client, location = client_from_settings(args.es, settings)
    try:
        connection = Connection(client, location, settings.retry_seconds)
        connection.probe()
        done = install_templates(
            connection, neardup_indices(args.fingerprint_index, args.pages_index)
        )
    finally:
        client.close()
    if args.json:
        print(json.dumps([{"name": t.name, "index_patterns": list(t.patterns),
                           "version": t.version, "action": t.action} for t in done], indent=2))
        return 0
    for t in done:
        print(f"{t.action:<9} index template {t.name} (version {t.version}): "
              f"{', '.join(t.patterns)}")
    print(f"templates ready at {location}: crawls may run with NEARDUP_ES_MANAGE_TEMPLATES=false")
    return 0
