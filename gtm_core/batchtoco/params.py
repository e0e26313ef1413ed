"""Section 7.3's parameter block of BatchToCO, one function per formula.

Every function takes ``dps``: ``None`` computes in float64, an integer computes with
mpmath at that many digits (the project's :mod:`gtm_core.numeric` backends).
The weight normalisation C_omega is an infinite series; :func:`omega_normaliser_enclosure`
gives a python-flint ``arb`` ball *proved* to contain it (Euler-Maclaurin with the
remainder theorem, as :mod:`gtm_core.zeta` does for zeta) and :func:`omega_normaliser`
an independent mpmath evaluation that tests hold inside the ball.

Erratum E1 (implemented as the proof supports, pinned in
tests/gtm_core/batchtoco/test_params.py::test_erratum_e1_printed_step_privacy_breaks_instance_budget):
Algorithm 3 prints eps(l, t) = eps(l) / (C_1 ln(4/(omega_t beta))) with the *global* beta,
but Corollary 35 (applied in Lemmas 38/39 with beta_GTM = beta_l) needs
eps_t <= eps(l) / (C_1 ln(4/beta_t^GTM)) where beta_t^GTM is the GTM instance's own
per-step failure allocation (sum_t beta_t^GTM <= beta_l). Since beta_l < beta, the printed
eps(l, t) is larger than allowed and GTM_l's ex-post loss eps(l) + C_H eps_t ln(4/beta_t^GTM)
exceeds Lemma 38's (1 + C_H/C_1) eps(l). We use beta_t^GTM = Definition 7's
omega_j beta_l at the instance's local step j (the allocation the project's Theorem 23
planner uses) and eps(l, j) = eps(l) / (C_1 ln(4/beta_j^GTM)); then the loss is exactly
(1 + C_H/C_1) eps(l) and Lambda_j <= Lambda. :func:`step_privacy_as_printed` keeps the
printed formula for the ledger and the witnesses.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping

import mpmath

from .. import formulas as F
from ..errors import ConfigError, InvalidParameter
from ..inputs import parse_toml, read_text_file
from ..numeric import backend
from ..validation import (
    check_bool,
    check_choice,
    check_int,
    check_nonnegative,
    check_gamma,
    check_half_open_unit,
    check_nonnegative_int,
    check_positive,
    check_positive_int,
)

PROBLEMS = ("coverage", "maxcut", "densest")
#: "literal": Algorithm 3 with Section 7.3's constants (the reference); "certified": the budget-tight
#: variant of :mod:`gtm_core.batchtoco.certified` (same structure, shares spent in full, docs/batchtoco.md)
VARIANTS = ("literal", "certified")
#: fields only the certified variant reads (refused with variant = "literal")
CERTIFIED_KEYS = ("horizon", "levels", "first_level", "gtm_share", "first_share", "test_ratio", "eps0_share",
                  "max_evaluations", "warmup_share", "warmup_after_checkpoint")

# ---------------------------------------------------------------------------
# the weight sequence omega_k = C_omega / (k ln^2(k+1))
# ---------------------------------------------------------------------------

_N = 200  # direct summation of g(1..N-1), Euler-Maclaurin from N on


@functools.lru_cache(maxsize=8)
def omega_normaliser_enclosure(digits: int = 40):
    """A python-flint ``arb`` ball proved to contain C_omega = 1 / sum_{k>=1} 1/(k ln^2(k+1)).

    Section 7.3 "Weight sequence". g(x) = 1/(x ln^2(x+1)) is completely monotone on
    (0, inf) (1/x is; ln(x+1) is a Bernstein function and y^-2 is completely monotone, so
    1/ln^2(x+1) is; products of completely monotone functions are), hence every even
    derivative is >= 0 and the Euler-Maclaurin remainder lies between 0 and the first omitted
    term (Graham-Knuth-Patashnik 9.5). The tail integral with x = e^y is
    int_{ln N}^inf dy / (y + ln(1 + e^-y))^2: integrated rigorously (``acb.integral``) up to
    Y, and beyond Y enclosed by [1/(Y + e^-Y), 1/Y] since 0 < ln(1 + e^-y) < e^-Y there.
    """
    from flint import acb, arb, arb_series, ctx

    digits = int(digits)
    if digits < 1:
        raise InvalidParameter(f"digits must be >= 1, got {digits}")
    m = 8 + digits // 4
    Y = max(60, int((digits + 10) * math.log(10)) + 1)
    old_prec, old_cap = ctx.prec, ctx.cap
    try:
        ctx.prec = int(digits * 3.33) + 64
        ctx.cap = 2 * m + 4
        head = arb(0)
        for j in range(1, _N):
            x = arb(j)
            head += 1 / (x * (x + 1).log() ** 2)
        h = arb_series([_N, 1], prec=2 * m + 2)
        coeffs = (1 / (h * (h + 1).log() ** 2)).coeffs()
        a = [coeffs[n] if n < len(coeffs) else arb(0) for n in range(2 * m + 2)]
        em = a[0] / 2
        for k in range(1, m + 1):
            em -= arb.bernoulli(2 * k) * a[2 * k - 1] / (2 * k)
        omitted = -arb.bernoulli(2 * m + 2) * a[2 * m + 1] / (2 * m + 2)
        remainder = omitted * arb(mid=0.5, rad=0.5)

        def integrand(y, analytic):
            return 1 / (y + (1 + (-y).exp()).log(analytic=analytic)) ** 2

        Ya = arb(Y)
        body = acb.integral(integrand, acb(arb(_N).log()), acb(Ya)).real
        beyond = (1 / (Ya + (-Ya).exp())).union(1 / Ya)
        total = head + body + beyond + em + remainder
        return 1 / total
    finally:
        ctx.prec, ctx.cap = old_prec, old_cap


@functools.lru_cache(maxsize=None)
def _omega_normaliser_mp(dps: int):
    """Independent mpmath path: direct head, mpmath.taylor derivatives, mpmath.quad tail."""
    m = 8 + dps // 4
    with mpmath.workdps(dps + 20):
        g = lambda x: 1 / (x * mpmath.log(x + 1) ** 2)  # noqa: E731
        head = mpmath.fsum(g(mpmath.mpf(j)) for j in range(1, _N))
        coeffs = mpmath.taylor(g, mpmath.mpf(_N), 2 * m + 1)
        em = coeffs[0] / 2
        for k in range(1, m + 1):
            em -= mpmath.bernoulli(2 * k) * coeffs[2 * k - 1] / (2 * k)
        Y = max(60, int((dps + 10) * math.log(10)) + 1)
        body = mpmath.quad(lambda y: 1 / (y + mpmath.log1p(mpmath.exp(-y))) ** 2,
                           mpmath.linspace(mpmath.log(_N), Y, 8))
        beyond = 1 / mpmath.mpf(Y)
        return 1 / (head + body + beyond + em)


def omega_normaliser(*, dps: int | None = None):
    """Section 7.3: C_omega, chosen so that sum_{k>=1} omega_k = 1 (float64 or mpmath)."""
    if dps is None:
        return float(_omega_normaliser_mp(20))
    with mpmath.workdps(dps):
        return +_omega_normaliser_mp(int(dps))


def omega_weight(k: int, *, dps: int | None = None):
    """Section 7.3 "Weight sequence": omega_k = C_omega / (k ln^2(k+1)), sum_k omega_k = 1."""
    k = check_positive_int("k", k)
    m = backend(dps)
    with m.context():
        kk = m.num(k)
        return m.num(omega_normaliser(dps=dps)) / (kk * m.log(kk + 1) ** 2)


# ---------------------------------------------------------------------------
# constants (Section 7.3 "Constants", "Derived quantities from the GTM")
# ---------------------------------------------------------------------------


def threshold_level(i: int, kappa, *, dps: int | None = None):
    """Algorithm 3: h_i = (1 + kappa)^i, the i-th geometric threshold."""
    m = backend(dps)
    with m.context():
        return m.power(1 + m.num(kappa), m.num(i))


def privacy_scale(c_1, c_h, *, dps: int | None = None):
    """Section 7.3 / Lemma 38: C_eps = C_1 / (C_1 + C_H + 3) < 1."""
    m = backend(dps)
    with m.context():
        return m.num(c_1) / (m.num(c_1) + m.num(c_h) + 3)


def delta_scale(c_beta, *, dps: int | None = None):
    """Section 7.3 / Lemma 38: C_delta = 1 + 3 e^3 / C_beta."""
    m = backend(dps)
    with m.context():
        return 1 + 3 * m.exp(m.num(3)) / m.num(c_beta)


def noise_range_constant(c_1, c_h, *, dps: int | None = None):
    """Corollary 35: Lambda = e^{1/C_1 + 2/C_H}, independent of t and beta."""
    m = backend(dps)
    with m.context():
        return m.exp(1 / m.num(c_1) + 2 / m.num(c_h))


def co_rejection_threshold(p_star, gamma, c_1, c_h, *, dps: int | None = None):
    """Corollary 35: p_bar = p* / (gamma Lambda)."""
    m = backend(dps)
    with m.context():
        return m.num(p_star) / (m.num(gamma) * m.num(noise_range_constant(c_1, c_h, dps=dps)))


# ---------------------------------------------------------------------------
# per-checkpoint and per-step quantities
# ---------------------------------------------------------------------------


def checkpoint_privacy(level: int, epsilon, c_1, c_h, *, dps: int | None = None):
    """Section 7.3: eps(l) = C_eps omega_l eps, the budget of GTM instance l."""
    m = backend(dps)
    with m.context():
        return m.num(privacy_scale(c_1, c_h, dps=dps)) * m.num(omega_weight(level, dps=dps)) * m.num(epsilon)


def checkpoint_failure(level: int, beta, c_beta, *, dps: int | None = None):
    """Section 7.3: beta_l = C_beta omega_l beta, the failure probability of instance l."""
    m = backend(dps)
    with m.context():
        return m.num(c_beta) * m.num(omega_weight(level, dps=dps)) * m.num(beta)


def stopping_probability(level: int, p_bar, beta, c_beta, *, dps: int | None = None):
    """Section 7.3: xi_l = p_bar beta_l, ThresholdSelect's coin at checkpoint l."""
    m = backend(dps)
    with m.context():
        return m.num(p_bar) * m.num(checkpoint_failure(level, beta, c_beta, dps=dps))


