"""Frozen configuration values for a GTM deployment (the TOML format of docs/configuration.md).

A configuration is data: it is validated once, at construction, and round-trips
to TOML and JSON. Planners, the simulator, the exact engine and the auditor all
take these values; none of them owns them.

```toml
[gtm]
epsilon = 1.0
parameterization = "theorem21"   # or "theorem23", "exact", "exact_noise"
theta = 1.0
gamma = 1.5
beta = 0.05
# theorem23 takes epsilon_c and c_h instead of epsilon/theta
[stream]
eps_t = 0.1          # a number or a per-step list of length `horizon`
delta_t = 0.0        # a number or a per-step list
p_star = 0.5         # a number or a per-step list
horizon = 1000
```
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import tomli_w

from .inputs import parse_json, parse_toml, read_text_file
from .errors import ConfigError, InvalidParameter
from .validation import (
    check_choice,
    check_direction,
    check_gamma,
    check_half_open_unit,
    check_nonnegative,
    check_nonnegative_int,
    check_open_unit,
    check_positive,
    check_positive_int,
    check_real,
)

PARAMETERIZATIONS = ("theorem21", "theorem23", "exact", "exact_noise", "horizon")

# The evaluation-budget policy (docs/deployment.md, "The evaluation budget and the privacy claim"):
# "none" runs Algorithm 1 as the paper states it (pure epsilon-DP; the budget is a reported
# high-probability bound, never enforced); "refuse" refuses a step whose count N_t exceeds its budget
# and ends the run in its failed state - a hard cap, at the price of an (epsilon, delta) claim.
BUDGET_POLICIES = ("none", "refuse")
DEFAULT_BUDGET_POLICY = "none"

# parameterization = "horizon" (gtm_core.planners.horizon, written by `gtm tune`) carries its chosen
# numbers, the same at every step 1..horizon: direction s_t (+1 direct, -1 flipped), threshold c_t,
# base rate rho_t and the certified rejection threshold p_bar (docs/horizon.md).
_HORIZON_KEYS = ("direction", "c", "rho", "p_bar")

_GTM_KEYS = {
    "epsilon",
    "parameterization",
    "theta",
    "gamma",
    "beta",
    "epsilon_c",
    "c_h",
    "evaluation_budget_factor",
    "evaluation_budget",
    *_HORIZON_KEYS,
}
_STREAM_KEYS = {"eps_t", "delta_t", "p_star", "horizon"}
_REQUIRED_BY = {
    "theorem21": ("epsilon", "theta"),
    "exact": ("epsilon", "theta"),
    "exact_noise": ("epsilon", "theta"),
    "theorem23": ("epsilon_c", "c_h"),
    "horizon": ("epsilon", "theta", *_HORIZON_KEYS),
}


def _per_step(name: str, value: Any, horizon: int, check) -> float | tuple[float, ...]:
    """A scalar, or a list of exactly ``horizon`` values; each checked with ``check``."""
    if isinstance(value, (list, tuple)):
        if len(value) != horizon:
            raise InvalidParameter(
                f"{name} must be a number or a list of length horizon={horizon}, "
                f"got a list of length {len(value)}"
            )
        return tuple(check(f"{name}[{i + 1}]", v) for i, v in enumerate(value))
    return check(name, value)


@dataclass(frozen=True)
class StepSpec:
    """What the analyst fixes for one step t (Algorithm 1 inputs before planning)."""

    t: int
    eps_t: float
    p_star: float
    delta_t: float = 0.0

    def __post_init__(self):
        check_positive_int("t", self.t)
        object.__setattr__(self, "eps_t", check_nonnegative("eps_t", self.eps_t))
        object.__setattr__(self, "p_star", check_open_unit("p_star", self.p_star))
        object.__setattr__(self, "delta_t", check_half_open_unit("delta_t", self.delta_t))
        if self.delta_t > 0 and self.eps_t == 0:
            raise InvalidParameter(
                f"delta_t > 0 needs eps_t > 0 for purification (Lemma 24), got eps_t={self.eps_t!r}"
            )


@dataclass(frozen=True)
class GTMParameters:
    """The [gtm] table: output privacy, accuracy targets and the parameterisation.

    Attributes:
        parameterization: the planner: ``"theorem21"``, ``"theorem23"``, ``"exact"`` or
            ``"exact_noise"``.
        gamma: the accuracy gap gamma in (1, 2].
        beta: the total failure probability beta in (0, 1).
        epsilon: the output privacy epsilon > 0 (pure DP); not for ``theorem23``.
        theta: Theorem 21's split of epsilon between the shared and per-step noise (> 0); not for
            ``theorem23``.
        epsilon_c: Theorem 23's loss of a run that never halts (> 0); ``theorem23`` only.
        c_h: Theorem 23's halting-cost factor C_H (> 0); ``theorem23`` only.
        evaluation_budget_factor: the evaluation budget of a step is
            ceil(factor * max(lambda_max_t, ln(4/beta_t))) (>= 1, default e; Lemma 22).
        evaluation_budget: the budget policy, ``"none"`` (default: Algorithm 1, pure epsilon-DP;
            the budget is reported, never enforced) or ``"refuse"`` (a step whose count exceeds
            its budget is refused and the run fails: a hard cap, (epsilon, delta)-DP with the delta
            of :meth:`gtm_core.planners.Plan.privacy_delta`).

    Raises:
        InvalidParameter: a value outside its range, or a field the parameterization does not use.
    """

    parameterization: str = "theorem21"
    gamma: float = 1.5
    beta: float = 0.05
    epsilon: float | None = None
    theta: float | None = None
    epsilon_c: float | None = None
    c_h: float | None = None
    evaluation_budget_factor: float = math.e
    evaluation_budget: str = DEFAULT_BUDGET_POLICY
    direction: int | None = None   # horizon only
    c: int | None = None           # horizon only
    rho: float | None = None       # horizon only
    p_bar: float | None = None     # horizon only

    def __post_init__(self):
        check_choice("parameterization", self.parameterization, PARAMETERIZATIONS)
        object.__setattr__(self, "gamma", check_gamma("gamma", self.gamma))
        object.__setattr__(self, "beta", check_open_unit("beta", self.beta))
        object.__setattr__(
            self,
            "evaluation_budget_factor",
            check_real("evaluation_budget_factor", self.evaluation_budget_factor, low=1),
        )
        check_choice("evaluation_budget", self.evaluation_budget, BUDGET_POLICIES)
        self._check_horizon_fields()
        if self.parameterization == "theorem23":
            for name in ("epsilon_c", "c_h"):
                if getattr(self, name) is None:
                    raise InvalidParameter(f"{name} is required for parameterization 'theorem23'")
                object.__setattr__(self, name, check_positive(name, getattr(self, name)))
            for name in ("epsilon", "theta"):
                if getattr(self, name) is not None:
                    raise InvalidParameter(
                        f"{name} is not used by parameterization 'theorem23' (use epsilon_c, c_h), "
                        f"got {getattr(self, name)!r}"
                    )
        else:
            for name in ("epsilon", "theta"):
                if getattr(self, name) is None:
                    raise InvalidParameter(
                        f"{name} is required for parameterization {self.parameterization!r}"
                    )
                object.__setattr__(self, name, check_positive(name, getattr(self, name)))
            for name in ("epsilon_c", "c_h"):
                if getattr(self, name) is not None:
                    raise InvalidParameter(
                        f"{name} is only used by parameterization 'theorem23', "
                        f"got {getattr(self, name)!r}"
                    )


    def _check_horizon_fields(self) -> None:
        """direction, c, rho, p_bar: required by (and only allowed with) parameterization 'horizon'."""
        if self.parameterization != "horizon":
            for name in _HORIZON_KEYS:
                if getattr(self, name) is not None:
                    raise InvalidParameter(
                        f"{name} is only used by parameterization 'horizon', got {getattr(self, name)!r}")
            return
        for name in _HORIZON_KEYS:
            if getattr(self, name) is None:
                raise InvalidParameter(f"{name} is required for parameterization 'horizon'")
        object.__setattr__(self, "direction", check_direction("direction", self.direction))
        object.__setattr__(self, "c", check_nonnegative_int("c", self.c))
        object.__setattr__(self, "rho", check_positive("rho", self.rho))
        object.__setattr__(self, "p_bar", check_open_unit("p_bar", self.p_bar))


@dataclass(frozen=True)
class StreamParameters:
    """The [stream] table: the input mechanisms' privacy, targets and horizon.

    Attributes:
        eps_t: the input mechanisms' privacy eps_t >= 0: one number for every step, or a tuple of
            exactly ``horizon`` numbers.
        p_star: the target p*_t in (0, 1): a number or a tuple of ``horizon`` numbers.
        horizon: the number of steps T >= 1 to plan for.
        delta_t: delta_t in [0, 1) (a number or a tuple); > 0 turns on purification (Lemma 24).

    Raises:
        InvalidParameter: a value outside its range or a list of the wrong length.
    """

    eps_t: float | tuple[float, ...]
    p_star: float | tuple[float, ...]
    horizon: int
    delta_t: float | tuple[float, ...] = 0.0

    def __post_init__(self):
        h = check_positive_int("horizon", self.horizon)
        object.__setattr__(self, "horizon", h)
        object.__setattr__(self, "eps_t", _per_step("eps_t", self.eps_t, h, check_nonnegative))
        object.__setattr__(self, "p_star", _per_step("p_star", self.p_star, h, check_open_unit))
        object.__setattr__(
            self, "delta_t", _per_step("delta_t", self.delta_t, h, check_half_open_unit)
        )
        # cross-field checks (delta_t > 0 needs eps_t > 0), step by step
        lists = any(isinstance(v, tuple) for v in (self.eps_t, self.p_star, self.delta_t))
        for t in range(1, h + 1 if lists else 2):
            self.step(t)

    @staticmethod
    def _at(value, t: int) -> float:
        return value[t - 1] if isinstance(value, tuple) else value

    def step(self, t: int) -> StepSpec:
        """The analyst's inputs at step t (1-based). Beyond the horizon, scalars extend
        and per-step lists are refused."""
        check_positive_int("t", t)
        if t > self.horizon and any(
            isinstance(v, tuple) for v in (self.eps_t, self.p_star, self.delta_t)
        ):
            raise InvalidParameter(
                f"t={t} is beyond horizon={self.horizon} and the stream has per-step lists"
            )
        return StepSpec(
            t=t,
            eps_t=self._at(self.eps_t, t),
            p_star=self._at(self.p_star, t),
            delta_t=self._at(self.delta_t, t),
        )


@dataclass(frozen=True)
class GTMConfig:
    """A whole GTM deployment description: the [gtm] and [stream] tables.

    Frozen and validated at construction; every field is documented in ``docs/configuration.md``.
    Build one with :meth:`load` (a ``.toml`` or ``.json`` file), :meth:`from_toml` or
    :meth:`from_dict`, and plan it with :func:`gtm_core.planners.make_plan`.

    Attributes:
        gtm: the [gtm] table (:class:`GTMParameters`).
        stream: the [stream] table (:class:`StreamParameters`).
        source: where it was read from (not part of equality or the digest).

    Example:
        >>> cfg = GTMConfig.load("examples/default.toml")
        >>> cfg.gtm.parameterization, cfg.stream.horizon
        ('theorem21', 1000)
        >>> cfg.with_changes(horizon=10).stream.horizon
        10
    """

    gtm: GTMParameters
    stream: StreamParameters
    source: str | None = field(default=None, compare=False, repr=False)

    # -- construction --------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str | None = None) -> "GTMConfig":
        """A configuration from a mapping ``{"gtm": {...}, "stream": {...}}``.

        Raises:
            ConfigError: a missing or unknown table or key.
            InvalidParameter: a value outside its range.
        """
        if not isinstance(data, Mapping):
            raise ConfigError(f"configuration must be a table, got {type(data).__name__}")
        unknown = set(data) - {"gtm", "stream"}
        if unknown:
            raise ConfigError(f"unknown table(s) {sorted(unknown)}; expected [gtm] and [stream]")
        for table in ("gtm", "stream"):
            if table not in data:
                raise ConfigError(f"missing table [{table}]")
            if not isinstance(data[table], Mapping):
                raise ConfigError(f"[{table}] must be a table, got {type(data[table]).__name__}")
        g, s = dict(data["gtm"]), dict(data["stream"])
        for table, given, allowed in (("gtm", g, _GTM_KEYS), ("stream", s, _STREAM_KEYS)):
            extra = set(given) - allowed
            if extra:
                raise ConfigError(f"unknown key(s) in [{table}]: {', '.join(sorted(extra))}")
        for key in ("eps_t", "p_star", "horizon"):
            if key not in s:
                raise ConfigError(f"missing key [stream].{key}")
        if "parameterization" not in g:
            g["parameterization"] = "theorem21"
        if not isinstance(g["parameterization"], str):
            raise InvalidParameter(
                f"parameterization must be a string, got {g['parameterization']!r}"
            )
        for key in ("gamma", "beta"):
            if key not in g:
                raise ConfigError(f"missing key [gtm].{key}")
        for key in _REQUIRED_BY.get(g["parameterization"], ()):
            if key not in g:
                raise ConfigError(
                    f"missing key [gtm].{key} (required by parameterization {g['parameterization']!r})"
                )
        return cls(gtm=GTMParameters(**g), stream=StreamParameters(**s), source=source)

    @classmethod
    def from_toml(cls, text: str, *, source: str | None = None) -> "GTMConfig":
        """A configuration from TOML text (``source`` names it in error messages)."""
        data = parse_toml(text, what=source or "text", error=ConfigError)
        return cls.from_dict(data, source=source)

    @classmethod
    def load(cls, path: str | Path) -> "GTMConfig":
        """Read a TOML (``.toml``) or JSON (``.json``) configuration file.

        The file must be a regular file (a FIFO or device is refused without blocking), at most
        16 MiB, UTF-8, and nest at most 64 levels (:mod:`gtm_core.inputs`).
        """
        text = read_text_file(path, what="configuration", max_bytes=16 * 1024 * 1024, error=ConfigError)
        p = Path(path)
        if p.suffix.lower() == ".json":
            data = parse_json(text, what=repr(str(p)), error=ConfigError)
            return cls.from_dict(data, source=str(p))
        return cls.from_toml(text, source=str(p))

    # -- serialisation -------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The two tables as plain data (lists for per-step values; a default budget factor omitted)."""
        g = {k: v for k, v in dataclasses.asdict(self.gtm).items() if v is not None}
        if g.get("evaluation_budget_factor") == math.e:
            g.pop("evaluation_budget_factor")
        if g.get("evaluation_budget") == DEFAULT_BUDGET_POLICY:  # digests of default configs unchanged
            g.pop("evaluation_budget")
        s = {}
        for k, v in dataclasses.asdict(self.stream).items():
            s[k] = list(v) if isinstance(v, tuple) else v
        return {"gtm": g, "stream": s}

    def to_toml(self) -> str:
        """The configuration as TOML text (reads back to an equal configuration)."""
        return tomli_w.dumps(self.to_dict())

    def to_json(self) -> str:
        """The canonical JSON form (sorted keys), the input of :meth:`digest`."""
        return json.dumps(self.to_dict(), sort_keys=True)

    def digest(self) -> str:
        """SHA-256 of the canonical JSON form (the configuration hash in certificates)."""
        return hashlib.sha256(self.to_json().encode()).hexdigest()

    # -- convenience ---------------------------------------------------------
    def step(self, t: int) -> StepSpec:
        """The analyst's inputs at step t (1-based): eps_t, p_star, delta_t."""
        return self.stream.step(t)

    def with_changes(self, **changes) -> "GTMConfig":
        """A copy with [gtm] or [stream] fields replaced (validated again)."""
        g = {k: v for k, v in changes.items() if k in _GTM_KEYS}
        s = {k: v for k, v in changes.items() if k in _STREAM_KEYS}
        unknown = set(changes) - set(g) - set(s)
        if unknown:
            raise InvalidParameter(f"unknown configuration field(s): {', '.join(sorted(unknown))}")
        return GTMConfig(
            gtm=dataclasses.replace(self.gtm, **g), stream=dataclasses.replace(self.stream, **s)
        )
