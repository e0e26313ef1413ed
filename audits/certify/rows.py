"""Read-only values of a certificate's step rows, for the code that reads them.

A step row is serialised as the dict :func:`audits.certify.derive.derive` builds (the plan's step,
its derived numbers and ``"checks"``: the per-step check results, ``True``/``False``, ``None`` where a
check does not apply); the certificate stores it as it is. :class:`StepChecks` is the part of a row
the claims, the refusals and the report decide on - its step and its check results - and
:class:`StepDesign` the step's design (direction, threshold, base rate, the thresholds p*_t and
p_bar_t, eps_t, delta_t) and :class:`StepRow` every field but the checks (the planned step and the
numbers derived for it: bounds, expected evaluations, losses, the range of lambda_t), each a frozen
value read with ``from_dict``; the row itself is never rewritten from them (``StepRow.to_dict`` with
the checks gives the row back, key for key).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Iterable, Mapping

__all__ = ["StepChecks", "step_checks_of", "StepDesign", "step_designs_of", "StepRow", "step_rows_of"]


@dataclass(frozen=True)
class StepChecks:
    """Step ``t``'s check results (name -> True, False, or None where the check does not apply)."""

    t: int
    checks: Mapping[str, bool | None]

    @classmethod
    def from_dict(cls, row: Mapping) -> StepChecks:
        """The value of a step row (a dict with ``"t"`` and ``"checks"``; KeyError if either is absent)."""
        return cls(t=row["t"], checks=MappingProxyType(dict(row["checks"])))

    def to_dict(self) -> dict:
        """``{"t": t, "checks": {...}}``: the row's keys this value reads, in the row's order."""
        return {"t": self.t, "checks": dict(self.checks)}

    def result(self, name: str) -> bool | None:
        """The result of check ``name`` (None if it does not apply or the row does not list it)."""
        return self.checks.get(name)

    def fails(self, *names: str) -> bool:
        """Whether any of ``names`` failed (False, not None) at this step."""
        return any(self.checks.get(n) is False for n in names)

    def applies(self, *names: str) -> bool:
        """Whether any of ``names`` applies (is not None) at this step."""
        return any(self.checks.get(n) is not None for n in names)


def step_checks_of(rows: Iterable[Mapping]) -> list[StepChecks]:
    """:meth:`StepChecks.from_dict` of every row, in order."""
    return [StepChecks.from_dict(r) for r in rows]


@dataclass(frozen=True)
class StepDesign:
    """Step ``t``'s design as its row lists it: direction ``s``, threshold ``c``, base rate ``rho``, the
    thresholds ``p_bar`` (continues at or below) and ``p_star`` (halts at or above), ``eps_t``, ``delta_t``.
    The numbers are the row's own objects (the deployed floats, compared exactly by the claims)."""

    t: int
    s: int
    c: float
    rho: float
    p_bar: float
    eps_t: float
    p_star: float
    delta_t: float

    @classmethod
    def from_dict(cls, row: Mapping) -> StepDesign:
        """The value of a step row (KeyError if one of the fields is absent)."""
        return cls(**{f: row[f] for f in _DESIGN_FIELDS})

    def to_dict(self) -> dict:
        """The row's keys this value reads, in the row's order."""
        return {f: getattr(self, f) for f in _DESIGN_FIELDS}


_DESIGN_FIELDS = ("t", "s", "c", "rho", "p_bar", "eps_t", "p_star", "delta_t")


def step_designs_of(rows: Iterable[Mapping]) -> list[StepDesign]:
    """:meth:`StepDesign.from_dict` of every row, in order."""
    return [StepDesign.from_dict(r) for r in rows]


Number = float | str  # a float, or "inf"/"-inf"/"nan" as gtm_core.files.jsonable writes them


@dataclass(frozen=True)
class StepRow:
    """Every field of step ``t``'s row but its checks: the planned step (``StepPlan.to_dict``: design,
    noise, shares of beta, phi, budget and the purified thresholds) and the numbers the certificate derives
    for it (the threshold ratio, E[N_t], the rigorous budget-exceed bound, the claimed halting loss, the
    error-tail bounds and the good event's range of lambda_t). ``type_II_bound`` and ``type_I_bound`` are
    None where no per-step tail applies (the ``horizon`` parameterization). The numbers are the row's own
    objects; ``lambda_range`` is held as a pair."""

    t: int
    s: int
    c: int
    rho: float
    tau2: float
    Lambda: float
    p_bar: float
    lambda_max: float
    eps_t: float
    p_star: float
    delta_t: float
    beta_t: float
    beta_I: float
    beta_II: float
    phi: float
    evaluation_budget: int
    budget_exceed_probability: float
    halt_threshold: float
    continue_threshold: float
    p_bar_ratio: float
    expected_evaluations: Number
    budget_exceed_upper: float
    claimed_loss_halt: float
    lambda_max_upper: Number
    lambda_range: tuple[Number, Number]
    type_II_bound: float | None = None
    type_I_bound: float | None = None

    @classmethod
    def from_dict(cls, row: Mapping) -> StepRow:
        """The value of a step row (KeyError if a field other than the optional tail bounds is absent)."""
        values = {f: row[f] for f in _ROW_REQUIRED}
        values["lambda_range"] = tuple(row["lambda_range"])
        return cls(**values, **{f: row.get(f) for f in _ROW_OPTIONAL})

    def to_dict(self) -> dict:
        """The row's keys but ``"checks"``, in the row's order (``lambda_range`` as a list)."""
        d = {f: getattr(self, f) for f in _ROW_ORDER}
        d["lambda_range"] = list(self.lambda_range)
        return d


_ROW_ORDER = ("t", "s", "c", "rho", "tau2", "Lambda", "p_bar", "lambda_max", "eps_t", "p_star", "delta_t",
              "beta_t", "beta_I", "beta_II", "phi", "evaluation_budget", "budget_exceed_probability",
              "halt_threshold", "continue_threshold", "p_bar_ratio", "expected_evaluations", "budget_exceed_upper",
              "claimed_loss_halt", "type_II_bound", "type_I_bound", "lambda_max_upper", "lambda_range")
_ROW_OPTIONAL = ("type_II_bound", "type_I_bound")
_ROW_REQUIRED = tuple(f for f in _ROW_ORDER if f not in (*_ROW_OPTIONAL, "lambda_range"))


def step_rows_of(rows: Iterable[Mapping]) -> list[StepRow]:
    """:meth:`StepRow.from_dict` of every row, in order."""
    return [StepRow.from_dict(r) for r in rows]