def planning_step(j: int) -> int:
    """The step whose Theorem 23 plan GTM_l uses at local step j: the last step
    2^(b+1) - 1 of j's dyadic block [2^b, 2^(b+1)). Its failure allocation beta_{j*} <= beta_j,
    so every proof obligation (sum_j beta_j <= beta_l, Lambda_j <= Lambda, loss
    (1 + C_H/C_1) eps(l)) still holds, and an instance needs only O(log T) distinct plans."""
    j = check_positive_int("j", j)
    return (1 << j.bit_length()) - 1


def instance_step_failure(level: int, j: int, beta, c_beta, *, dps: int | None = None):
    """beta_j^GTM = omega_j^{Def. 7} beta_l: GTM instance l's failure allocation at its local
    step j (Theorem 23's beta_t with beta = beta_l; sum_j beta_j^GTM = beta_l)."""
    m = backend(dps)
    with m.context():
        return m.num(F.step_failure_probability(j, checkpoint_failure(level, beta, c_beta, dps=dps), dps=dps))


def step_privacy(level: int, j: int, epsilon, beta, c_1, c_h, c_beta, *, dps: int | None = None):
    """eps(l, j) = eps(l) / (C_1 ln(4/beta_j^GTM)) at local step j of instance l.

    Corollary 35's hypothesis with beta_GTM = beta_l (erratum E1, module docstring): the
    printed Algorithm 3 uses ln(4/(omega_t beta)) with the global beta."""
    m = backend(dps)
    with m.context():
        b = m.num(instance_step_failure(level, j, beta, c_beta, dps=dps))
        return m.num(checkpoint_privacy(level, epsilon, c_1, c_h, dps=dps)) / (m.num(c_1) * m.log(4 / b))


