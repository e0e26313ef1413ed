"""Peer mechanisms for generalized private testing, as the paper states them (Sections 7 and 9).

Every peer is a frozen description (its parameters, validated at construction) with

* ``guarantee()``                 - the privacy claim and the probability with which its accuracy claim holds;
* ``claimed_p_bar(t)``            - the rejection threshold it claims at step t (its own accuracy statement);
* ``claimed_halt_threshold(t)``   - the success probability above which it claims to halt;
* ``evaluations_bound(t)``        - its stated sample complexity at step t;
* ``simulate(p, n, rng)``         - n independent runs on the Bernoulli stream p[0..T-1] (vectorised);
* ``false_halt_probability(p, T)``- Pr[halt within T steps] on the constant stream p (numerical
                                    quadrature of the mechanism's exact law; cross-checked against
                                    ``simulate`` in tests/gtm_core/baselines/test_peers.py);
* ``first_step_halt_probability(p)`` - Pr[halt at step 1 | p_1 = p] (Type II check at p*).

All peers halt on ``+1`` (the paper's s_t = +1 formulation of Section 9). Streams are
``p[t] = Pr[M_t = +1]``. Evaluations are floats: Liu-Talwar's N exceeds int64 on part of the grid.

Errata found while implementing (see each class):

* Proposition 48(2b) prints ``(beta/2 - beta)^{1/theta_C}`` (a negative base); the proof supports
  ``p_bar_t = beta_t / (2 N_t (1 - beta/2)^{1/theta_C})`` - implemented.
* Theorem 46(3) "moreover" prints ``p_R >= 1 - (1 + e^{eps0}/(2(1-p*)) ((R+1)/beta)^sigma)^{-1}``,
  which is >= 1/3 for every p* and contradicts the halting guarantee 46(4) (e.g. p* = 0.01 halts
  w.p. >= 1 - beta at p ~ 0.07); not used as a claim, pinned by a test.

Where things live: one module per peer (:mod:`.liu_talwar`, :mod:`.liu_talwar_selection`, :mod:`.cohen`,
:mod:`.ghazi`, :mod:`.threshold_select`, :mod:`.above_threshold`), the random-dropping law shared by Cohen and
Ghazi in :mod:`.dropping`, and small shared helpers in :mod:`.common`.
"""

from .above_threshold import AboveThreshold, laplace_probability, laplace_quantile
from .cohen import CohenTest
from .common import PeerParameters, PeerResult
from .dropping import DroppingTester
from .ghazi import GhaziRandomDropping
from .liu_talwar import LiuTalwar
from .threshold_select import ThresholdSelectTester, threshold_select, threshold_select_iterations

__all__ = [
    "PeerParameters",
    "PeerResult",
    "LiuTalwar",
    "DroppingTester",
    "CohenTest",
    "GhaziRandomDropping",
    "ThresholdSelectTester",
    "AboveThreshold",
    "threshold_select",
    "threshold_select_iterations",
    "laplace_quantile",
    "laplace_probability",
    "PEERS",
]

PEERS = {
    "liu-talwar": LiuTalwar,
    "cohen": CohenTest,
    "ghazi": GhaziRandomDropping,
    "threshold-select": ThresholdSelectTester,
    "above-threshold": AboveThreshold,
}
