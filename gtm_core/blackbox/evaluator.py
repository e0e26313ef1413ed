"""The pure-DP black-box evaluator: configuration, parameters, Algorithm 3 and Algorithm 4.

* :class:`EvaluatorConfig` - frozen, JSON round-trip: epsilon, beta and the public finite output
  domain Y (points of dimension d = 1, 2 or 3). Validated once, with typed errors.
* :class:`PureParameters` - every derived quantity of Algorithm 4 (:mod:`.params`), plus three
  fields that only the power suite changes (``size_noise``, ``em_epsilon``, ``uniform_branch``);
  :func:`pure_parameters` gives the paper's values.
* :class:`BlackBoxEvaluator` - Algorithm 4 literally (:meth:`run`, one run with an explicit rng)
  and a vectorised sampler with the same law (:meth:`sample`, many runs; depths cached per h).
  Algorithm 3 is :func:`cdi_depth_optimiser`.

Randomness is float64 (numpy Generator); this is a reference and audit implementation, not a
hardened deployment (no exact samplers): said so in every report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..errors import InvalidParameter, UnsupportedConfiguration
from ..validation import check_choice, check_positive, check_real
from . import params as P
from .depth import MAX_ENUMERATION_RECORDS, SubsetImage, evaluate_point, monotone_depths_1d
from .geometry import SUPPORTED_DIMENSIONS, as_point, extension
from .mechanisms import exponential_mechanism_probabilities, sample_tlap

SIZE_NOISES = ("tlap", "none", "laplace")
DEPTH_METHODS = ("auto", "enumeration", "monotone")

__all__ = [
    "EvaluatorConfig",
    "PureParameters",
    "pure_parameters",
    "check_dataset",
    "point_code",
    "cdi_depth_optimiser",
    "BlackBoxEvaluator",
    "SIZE_NOISES",
    "DEPTH_METHODS",
]


@dataclass(frozen=True)
class EvaluatorConfig:
    """epsilon > 0, beta in (0, 1), domain Y: >= 2 distinct finite points of one dimension d in {1, 2, 3}."""

    epsilon: float
    beta: float
    domain: tuple

    def __post_init__(self):
        check_positive("epsilon", self.epsilon)
        check_real("beta", self.beta, low=0, low_open=True)
        check_real("beta", self.beta, high=1, high_open=True)
        if isinstance(self.domain, (str, bytes)) or not hasattr(self.domain, "__iter__"):
            raise InvalidParameter(f"domain must be a list of points, got {self.domain!r:.60}")
        pts = [as_point(p, field="domain point") for p in self.domain]
        if len(set(pts)) < 2:
            raise InvalidParameter(f"domain must have at least 2 distinct points (Algorithm 4: |Y| >= 2), got {len(set(pts))}")
        dims = {len(p) for p in pts}
        if len(dims) != 1:
            raise InvalidParameter(f"domain points must all have the same dimension, got dimensions {sorted(dims)}")
        d = dims.pop()
        if d not in SUPPORTED_DIMENSIONS:
            raise UnsupportedConfiguration(f"domain dimension d must be in {SUPPORTED_DIMENSIONS}, got {d}")
        object.__setattr__(self, "domain", tuple(tuple(float(c) for c in p) for p in self.domain))

    @property
    def d(self) -> int:
        return len(self.domain[0])

    def points(self) -> list[tuple]:
        return sorted({as_point(p) for p in self.domain})

    def to_dict(self) -> dict:
        return {"epsilon": self.epsilon, "beta": self.beta, "domain": [list(p) for p in self.domain]}

    @classmethod
    def from_dict(cls, data: dict) -> "EvaluatorConfig":
        if not isinstance(data, dict):
            raise InvalidParameter("evaluator configuration must be an object with epsilon, beta, domain")
        missing = [k for k in ("epsilon", "beta", "domain") if k not in data]
        if missing:
            raise InvalidParameter(f"evaluator configuration is missing {', '.join(missing)}")
        dom = data["domain"]
        if not isinstance(dom, list):
            raise InvalidParameter(f"domain must be a list of points, got {dom!r:.60}")
        return cls(data["epsilon"], data["beta"], tuple(p if isinstance(p, list) else [p] for p in dom))


@dataclass(frozen=True)
class PureParameters:
    """Algorithm 4's parameters for one configuration (M = |Y~|)."""

    epsilon: float
    beta: float
    d: int
    M: int
    eta: float
    beta0: float
    eps0: float
    delta0: float
    Delta: float
    K: int
    R: float
    # changed only by the power suite (tests of the tester); the paper's values are the defaults
    size_noise: str = "tlap"
    em_epsilon: float | None = None
    uniform_branch: bool = True

    def __post_init__(self):
        check_choice("size_noise", self.size_noise, SIZE_NOISES)

    @property
    def em_eps(self) -> float:
        return self.eps0 if self.em_epsilon is None else float(self.em_epsilon)

    @property
    def is_algorithm4(self) -> bool:
        return self == pure_parameters_from(self.epsilon, self.beta, self.M, self.d)

    @property
    def locality(self) -> int:
        """lambda = ceil(K + 2R + 1) (proof of Theorem 2.7)."""
        return P.locality(self.R, self.K)

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["em_epsilon"] = self.em_eps
        d["locality"] = self.locality
        return d