def step_privacy_as_printed(level: int, t: int, epsilon, beta, c_1, c_h, *, dps: int | None = None):
    """Algorithm 3 as printed: eps(l, t) = eps(l) / (C_1 ln(4/(omega_t beta))) (global t, beta)."""
    m = backend(dps)
    with m.context():
        w = m.num(omega_weight(t, dps=dps))
        return m.num(checkpoint_privacy(level, epsilon, c_1, c_h, dps=dps)) / (m.num(c_1) * m.log(4 / (w * m.num(beta))))


def step_delta(level: int, eps_step, p_bar, beta, delta, c_beta, *, dps: int | None = None):
    """Section 7.3: delta(l, t) = min(p_bar omega_l^2 beta delta / C_delta, (p_bar/2) eps(l, t))."""
    m = backend(dps)
    with m.context():
        w = m.num(omega_weight(level, dps=dps))
        first = m.num(p_bar) * w * w * m.num(beta) * m.num(delta) / m.num(delta_scale(c_beta, dps=dps))
        second = m.num(p_bar) / 2 * m.num(eps_step)
        return first if first <= second else second


def threshold_select_iterations(xi, eps0, *, dps: int | None = None) -> int:
    """Algorithm 2 / Lemma 34: T = ceil(max{(1/xi) ln(2/eps_0), 1 + 1/(e xi)})."""
    m = backend(dps)
    with m.context():
        x, e0 = m.num(xi), m.num(eps0)
        return m.ceil(max(m.log(2 / e0) / x, 1 + 1 / (m.exp(m.num(1)) * x)))


