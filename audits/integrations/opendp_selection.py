"""OpenDP's Liu-Talwar private selection (``make_select_private_candidate``) held against ours.

:func:`opendp_selection` builds OpenDP's measurement on the testing task of
:class:`gtm_core.baselines.liu_talwar_selection.LiuTalwarSelection` - the same scorer (k evaluations
of a Bernoulli(p) mechanism, score = the number of +1s, released with the candidate ``"halt"``),
OpenDP's own selection loop and geometric stopping. :func:`compare_output_laws` runs both n times on
the constant stream p and compares the released outputs (nothing, or the score) with the G-test of
homogeneity (:func:`g_test`).

The scorer is a user measurement whose input is p itself (the task's "data"): its declared map
(k eps_1 d_in) is the user's statement; the audit of the 2 eps claim on real datasets is in the
catalogue (``select_private_candidate``). The scorer draws its Binomial from a seeded numpy
generator; OpenDP's stopping coins come from its own CSPRNG, which cannot be seeded, so a G-test's
outcome is random even at a fixed seed (its level holds over OpenDP's randomness).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
from scipy import stats

from gtm_core.baselines.liu_talwar_selection import LiuTalwarSelection, opendp_effective_stop_probability
from gtm_core.validation import check_open_unit, check_positive_int, check_probability

from .opendp import opendp_prelude

CANDIDATE = "halt"


def opendp_selection(selection: LiuTalwarSelection, p: float, rng: np.random.Generator, *,
                     stop_probability: float | None = None):
    """OpenDP's ``make_select_private_candidate`` over the selection's scorer on the constant stream p
    (``stop_probability``: default the design's gamma, passed as OpenDP documents it). Needs the
    features ``"contrib"`` and ``"honest-but-curious"`` (enabled by the caller)."""
    dp = opendp_prelude()
    p = check_probability("p", p)
    k, eps_q = selection.k, selection.k * selection.eps_1
    space = dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)
    scorer = space >> dp.m.then_user_measurement(
        dp.max_divergence(), lambda x: (float(rng.binomial(k, x)), CANDIDATE), lambda d: eps_q * d,
        TO="(f64, ExtrinsicObject)")
    gamma = selection.gamma if stop_probability is None else stop_probability
    measurement = dp.c.make_select_private_candidate(scorer, stop_probability=gamma, threshold=float(selection.tau))
    return measurement, p


def opendp_outputs(selection: LiuTalwarSelection, p: float, n: int, seed: int, *,
                   stop_probability: float | None = None) -> list:
    """n releases of OpenDP's selection on the constant stream p: the released score (int) or None."""
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x0DE]))
    measurement, p = opendp_selection(selection, p, rng, stop_probability=stop_probability)
    out = []
    for _ in range(check_positive_int("n", n)):
        r = measurement(p)
        out.append(None if r is None else int(r[0]))
    return out


@dataclass(frozen=True)
class GTest:
    """A G-test of homogeneity of two samples of a finite output (2 x C table, C - 1 degrees of freedom
    over the C outputs seen), at level ``alpha``: ``rejected`` when the p-value is below it."""

    statistic: float
    dof: int
    p_value: float
    alpha: float
    counts_a: dict
    counts_b: dict

    @property
    def rejected(self) -> bool:
        return self.p_value < self.alpha

    def to_dict(self) -> dict:
        return {"statistic": self.statistic, "dof": self.dof, "p_value": self.p_value, "alpha": self.alpha,
                "rejected": self.rejected, "counts_a": {str(k): v for k, v in self.counts_a.items()},
                "counts_b": {str(k): v for k, v in self.counts_b.items()}}


def g_test(sample_a, sample_b, alpha: float) -> GTest:
    """G = 2 sum O ln(O / E) over the 2 x C table of output counts (E from the pooled margins), compared
    with chi-square(C - 1) (Wilks; McDonald, Handbook of Biological Statistics, "G-test of independence")."""
    check_open_unit("alpha", alpha)
    ca, cb = Counter(sample_a), Counter(sample_b)
    keys = sorted(set(ca) | set(cb), key=lambda x: (x is not None, x if x is not None else 0))
    table = np.array([[ca[k] for k in keys], [cb[k] for k in keys]], dtype=float)
    expected = table.sum(axis=1, keepdims=True) * table.sum(axis=0, keepdims=True) / table.sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(table > 0, table * np.log(table / expected), 0.0)
    g = float(2 * terms.sum())
    dof = max(len(keys) - 1, 1)
    return GTest(g, dof, float(stats.chi2.sf(g, dof)), float(alpha), dict(ca), dict(cb))


def compare_output_laws(selection: LiuTalwarSelection, p: float, n: int, *, seed: int, alpha: float,
                        stop_probability: float | None = None) -> GTest:
    """G-test that ``selection.sample_outputs`` (ours, seeded) and OpenDP's selection (same scorer,
    ``stop_probability`` as passed to OpenDP) release outputs with the same law on the constant stream p."""
    ours = selection.sample_outputs(p, n, np.random.default_rng(np.random.SeedSequence([int(seed), 0x0A5])))
    theirs = opendp_outputs(selection, p, n, seed, stop_probability=stop_probability)
    return g_test(ours, theirs, alpha)


def compensated_stop_probability(gamma: float) -> float:
    """The ``stop_probability`` to pass OpenDP 0.16 so that it stops with gamma
    (:func:`gtm_core.baselines.liu_talwar_selection.opendp_effective_stop_probability` is an involution)."""
    return opendp_effective_stop_probability(gamma)

