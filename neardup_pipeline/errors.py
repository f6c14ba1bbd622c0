"""Every error neardup raises on purpose, under one base class.

A caller catches `NearDupError` for all of them, or one branch: a setting (`ConfigError`), an
input (`InputError`), the index (`IndexFailure`), a child process (`FingerprintCrash`). Each
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


class MappingNotFound(NearDupError, FileNotFoundError):
    """No mapping JSON file of that name in the installed package nor in the source checkout."""


class FingerprintCrash(NearDupError, RuntimeError):
    """The child process died while fingerprinting one document (it is restarted)."""


class ReportError(NearDupError, RuntimeError):
    """The report cannot be made here (a missing optional dependency)."""