# ---------------------------------------------------------------------------
# Lemma 38's per-component losses
# ---------------------------------------------------------------------------


def gtm_instance_loss(level: int, epsilon, c_1, c_h, *, dps: int | None = None):
    """Lemma 38 (19) / Corollary 35(1): GTM_l's transcript is (1 + C_H/C_1) eps(l)-DP."""
    m = backend(dps)
    with m.context():
        return (1 + m.num(c_h) / m.num(c_1)) * m.num(checkpoint_privacy(level, epsilon, c_1, c_h, dps=dps))


def threshold_select_loss(eps_step, *, dps: int | None = None):
    """Lemma 34(1) with eps_1 = eps_t, eps_0 = min(eps_t, 1): 2 eps_t + eps_0."""
    m = backend(dps)
    with m.context():
        e = m.num(eps_step)
        return 2 * e + (e if e <= 1 else m.num(1))


def threshold_select_delta(eps_step, delta_step, xi, *, dps: int | None = None):
    """Lemma 34(1): 3 e^{2 eps_t + eps_0} delta_t / xi."""
    m = backend(dps)
    with m.context():
        return 3 * m.exp(m.num(threshold_select_loss(eps_step, dps=dps))) * m.num(delta_step) / m.num(xi)


# ---------------------------------------------------------------------------
# accuracy side: Lemmas 39-41 and Theorem 42 in explicit (pre-O) form
# ---------------------------------------------------------------------------


def test_slack(eps_step, p_bar, *, dps: int | None = None):
    """Lemma 39: (2/eps_t) ln(1/p_bar), the Laplace slack of a threshold test."""
    m = backend(dps)
    with m.context():
        return 2 / m.num(eps_step) * m.log(1 / m.num(p_bar))


def selection_draw_cap(level: int, p_bar, beta, *, dps: int | None = None) -> int:
    """Lemma 41: k_max = ceil((2/p_bar) ln(1/(omega_l beta)))."""
    m = backend(dps)
    with m.context():
        return m.ceil(2 / m.num(p_bar) * m.log(1 / (m.num(omega_weight(level, dps=dps)) * m.num(beta))))


def checkpoint_quality_loss(level: int, eps_step, p_bar, beta, *, dps: int | None = None):
    """Lemma 41 (before simplification): (2/eps_t) ln(k_max / (omega_l beta)); with prob.
    >= 1 - 3 omega_l beta, f(X_t(l), Y_cur) >= h_l minus this."""
    m = backend(dps)
    with m.context():
        k = m.num(selection_draw_cap(level, p_bar, beta, dps=dps))
        return 2 / m.num(eps_step) * m.log(k / (m.num(omega_weight(level, dps=dps)) * m.num(beta)))


def theorem42_failure(beta, c_beta, *, dps: int | None = None):
    """Theorem 42 (probability accounting): total failure <= (C_beta + 3) beta."""
    m = backend(dps)
    with m.context():
        return (m.num(c_beta) + 3) * m.num(beta)


# ---------------------------------------------------------------------------
# configuration
# ---------------------------------------------------------------------------