def pure_parameters_from(epsilon: float, beta: float, M: int, d: int) -> PureParameters:
    e0 = P.eps0(epsilon)
    d0 = P.delta0(epsilon, beta, M)
    return PureParameters(epsilon=float(epsilon), beta=float(beta), d=int(d), M=int(M), eta=P.eta(beta),
                          beta0=P.beta0(beta), eps0=e0, delta0=d0, Delta=P.utility_margin(epsilon, beta, M),
                          K=P.depth_margin(epsilon, beta, M, d), R=P.tlap_radius(e0, d0))


def pure_parameters(config: EvaluatorConfig) -> PureParameters:
    """Algorithm 4 lines 1-3 for a configuration (Y~ from :func:`.geometry.extension`)."""
    return pure_parameters_from(config.epsilon, config.beta, len(extension(config.points())), config.d)


def check_dataset(records, *, record_dim: int | None = None, allow_empty: bool = False) -> list:
    """A dataset: a list of numeric records (numbers, or lists of numbers of one length).

    Returns floats (scalar records) or tuples of floats. Typed errors name the record.
    """
    if isinstance(records, (str, bytes, dict)) or not hasattr(records, "__iter__"):
        raise InvalidParameter(f"dataset must be a list of records, got {type(records).__name__}")
    recs = list(records)
    if not recs and not allow_empty:
        raise InvalidParameter("dataset must not be empty")
    out, dims = [], set()
    for i, r in enumerate(recs):
        p = as_point(r, field=f"dataset record {i}")
        dims.add(len(p))
        out.append(float(p[0]) if not isinstance(r, (list, tuple)) else tuple(float(c) for c in p))
    if len(dims) > 1:
        raise InvalidParameter(f"dataset records must all have the same dimension, got {sorted(dims)}")
    if record_dim is not None and dims and dims != {record_dim}:
        raise InvalidParameter(f"dataset records must have dimension {record_dim}, got {dims.pop()}")
    return out


def _freeze(x):
    """A hashable copy of a dataset (nested lists become tuples) for the depth cache."""
    if isinstance(x, (list, tuple)):
        return tuple(_freeze(v) for v in x)
    return x


def point_code(p) -> str:
    """The output code of a point of Y~ (decimal floats joined by ',')."""
    return ",".join(repr(float(c)) for c in p)


def cdi_depth_optimiser(depths: Sequence[int], eps: float, rng: np.random.Generator) -> int:
    """Algorithm 3: the exponential mechanism (Theorem A.2) with quality depth_h^f (sensitivity 1,
    Claim 4.4) on Y~ at privacy eps; returns the index of the chosen point of Y~."""
    probs = exponential_mechanism_probabilities(depths, eps, 1.0)
    return int(rng.choice(len(probs), p=probs))


