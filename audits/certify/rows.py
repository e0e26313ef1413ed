"""Read-only values of a certificate's step rows, for the code that reads them.

A step row is serialised as the dict :func:`audits.certify.derive.derive` builds (the plan's step,
its derived numbers and ``"checks"``: the per-step check results, ``True``/``False``, ``None`` where a
check does not apply); the certificate stores it as it is. :class:`StepChecks` is the part of a row
the claims, the refusals and the report decide on - its step and its check results - as a frozen
value read with :meth:`StepChecks.from_dict`; the row itself is never rewritten from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Iterable, Mapping

__all__ = ["StepChecks", "step_checks_of"]


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
