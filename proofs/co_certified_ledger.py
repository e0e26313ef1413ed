"""A rigorous ledger of one certified BatchToCO configuration (``[co] variant = "certified"``), in arb balls.

For a concrete :class:`~gtm_core.batchtoco.params.COConfig` it encloses, from the exact binary values of the
floats the driver runs with (the split of :func:`gtm_core.batchtoco.certified.certified_split`, the GTM_l
design's tau_1, tau_2, and the privacy the implementation runs ThresholdSelect's Q at):

* the first call eps_first and the warm-up calls: n_W eps_W with n_W =
  :func:`gtm_core.batchtoco.certified.warmup_call_bound` (the most calls the implementation makes whatever
  the data: R at the doubling times t = 2, 4, ... <= T, with or without ``warmup_after_checkpoint`` -
  continuing after a checkpoint reuses those times - and R + L for an implementation that also recomputes at
  checkpoints); certified only if n_W <= R, the number the split reserves;
* each of the L levels: GTM_l's Lemma 17 loss 1/tau_1 + 2/tau_2 (<= eps_G), ThresholdSelect_l's Lemma 34(1)
  cost 2 eps_Q' + eps_0 where eps_Q' = implementation.selection_epsilon(eps_Q) (<= eps_S);
* the total against eps. Certified only if every upper end is within its share and the total <= eps.

Where the budget goes is in :attr:`CertifiedLedger.shares` (fractions of eps). A broken implementation
that runs Q above its share (``selection_up``) or makes more warm-up calls than reserved
(``warmup_at_checkpoints``) is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from flint import arb, ctx

from gtm_core.batchtoco import certified as C
from gtm_core.batchtoco.implementation import ALGORITHM3
from gtm_core.batchtoco.params import COConfig
from gtm_core.planners import global_noise

_PREC = 200


@dataclass
class CertifiedLedger:
    epsilon: float
    levels: int
    first_level: int
    gtm_loss_upper: float  # 1/tau_1 + 2/tau_2 of the design (every level)
    gtm_share: float  # eps_G
    selection_loss_upper: float  # 2 eps_Q' + eps_0
    selection_share: float  # eps_S
    total_upper: float
    certified: bool
    shares: dict = field(default_factory=dict)  # fraction of eps per component (upper ends)
    p_bar: float = 0.0
    halting_slack: float = 0.0
    warmup_calls_charged: int = 0  # n_W: the warm-up calls the ledger charges (certified only if <= R)
    warmup_calls_reserved: int = 0  # R: the warm-up calls the split reserves eps_W for

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def ledger(config: COConfig, *, implementation=ALGORITHM3) -> CertifiedLedger:
    """Certify the certified variant's whole-stream epsilon for ``config`` with arb balls."""
    split = C.certified_split(C.check_certified(config))
    gtm = C.gtm_configuration(config)
    tau1, _, tau2 = global_noise(gtm)
    old = ctx.prec
    try:
        ctx.prec = _PREC
        eps = arb(config.epsilon)
        gtm_loss = 1 / arb(tau1) + 2 / arb(tau2)
        eq = arb(implementation.selection_epsilon(split.eps_q))
        e0 = arb(split.eps_0)
        sel = 2 * eq + e0
        first = arb(split.eps_first)
        n_warm = C.warmup_call_bound(config, implementation)
        warm = arb(n_warm) * arb(split.eps_warmup)
        L = arb(split.levels)
        total = first + warm + L * (gtm_loss + sel)
        ok = (n_warm <= split.warmup_calls
              and bool(gtm_loss.upper() <= arb(split.eps_gtm).lower())
              and bool(sel.upper() <= arb(split.eps_selection).lower())
              and bool(e0.upper() <= 1) and bool(total.upper() <= eps.lower()))

        def frac(x):
            return float((x / eps).upper())

        shares = {"first_call": frac(first), "warmup": frac(warm), "gtm": frac(L * gtm_loss),
                  "threshold_select": frac(L * sel), "unspent": float(((eps - total) / eps).lower())}
        p_bar = gtm.gtm.p_bar
        return CertifiedLedger(config.epsilon, split.levels, split.first_level, float(gtm_loss.upper()),
                               split.eps_gtm, float(sel.upper()), split.eps_selection, float(total.upper()), ok,
                               shares, p_bar, C.halting_slack(split.eps_t, p_bar), n_warm, split.warmup_calls)
    finally:
        ctx.prec = old
