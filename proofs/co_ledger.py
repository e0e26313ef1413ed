"""A rigorous ledger of one BatchToCO configuration's privacy budget (Lemma 38), in arb balls.

For a concrete :class:`~gtm_core.batchtoco.params.COConfig` and horizon T it encloses, with
python-flint balls built from the *exact binary values of the floats the driver runs with*
(the GTM step plans' tau_1, tau_2 and eps_t):

* the first call A(X_1, eps(1,1));
* for every level l = 2..min(T, 40) (at most T - 1 checkpoints happen by time T): GTM_l's worst ex-post
  loss 1/tau_1 + 2/tau_{2,j} over its planned steps (Lemma 17 / Theorem 23), its Lemma 38
  share (1 + C_H/C_1) eps(l), and ThresholdSelect's 2 eps_t + min(eps_t, 1) (Lemma 34(1));
* the tail of all levels > min(T, 40) bounded by (1 - sum_{k<=T} omega_k) C_eps eps (1 + (C_H+3)/C_1)
  using the certified normalisation C_omega, so the bound holds for an unbounded stream too.

The verdict is certified only if every upper end is below its budget. Erratum E1's ledger
(:func:`printed_formula_excess`) encloses GTM_l's loss under Algorithm 3's printed eps(l, t).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from flint import arb, ctx

from gtm_core.batchtoco import params as P
from gtm_core.batchtoco.gtm_instance import InstancePlan, step_privacy_used
from gtm_core.batchtoco.params import COConfig
from gtm_core.errors import InvalidParameter
from gtm_core.validation import check_int
from gtm_core.zeta import zeta_enclosure

_PREC = 200
#: levels checked one by one against the plans actually run; beyond, Lemma 38's proved share
#: (proofs.lemma38) is summed through the certified tail of the weights
EXPLICIT_LEVELS = 40


def _omega(k: int, c_omega) -> arb:
    kk = arb(k)
    return c_omega / (kk * (kk + 1).log() ** 2)


def _def7_omega(j: int, zeta) -> arb:
    jj = arb(j)
    return 1 / (zeta * jj * (jj + 2).log() ** 3)


def _upper(x: arb) -> float:
    return float(x.upper())


@dataclass
class LedgerRow:
    level: int
    gtm_loss_upper: float  # max_j 1/tau_1 + 2/tau_2,j (the plans actually run)
    gtm_share_lower: float  # (1 + C_H/C_1) eps(l)
    selection_loss_upper: float  # 2 eps_t + min(eps_t, 1) at the largest eps_t
    gtm_within_share: bool


@dataclass
class LedgerResult:
    horizon: int
    epsilon: float
    total_upper: float  # levels 1..T
    total_with_tail_upper: float  # all levels (unbounded stream)
    failure_upper: float  # sum_l beta_l + first-level tail <= C_beta beta
    certified: bool
    rows: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"horizon": self.horizon, "epsilon": self.epsilon, "total_upper": self.total_upper,
                "total_with_tail_upper": self.total_with_tail_upper, "failure_upper": self.failure_upper,
                "certified": self.certified, "levels": [r.__dict__ for r in self.rows]}


def ledger(config: COConfig, horizon: int) -> LedgerResult:
    """Certify Lemma 38's eps budget for ``config`` over ``horizon`` steps (and beyond)."""
    if not isinstance(config, COConfig):
        raise InvalidParameter(f"config must be a COConfig, got {type(config).__name__}")
    horizon = check_int("horizon", horizon, minimum=1, maximum=100_000_000)
    if config.delta != 0:
        raise InvalidParameter("the ledger covers delta = 0 configurations (pure DP); got delta > 0")
    old = ctx.prec
    try:
        ctx.prec = _PREC
        c_omega = P.omega_normaliser_enclosure(40)
        eps, c1, ch, cb = arb(config.epsilon), arb(config.c_1), arb(config.c_h), arb(config.c_beta)
        ceps = c1 / (c1 + ch + 3)
        # the first call: the float eps(1,1) the driver uses, checked against the formula's ball
        zeta = zeta_enclosure(40)
        beta1 = cb * _omega(1, c_omega) * arb(config.beta)
        eps11_ball = ceps * _omega(1, c_omega) * eps / (c1 * (4 / (_def7_omega(1, zeta) * beta1)).log())
        eps11 = arb(step_privacy_used(config, 1, 1))
        ok = bool(eps11.upper() <= eps11_ball.lower())
        total = eps11
        rows = []
        wsum = _omega(1, c_omega)
        levels = min(horizon, EXPLICIT_LEVELS)
        for level in range(2, levels + 1):
            plan = InstancePlan(config, level)
            tau1 = arb(plan.tau1)
            j, worst = 1, arb(0)
            while j <= max(1, horizon - level + 1):
                sp = plan.step(j)
                loss = 1 / tau1 + 2 / arb(sp.tau2)
                worst = loss if bool(loss.upper() > worst.upper()) else worst
                j = 2 * j + 1  # planning steps 1, 3, 7, ... (dyadic block ends)
            share = (1 + ch / c1) * ceps * _omega(level, c_omega) * eps
            eps_t = arb(plan.step(1).eps_t)
            sel = 2 * eps_t + (eps_t if eps_t < 1 else arb(1))
            within = bool(worst.upper() <= share.lower())
            ok = ok and within
            rows.append(LedgerRow(level, _upper(worst), float(share.lower()), _upper(sel), within))
            total = total + arb(worst.upper()) + arb(sel.upper())
            wsum = wsum + _omega(level, c_omega)
        tail = (1 - wsum) * ceps * eps * (1 + (ch + 3) / c1)
        if tail < 0:
            tail = arb(0)
        total_all = total + tail
        failure = cb * arb(config.beta)  # sum_l beta_l <= C_beta beta sum omega = C_beta beta
        certified = ok and bool(total.upper() <= eps.lower()) and bool(total_all.upper() <= eps.lower())
        return LedgerResult(horizon, config.epsilon, _upper(total), _upper(total_all), _upper(failure), certified, rows)
    finally:
        ctx.prec = old


def printed_formula_excess(config: COConfig, level: int, t: int, j: int = 1) -> tuple[float, float]:
    """Erratum E1: (lower end of GTM_l's ex-post loss at local step j when eps_t is Algorithm 3's
    printed eps(l, t) = eps(l)/(C_1 ln(4/(omega_t beta))), upper end of its share (1 + C_H/C_1) eps(l)).
    GTM_l's failure allocation is beta_j^GTM = omega_j^{Def. 7} beta_l (the project's Theorem 23 planner)."""
    old = ctx.prec
    try:
        ctx.prec = _PREC
        c_omega = P.omega_normaliser_enclosure(40)
        zeta = zeta_enclosure(40)
        eps, c1, ch, cb, beta = (arb(config.epsilon), arb(config.c_1), arb(config.c_h), arb(config.c_beta),
                                 arb(config.beta))
        ceps = c1 / (c1 + ch + 3)
        el = ceps * _omega(level, c_omega) * eps
        eps_printed = el / (c1 * (4 / (_omega(t, c_omega) * beta)).log())
        beta_l = cb * _omega(level, c_omega) * beta
        loss = el + ch * eps_printed * (4 / (_def7_omega(j, zeta) * beta_l)).log()
        share = (1 + ch / c1) * el
        return float(loss.lower()), float(share.upper())
    finally:
        ctx.prec = old
