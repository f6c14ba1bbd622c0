"""Options shared by several commands, and the configuration they describe."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neardup_pipeline.config import METHOD_CHOICES, NearDupConfig
from neardup_pipeline.index.elastic.credentials import url_credentials
from neardup_pipeline.index.elastic.environment import with_environment
from neardup_pipeline.index.elastic.redaction import split_userinfo
from neardup_pipeline.index.elastic.settings import ElasticSettings
from neardup_pipeline.methods.settings import (
    MODES,
    AnchorsSettings,
    MinhashSettings,
    SimhashSettings,
)
from neardup_pipeline.sketch.settings import HASH_NAMES, SketchSettings
from neardup_pipeline.text.settings import CONTENTS, TextSettings

if TYPE_CHECKING:
    from neardup_pipeline.hygiene.fields import FieldSpec

DEFAULT_PAGES_INDEX = "neardup-pages"


def add_method_options(parser: argparse.ArgumentParser) -> None:
    """How documents are fingerprinted and judged (dedup and compare); every default is the
    configuration's (an option left out changes nothing)."""
    parser.add_argument(
        "--method", action="append", choices=METHOD_CHOICES,
        help="detection method (repeatable; default auto = simhash + bag)",
    )
    parser.add_argument(
        "--content", choices=CONTENTS,
        help="text to fingerprint: the page without its site chrome, the whole page, or its main"
        f" content (resiliparse; default: {TextSettings.content})",
    )
    add_word_options(parser)
    parser.add_argument("--hash", choices=HASH_NAMES,
                        help=f"word and shingle hash (default: {SketchSettings.hash})")
    parser.add_argument("--k", type=int,
                        help=f"simhash: max Hamming distance (default: {SimhashSettings.k})")
    parser.add_argument(
        "--threshold", type=float,
        help="minhash: resemblance (or containment) floor (default: "
        f"{MinhashSettings.threshold})",
    )
    parser.add_argument(
        "--exact", action="store_true", default=None,
        help="minhash: verify by exact Jaccard of shingle sets",
    )
    parser.add_argument("--anchors-model", help="anchors: fitted model (dedup: else fit on input)")
    parser.add_argument("--anchors-min-bits", type=int,
                        help="anchors: fewer set bits are never a duplicate (default: "
                        f"{AnchorsSettings.min_bits})")
    parser.add_argument(
        "--mode", choices=MODES,
        help="containment: flag a document mostly contained in an earlier one (minhash; "
        f"default: {MinhashSettings.mode})",
    )


def add_word_options(parser: argparse.ArgumentParser) -> None:
    """How a text becomes words: the language, whether its stop words go, whether its words are
    stemmed (None: the configuration's default)."""
    parser.add_argument("--language", help="ISO 639-1 code for every document (default: detect)")
    parser.add_argument(
        "--stopwords", action=argparse.BooleanOptionalAction, default=None,
        help="drop the stop words of each page's language (default: "
        f"{TextSettings.remove_stopwords}; --no-stopwords: every word counts)")
    parser.add_argument(
        "--stem", action=argparse.BooleanOptionalAction, default=None,
        help=f"Snowball stems in each page's language (default: {TextSettings.stem}; "
        "--no-stem: words as they are)")


def word_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The flat settings `add_word_options` describes (None: the configuration's default)."""
    return {"language": args.language, "remove_stopwords": args.stopwords, "stem": args.stem}


def config_from_args(args: argparse.Namespace, **extra: Any) -> NearDupConfig:
    """The configuration that `add_method_options` describes, plus a command's own settings
    (flat names; None: the configuration's default)."""
    methods = tuple(args.method or (("minhash",) if args.mode == "containment" else ("auto",)))
    given = {
        **word_settings(args),
        "hash": args.hash,
        "simhash_k": args.k,
        "minhash_threshold": args.threshold,
        "containment_threshold": args.threshold,
        "minhash_exact": args.exact,
        "mode": args.mode,
        "content": args.content,
        "anchors_model": args.anchors_model,
        "anchors_min_bits": args.anchors_min_bits,
        **extra,
    }
    return with_given(NearDupConfig(methods=methods), given)


def with_given(config: NearDupConfig, given: dict[str, Any]) -> NearDupConfig:
    """`config` with the settings an option gave (flat names; None: left as it is)."""
    return config.replace(**{name: value for name, value in given.items() if value is not None})


def add_fit_command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, about: str,
    fit_help: str, output_help: str,
) -> argparse.ArgumentParser:
    """`neardup NAME fit CORPUS -o OUTPUT`: the parser of a model fitted on a corpus."""
    group = sub.add_parser(name, help=about)
    actions = group.add_subparsers(dest=f"{name}_command", required=True)
    fit_cmd = actions.add_parser("fit", help=fit_help)
    fit_cmd.add_argument("corpus", type=Path, help="JSONL {id, html|text} or a folder of HTML/text")
    fit_cmd.add_argument("-o", "--output", type=Path, required=True, help=output_help)
    return fit_cmd


def add_es_options(parser: argparse.ArgumentParser, required: bool = False) -> None:
    """Where the pages index is and how to reach it (search, stats, report)."""
    parser.add_argument("--es", required=required, metavar="URL",
                        help="Elasticsearch URL, http(s)://host:port (credentials: see "
                        "'Elasticsearch connection' below)")
    parser.add_argument("--pages-index", default=DEFAULT_PAGES_INDEX,
                        help=f"pages index name (default {DEFAULT_PAGES_INDEX})")
    add_es_connection_options(parser)


