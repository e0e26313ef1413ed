"""The input mechanisms' privacy eps_t, as one value built once at the boundary.

eps_t is given as one number for every step or as a list (tuple) with one number per step
1..L. :meth:`InputPrivacy.from_user` checks it once and every consumer (the neighbouring rule
of :mod:`gtm_core.neighbours`, the audit pair search, the auditor, ``gtm audit``) asks the value
for step t through :meth:`InputPrivacy.at` - the one place that decides how eps_t per step is
read.

The rule past the end of a per-step list: there is no eps_t there. :meth:`InputPrivacy.at`
refuses a step beyond the list (:class:`~gtm_core.errors.InvalidParameter`) rather than repeating
its last entry, exactly as a configuration refuses a step past its horizon when the stream has
per-step lists (:meth:`gtm_core.config.StreamParameters.step`): a list states the privacy of
steps 1..L and nothing beyond, so an audit builds streams of at most L steps
(:meth:`InputPrivacy.longest_stream`) and never guesses eps_t for later steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import InvalidParameter
from .validation import check_nonnegative

__all__ = ["InputPrivacy"]


@dataclass(frozen=True)
class InputPrivacy:
    """eps_t for every step: one number (``steps`` is None) or one number per step 1..L.

    Attributes:
        values: the numbers as given: one entry for a scalar, L entries for a per-step list.
        per_step: True for a per-step list (even of length 1), False for one number.

    Build it with :meth:`from_user`; :meth:`at` is the only reading of eps_t per step. Past the
    end of a per-step list there is no value (see the module docstring): :meth:`at` raises.

    Example:
        >>> InputPrivacy.from_user([0.1, 0.2]).at(2), InputPrivacy.from_user(0.5).at(7)
        (0.2, 0.5)
    """

    values: tuple[float, ...]
    per_step: bool

    @classmethod
    def from_user(cls, value: Any, field: str = "eps_t") -> "InputPrivacy":
        """A number, or a non-empty list / tuple of numbers, each finite and >= 0 (the configuration's
        rule, :func:`gtm_core.validation.check_nonnegative`); an :class:`InputPrivacy` is returned as is.

        Raises:
            InvalidParameter: any other shape or value (the message names ``field`` and the value).
        """
        if isinstance(value, InputPrivacy):
            return value
        if isinstance(value, (list, tuple)):
            if not value:
                raise InvalidParameter(f"{field} must be a number or a non-empty list of them, got {value!r}")
            return cls(tuple(check_nonnegative(field, v) for v in value), per_step=True)
        return cls((check_nonnegative(field, value),), per_step=False)

    @property
    def steps(self) -> int | None:
        """Number of steps a per-step list covers (None for one number: every step)."""
        return len(self.values) if self.per_step else None

    @property
    def is_uniform(self) -> bool:
        """The same eps_t at every step the value covers."""
        return len(set(self.values)) == 1

    @property
    def any_positive(self) -> bool:
        """eps_t > 0 at some step (else every step's neighbours are identical)."""
        return any(v > 0 for v in self.values)

    def at(self, t: int) -> float:
        """eps_t at step t (1-based). Past the end of a per-step list there is no value.

        Raises:
            InvalidParameter: t < 1, or t beyond a per-step list.
        """
        if not self.per_step:
            return self.values[0]
        if not 1 <= t <= len(self.values):
            raise InvalidParameter(f"eps_t has {len(self.values)} per-step values, none for step t={t!r}")
        return self.values[t - 1]

    def longest_stream(self, max_T: int) -> int:
        """The longest stream an audit may build: max_T, capped to the length of a per-step list."""
        return int(max_T) if self.steps is None else int(min(max_T, self.steps))

    def to_json(self) -> float | list[float]:
        """The JSON form: a number, or the list of per-step values."""
        return list(self.values) if self.per_step else self.values[0]

    def show(self, limit: int = 6) -> str:
        """Short text for messages: the values separated by commas, the first ``limit`` of a long list."""
        text = ",".join(f"{v!r}" for v in self.values[:limit])
        return text + (f",... ({len(self.values)} steps)" if len(self.values) > limit else "")

