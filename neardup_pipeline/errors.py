"""Every error neardup raises on purpose, under one base class.

A caller catches `NearDupError` for all of them, or one branch: a setting (`ConfigError`), an
input (`InputError`), the index (`IndexFailure`; `ConnectionSetupError` when Elasticsearch
answers but refuses or cannot be trusted), a child process (`FingerprintCrash`). Each
also derives from the builtin a caller would expect (ValueError for bad values, RuntimeError for
a failed operation), so code written against those keeps working.
"""

from __future__ import annotations


class NearDupError(Exception):
    """Base of every error neardup raises on purpose."""


class ConfigError(NearDupError, ValueError):
    """A setting has a value neardup cannot work with."""


class ModelFileError(ConfigError):
    """A model file cannot be read, or does not suit the configuration."""


class AnchorModelError(ModelFileError):
    """An anchor-word model file cannot be read, or does not suit the configuration."""


class InputError(NearDupError, ValueError):
    """A line of the input corpus cannot be read as a document."""


class SourceError(NearDupError, ValueError):
    """The named source cannot be read as checked pages."""


class IndexFailure(NearDupError, RuntimeError):
    """The index cannot do what was asked (unreachable, refused a write, bad state)."""


class IndexUnavailable(IndexFailure):
    """The server did not answer within the bounded wait (down, restarting, paused, overloaded)."""


class IndexParamsError(IndexFailure):
    """The index holds fingerprints made with other parameters: mixing them would be wrong."""


class IndexDiskFull(IndexFailure):
    """The disk holding the index file is full: only freeing space there lets writes go on."""


class IndexLocked(IndexUnavailable):
    """Another process held the index file's lock longer than the busy timeout."""


class IndexDamaged(IndexFailure):
    """The index file is not a database, or a damaged or truncated one: waiting cannot help."""


class CaFileError(ConfigError):
    """The CA file given for Elasticsearch's certificate is missing, unreadable or holds none."""


class ConnectionSetupError(IndexFailure):
    """Elasticsearch answers but cannot be used as configured (TLS, scheme, credentials,
    privileges): waiting cannot help, so it is never taken for an outage."""


class CertificateUntrusted(ConnectionSetupError):
    """The server's TLS certificate is not trusted (no CA given, the wrong CA, another name)."""


class TlsMismatch(ConnectionSetupError):
    """One side speaks TLS and the other does not: `http://` to an HTTPS port, or the reverse."""


class AccessRefused(ConnectionSetupError):
    """The server refused the request: 401 (credentials) or 403 (a privilege is missing)."""


class CredentialsRefused(AccessRefused):
    """401: no credentials, or ones the server does not accept."""


class PrivilegeMissing(AccessRefused):
    """403: the user or API key lacks a privilege the call needs."""


class UnsupportedServer(ConnectionSetupError):
    """The server is not an Elasticsearch version neardup speaks to (8.19 and 9.x)."""


class TemplatesMissing(ConnectionSetupError):
    """neardup may not install its index templates, and they are missing or older than its own."""


class NotElasticsearch(ConnectionSetupError):
    """The URL answers HTTP, but not as Elasticsearch: another server listens there."""


class MappingNotFound(NearDupError, FileNotFoundError):
    """No mapping JSON file of that name in the installed package nor in the source checkout."""


class FingerprintCrash(NearDupError, RuntimeError):
    """The child process died while fingerprinting one document (it is restarted)."""


class ReportError(NearDupError, RuntimeError):
    """The report cannot be made here (a missing optional dependency)."""