def add_es_connection_options(parser: argparse.ArgumentParser) -> None:
    """How every command reaches Elasticsearch: TLS and the timeout as flags (each also a
    NEARDUP_ES_* variable, which a flag overrides); secrets only from the environment."""
    group = parser.add_argument_group(
        "Elasticsearch connection",
        "credentials come only from the environment, never from a flag: NEARDUP_ES_USERNAME "
        "and NEARDUP_ES_PASSWORD, NEARDUP_ES_BASIC_AUTH=user,password, or NEARDUP_ES_API_KEY "
        "(or user:password in the URL)",
    )
    group.add_argument("--es-ca-certs", metavar="FILE",
                       help="CA file (PEM) that signs the server's certificate (env "
                       "NEARDUP_ES_CA_CERTS)")
    group.add_argument("--es-verify-certs", action=argparse.BooleanOptionalAction, default=None,
                       help="verify the server's certificate (default: yes; env "
                       "NEARDUP_ES_VERIFY_CERTS; --no-es-verify-certs trusts any server: "
                       "testing only)")
    group.add_argument("--es-request-timeout", type=positive_seconds, metavar="SECONDS",
                       help="seconds per request (default "
                       f"{ElasticSettings.request_timeout:g}; env NEARDUP_ES_REQUEST_TIMEOUT)")


def add_es_template_option(parser: argparse.ArgumentParser) -> None:
    """Whether a command that writes to Elasticsearch (dedup, crawl) installs neardup's index
    templates at start, or only checks them (after `neardup es install-templates`)."""
    parser.add_argument(
        "--es-manage-templates", action=argparse.BooleanOptionalAction, default=None,
        help="install or update neardup's index templates at start (default: yes; env "
        "NEARDUP_ES_MANAGE_TEMPLATES); --no-es-manage-templates only checks them, after an "
        "administrator ran `neardup es install-templates` (no cluster privilege but monitor)",
    )


# The connection flags of add_es_connection_options (and add_es_template_option), by
# ElasticSettings field.
_ES_FLAGS = {"ca_certs": "es_ca_certs", "verify_certs": "es_verify_certs",
             "request_timeout": "es_request_timeout", "manage_templates": "es_manage_templates"}


def es_flag_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The connection flags given on the command line, by flat setting name."""
    warn_password_in_url(args)
    return {f"es_{field}": getattr(args, dest) for field, dest in _ES_FLAGS.items()
            if getattr(args, dest, None) is not None}


def es_settings(args: argparse.Namespace,
                base: ElasticSettings | None = None) -> ElasticSettings:
    """The Elasticsearch settings of a command: `base` (default: the defaults), its fields
    still at their defaults taken from the NEARDUP_ES_* variables, then the flags on top."""
    warn_password_in_url(args)
    settings = with_environment(base or ElasticSettings(), os.environ)
    flags = {field: getattr(args, dest) for field, dest in _ES_FLAGS.items()
             if getattr(args, dest, None) is not None}
    return dataclasses.replace(settings, **flags) if flags else settings


# The options that take an Elasticsearch URL, by argparse dest.
_URL_OPTIONS = {"es": "--es", "backend": "--backend"}


def warn_password_in_url(args: argparse.Namespace) -> None:
    """One line on stderr when a URL on the command line holds a password: any user of the
    machine reads it in `ps` (/proc) for the whole run, and the shell history keeps it. Never
    the password; the way that keeps it out of both."""
    for dest, option in _URL_OPTIONS.items():
        url = getattr(args, dest, None)
        if not isinstance(url, str):
            continue
        _, userinfo = split_userinfo(url)
        if userinfo is not None and url_credentials(userinfo)[1]:
            print(f"neardup: warning: the {option} URL holds a password, which other users "
                  "of this machine can read in `ps` for the whole run (and the shell history "
                  "keeps): set NEARDUP_ES_USERNAME and NEARDUP_ES_PASSWORD (or "
                  "NEARDUP_ES_BASIC_AUTH=user,password) in the environment instead",
                  file=sys.stderr)


def positive_seconds(value: str) -> float:
    """An argparse type: a number of seconds above zero."""
    seconds = float(value)
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value}")
    return seconds


def at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer no smaller than `minimum`."""

    def parse(value: str) -> int:
        number = int(value)
        if number < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {number}")
        return number

    return parse


def add_field_options(parser: argparse.ArgumentParser) -> None:
    """Which fields of an Elasticsearch content index hold each page (hygiene, batch; imported
    here, not by the commands that never read an index)."""
    from neardup_pipeline.hygiene.fields import ID_FIELD

    field = parser.add_mutually_exclusive_group()
    field.add_argument("--html-field", metavar="F", help="the field holding each page's HTML "
                       "(default: html)")
    field.add_argument("--text-field", metavar="F", help="the field holding plain text instead")
    parser.add_argument("--url-field", default="url", metavar="F",
                        help="the page's URL, for declared canonicals (default: url; '' for none)")
    parser.add_argument("--id-field", default=ID_FIELD, metavar="F",
                        help="what names a document in neardup_of and --into (default: _id)")


def field_spec(args: argparse.Namespace) -> FieldSpec:
    """The fields `add_field_options` named."""
    from neardup_pipeline.hygiene.fields import FieldSpec

    return FieldSpec(
        content=args.text_field or args.html_field or "html",
        kind="text" if args.text_field else "html",
        url=args.url_field or None,
        id=args.id_field,
    )
