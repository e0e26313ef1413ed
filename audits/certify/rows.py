"""Read-only values of a certificate's step rows, for the code that reads them.

A step row is serialised as the dict :func:`audits.certify.derive.derive` builds (the plan's step,
its derived numbers and ``"checks"``: the per-step check results, ``True``/``False``, ``None`` where a
check does not apply); the certificate stores it as it is. :class:`StepChecks` is the part of a row
the claims, the refusals and the report decide on - its step and its check results - and
:class:`StepDesign` the step's design (direction, threshold, base rate, the thresholds p*_t and
p_bar_t, eps_t, delta_t), each a frozen value read with ``from_dict``; the row itself is never
rewritten from them.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Iterable, Mapping

__all__ = ["StepChecks", "step_checks_of", "StepDesign", "step_designs_of"]


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