class BlackBoxEvaluator:
    """Algorithm 4 for a configuration and a black-box f (a callable on a list of records).

    ``depth_method``: ``"enumeration"`` (any f, n <= 16), ``"monotone"`` (d = 1, f symmetric and
    non-decreasing in every record, any n) or ``"auto"`` (enumeration when n <= 16, else monotone
    for d = 1, else an UnsupportedConfiguration error).
    """

    def __init__(self, config: EvaluatorConfig, f: Callable, *, params: PureParameters | None = None,
                 depth_method: str = "auto"):
        if not callable(f):
            raise InvalidParameter(f"f must be callable, got {type(f).__name__}")
        check_choice("depth_method", depth_method, DEPTH_METHODS)
        self.config, self.f, self.depth_method = config, f, depth_method
        self.domain = config.points()
        self.extended = list(extension(self.domain))
        self.params = params if params is not None else pure_parameters(config)
        codes = [point_code(p) for p in self.extended]
        if len(set(codes)) != len(codes):
            raise UnsupportedConfiguration("two points of the extended domain print to the same float code")
        self.codes = codes
        self._index = {p: i for i, p in enumerate(self.extended)}
        self._cache: dict = {}
        self._fmemo: dict = {}  # f on sorted sub-datasets (monotone method; f is symmetric there)

    # -- quality ------------------------------------------------------------------------------
    def _method(self, n: int) -> str:
        if self.depth_method != "auto":
            return self.depth_method
        if n <= MAX_ENUMERATION_RECORDS:
            return "enumeration"
        if self.config.d == 1:
            return "monotone"
        raise UnsupportedConfiguration(
            f"exact CDI depth for d = {self.config.d} needs n <= {MAX_ENUMERATION_RECORDS} records, got n={n}")

    def depths(self, S: Sequence, h: int) -> list[int]:
        """depth_h^f(S, y) for every y in Y~ (cached per dataset and h)."""
        key = (_freeze(S), int(h))
        if key in self._cache:
            return self._cache[key]
        method = self._method(len(S))
        if method == "monotone":
            if self.config.d != 1:
                raise UnsupportedConfiguration("the monotone depth method needs d = 1")
            out = monotone_depths_1d(S, self.f, h, self.extended, memo=self._fmemo)
        else:
            img_key = ("image", _freeze(S))
            if img_key not in self._cache:
                self._cache[img_key] = SubsetImage(S, self.f, self.domain, d=self.config.d)
            out = self._cache[img_key].depths(h, self.extended)
        self._cache[key] = out
        return out

    def empty_output(self) -> int:
        """Index in Y~ of f(empty set) (Algorithm 4 line 10)."""
        p = evaluate_point(self.f, [], self.config.d)
        if p not in self._index or p not in set(self.domain):
            raise InvalidParameter(f"f(empty dataset) = {tuple(map(float, p))} is outside the declared domain Y")
        return self._index[p]

    # -- Algorithm 4, literally ---------------------------------------------------------------
    def _size_noise(self, rng, size=None):
        p = self.params
        if p.size_noise == "tlap":
            return sample_tlap(rng, p.eps0, p.R, size)
        if p.size_noise == "laplace":
            return rng.laplace(0.0, 1.0 / p.eps0, size)
        return np.zeros(size) if size is not None else 0.0

    def run(self, S: Sequence, rng: np.random.Generator) -> tuple:
        """One run of Algorithm 4 on dataset S: returns a point of Y~ (as a tuple of Fractions)."""
        p = self.params
        if p.uniform_branch and rng.random() < p.eta:  # B ~ Bernoulli(eta)
            return self.extended[int(rng.integers(p.M))]
        Z = float(self._size_noise(rng))
        n_tilde = len(S) + Z
        h = P.cutoff(n_tilde, p.R, p.K)
        if h <= 0:
            return self.extended[self.empty_output()]
        return self.extended[cdi_depth_optimiser(self.depths(S, h), p.em_eps, rng)]

    # -- the same law, many runs at once ------------------------------------------------------
    def sample(self, S: Sequence, n: int, rng: np.random.Generator) -> np.ndarray:
        """n independent runs of Algorithm 4 on S: indices into Y~ (same law as :meth:`run`)."""
        p = self.params
        out = np.empty(n, dtype=np.int64)
        uniform = rng.random(n) < p.eta if p.uniform_branch else np.zeros(n, dtype=bool)
        out[uniform] = rng.integers(p.M, size=int(uniform.sum()))
        rest = np.nonzero(~uniform)[0]
        Z = self._size_noise(rng, rest.size)
        h = np.floor(len(S) + Z - p.R - p.K).astype(np.int64)
        for hv in np.unique(h):
            idx = rest[h == hv]
            if hv <= 0:
                out[idx] = self.empty_output()
                continue
            probs = exponential_mechanism_probabilities(self.depths(S, int(hv)), p.em_eps, 1.0)
            out[idx] = rng.choice(len(probs), size=idx.size, p=probs)
        return out
