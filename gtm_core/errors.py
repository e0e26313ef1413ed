"""One exception tree for the whole package, rooted at :class:`GTMError`.

Messages name the offending field and value, and never contain secrets
(eta_1, per-step noise, Poisson counts).
"""

from __future__ import annotations


class GTMError(Exception):
    """Root of every error raised on purpose by gtm."""


class InvalidParameter(GTMError, ValueError):
    """A parameter is outside its documented domain (message names field and value)."""


class ConfigError(GTMError):
    """A configuration file cannot be read, parsed or has the wrong shape."""


class UnsupportedConfiguration(GTMError):
    """A valid description that this code path does not support (named in the message)."""


class MechanismError(GTMError):
    """An input mechanism misbehaved: raised, returned a non +-1 value, or timed out."""


class HaltedError(GTMError):
    """A step was requested after the GTM halted (or entered its terminal failed state)."""


class EvaluationBudgetExceeded(GTMError):
    """A step would need more mechanism evaluations than its budget allows."""


class StateError(GTMError):
    """A persisted deployment state is missing, corrupted, tampered with, or already exists."""


class TargetError(GTMError):
    """An audited target crashed, timed out or answered something malformed."""


class BudgetStop(TargetError):
    """The audit's own time budget ran out while a request to the target was in flight: a stop of the audit,
    not a failure of the target (the audit engine reports it as a budget stop, with the bound reached so far)."""


class ClusterError(GTMError):
    """A compute cluster (a Dask scheduler or its workers) could not be reached, or was lost mid-run."""


class CheckFailed(GTMError):
    """A verification (proof, certificate, audit) did not pass."""


class MechanismTimeout(MechanismError):
    """A mechanism did not answer within its time limit."""


class FormulaOverflow(InvalidParameter, OverflowError):
    """A formula overflowed float64 on its arguments (still an InvalidParameter / GTMError)."""


class FormulaZeroDivision(InvalidParameter, ZeroDivisionError):
    """A formula divided by zero on its arguments (still an InvalidParameter / GTMError)."""


class NotNeighbouring(InvalidParameter):
    """Two streams are not neighbouring under the declared eps_t (the rule: :mod:`gtm_core.neighbours`)."""


class CertificateUnreadable(GTMError):
    """The file is not a gtm certificate (not JSON, wrong format, missing fields)."""


class NonBooleanOutput(MechanismError):
    """A wrapped mechanism (e.g. an OpenDP measurement) returned something other than a boolean."""


class KeyFileError(GTMError):
    """A signing or verification key file is missing, unreadable, of the wrong kind or too open."""