_KEYS = {"epsilon", "delta", "p_star", "kappa", "gamma", "beta", "c_1", "c_h", "c_beta",
         "problem", "k", "seed", "variant", *CERTIFIED_KEYS}


@dataclass(frozen=True)
class COConfig:
    """The ``[co]`` table: BatchToCO's inputs (Algorithm 3) and the batch problem.

    ``epsilon`` in (0, 1), ``delta`` in [0, 1), ``p_star`` in (0, 1/2], ``kappa`` > 0,
    ``gamma`` in (1, 2], ``beta`` in (0, 1/e), ``c_1``, ``c_h`` > 0, ``c_beta`` in (0, 1/3]
    (Lemma 41). ``problem``: "coverage" (k-vertex coverage, private greedy), "maxcut"
    (exponential mechanism over all cuts), "densest" (densest subgraph, exponential mechanism over all
    vertex sets; :mod:`gtm_core.batchtoco.densest`).
    ``seed``: a seeded run is not for deployment. ``variant``: "literal" (Algorithm 3 with
    Section 7.3's constants) or "certified" (:mod:`gtm_core.batchtoco.certified`, which reads
    ``horizon``, ``levels``, ``first_level``, ``gtm_share``, ``first_share``, ``test_ratio``,
    ``eps0_share``, ``max_evaluations``, ``warmup_share`` and ``warmup_after_checkpoint``; refused with
    "literal").
    """

    epsilon: float = 0.9
    delta: float = 0.0
    p_star: float = 0.45
    kappa: float = 1.0
    gamma: float = 2.0
    beta: float = 0.05
    c_1: float = 1.0
    c_h: float = 2.0
    c_beta: float = 1 / 3
    problem: str = "coverage"
    k: int = 3
    seed: int | None = None
    variant: str = "literal"
    # certified variant only (gtm_core/batchtoco/certified.py); None = not set
    horizon: int | None = None  # T: the stream length the run is planned for (updates beyond T are refused)
    levels: int | None = None  # L: GTM levels first_level .. first_level + L - 1 (default: enough for OPT <= T)
    first_level: int | None = None  # l_0 >= 2: the first GTM level (threshold h_{l_0} = (1 + kappa)^{l_0})
    gtm_share: float | None = None  # fraction of a level's budget given to GTM_l (rest: ThresholdSelect)
    first_share: float | None = None  # fraction of epsilon for the first call A(X_1)
    test_ratio: float | None = None  # eps_G / eps_t: GTM_l's budget over its input privacy
    eps0_share: float | None = None  # fraction of ThresholdSelect's share used as Lemma 34's eps_0
    max_evaluations: float | None = None  # GTM_l's expected evaluations per step (horizon planner budget)
    warmup_share: float | None = None  # fraction of epsilon for the warm-up recomputations (0 = none)
    # True: the warm-up recomputations continue at every t = 2, 4, 8, ... <= T after checkpoints too (the
    # output is the most recent solution); False (default): they stop at the first checkpoint
    warmup_after_checkpoint: bool | None = None

    def __post_init__(self):
        e = check_positive("epsilon", self.epsilon)
        if not e < 1:
            raise InvalidParameter(f"epsilon must be in (0, 1) (Algorithm 3 needs eps < 1), got {self.epsilon!r}")
        object.__setattr__(self, "epsilon", e)
        object.__setattr__(self, "delta", check_half_open_unit("delta", self.delta))
        p = check_positive("p_star", self.p_star)
        if not p <= 0.5:
            raise InvalidParameter(f"p_star must be in (0, 1/2], got {self.p_star!r}")
        object.__setattr__(self, "p_star", p)
        object.__setattr__(self, "kappa", check_positive("kappa", self.kappa))
        object.__setattr__(self, "gamma", check_gamma("gamma", self.gamma))
        b = check_positive("beta", self.beta)
        if not b < 1 / math.e:
            raise InvalidParameter(f"beta must be in (0, 1/e), got {self.beta!r}")
        object.__setattr__(self, "beta", b)
        object.__setattr__(self, "c_1", check_positive("c_1", self.c_1))
        object.__setattr__(self, "c_h", check_positive("c_h", self.c_h))
        cb = check_positive("c_beta", self.c_beta)
        if not cb <= 1 / 3 + 1e-15:
            raise InvalidParameter(f"c_beta must be in (0, 1/3] (Lemma 41), got {self.c_beta!r}")
        object.__setattr__(self, "c_beta", cb)
        check_choice("problem", self.problem, PROBLEMS)
        object.__setattr__(self, "k", check_positive_int("k", self.k))
        if self.seed is not None:
            object.__setattr__(self, "seed", check_nonnegative_int("seed", self.seed))
        check_choice("variant", self.variant, VARIANTS)
        if self.variant == "literal":
            for name in CERTIFIED_KEYS:
                if getattr(self, name) is not None:
                    raise InvalidParameter(f"{name} is only used by variant = 'certified', got {getattr(self, name)!r}")
        else:
            self._check_certified()

    def _check_certified(self) -> None:
        """Fill and check the certified variant's fields (defaults documented in docs/batchtoco.md)."""
        if self.horizon is None:
            raise InvalidParameter("horizon is required for variant = 'certified' (the run is planned for T updates)")
        T = check_positive_int("horizon", self.horizon)
        if T > 10_000_000:
            raise InvalidParameter(f"horizon must be <= 10^7, got {self.horizon!r}")
        object.__setattr__(self, "horizon", T)
        if self.first_level is not None:  # None: chosen by certified.certified_split (threshold >= the test's slack)
            object.__setattr__(self, "first_level", check_int("first_level", self.first_level, minimum=2, maximum=10_000))
        if self.levels is not None:  # None: enough levels for the last threshold to exceed T (OPT_T <= T)
            object.__setattr__(self, "levels", check_int("levels", self.levels, minimum=1, maximum=10_000))
        for name, default in (("gtm_share", 0.6), ("first_share", 0.001), ("eps0_share", 0.05)):
            v = default if getattr(self, name) is None else getattr(self, name)
            v = check_positive(name, v)
            if not v < 1:
                raise InvalidParameter(f"{name} must be in (0, 1), got {getattr(self, name)!r}")
            object.__setattr__(self, name, v)
        wu = 0.5 if self.warmup_share is None else self.warmup_share
        wu = check_nonnegative("warmup_share", wu)
        if not wu + self.first_share < 1:
            raise InvalidParameter(f"warmup_share + first_share must be < 1, got {wu!r} + {self.first_share!r}")
        object.__setattr__(self, "warmup_share", wu)
        wac = False if self.warmup_after_checkpoint is None else self.warmup_after_checkpoint
        object.__setattr__(self, "warmup_after_checkpoint", check_bool("warmup_after_checkpoint", wac))
        r = 16.0 if self.test_ratio is None else self.test_ratio
        r = check_positive("test_ratio", r)
        if not r > 1:
            raise InvalidParameter(f"test_ratio must be > 1 (eps_t < eps_G), got {self.test_ratio!r}")
        object.__setattr__(self, "test_ratio", r)
        me = 1e4 if self.max_evaluations is None else self.max_evaluations
        object.__setattr__(self, "max_evaluations", check_positive("max_evaluations", me))

    # derived quantities -----------------------------------------------------
    @property
    def p_bar(self) -> float:
        return float(co_rejection_threshold(self.p_star, self.gamma, self.c_1, self.c_h))

    @property
    def batch_failure(self) -> float:
        """beta_A = 1 - 2 p* (Corollary 43: p* = (1 - beta_A)/2)."""
        return 1 - 2 * self.p_star

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "COConfig":
        if not isinstance(data, Mapping):
            raise ConfigError(f"[co] must be a table, got {type(data).__name__}")
        extra = set(data) - _KEYS
        if extra:
            raise ConfigError(f"unknown key(s) in [co]: {', '.join(sorted(extra))}")
        if "epsilon" not in data:
            raise ConfigError("missing key [co].epsilon")
        return cls(**dict(data))

    @classmethod
    def load(cls, path) -> "COConfig":
        p = Path(path)
        text = read_text_file(path, what="configuration", error=ConfigError)
        data = parse_toml(text, what=repr(str(p)), error=ConfigError)
        if "co" not in data:
            raise ConfigError(f"missing table [co] in {str(p)!r}")
        return cls.from_dict(data["co"])
