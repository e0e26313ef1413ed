"""Early verdicts: an anytime-valid test on the pre-registered witness.

The estimation phase (:func:`audits.audit_engine.estimate`) samples the witness pair in chunks. With early
verdicts on (``gtm audit`` by default; ``--no-early-stop`` turns them off) it *looks* at the witness after
every chunk but the last - the cumulative runs per input double from look to look - and stops with a
violation as soon as the look's bound clears the claim; otherwise it runs to its budget.

**The test.** A sequential Clopper-Pearson test by a union bound over checkpoints: the spending sequence
alpha_k proportional to 6 / (pi^2 k^2) (Basel: it sums to 1 over k >= 1) is the union bound over rounds of
successive elimination (Even-Dar, Mannor and Mansour, "Action elimination and stopping conditions for the
multi-armed bandit and reinforcement learning problems", JMLR 7, 2006); see Howard, Ramdas, McAuliffe and
Sekhon, "Time-uniform, nonparametric, nonasymptotic confidence sequences", Ann. Statist. 49 (2021), for
union bounds over checkpoints as confidence sequences. The level alpha of the audit is split:

* look k = 1, 2, ... (an interim look): the conditional bound of
  :func:`audits.statistics.conditional_loss_lower_bound` on the cumulative counts, at level
  ``look_alpha(k)`` = alpha * EARLY_SHARE * 6 / (pi^2 k^2);
* the final look (the budget spent, no early stop): the same bound at ``final_alpha`` = alpha (1 - EARLY_SHARE).

Why the error guarantee is the fixed-sample one's alpha. Each look's bound is exact at its own level
(the counts at a look are Poisson with a data-independent mean - the chunk sizes depend on the plan and
the clock only - so given their sum the first count is binomial, as in the fixed-sample test), and
sum_k 6 / (pi^2 k^2) = 1 (Basel), so Pr[some look's bound, or the final one, exceeds the true loss]
<= alpha EARLY_SHARE + alpha (1 - EARLY_SHARE) = alpha. The audit reports the bound of the look it stopped
at (or the final one), so the reported bound is below the true loss with probability >= 1 - alpha, whatever
the stopping rule - the same statement as without early verdicts; a false violation (bound > claim on a
mechanism whose loss is <= claim) has probability <= alpha. :func:`sequential_false_alarm` computes that
probability exactly (a dynamic program over the binomial walk of the counts given their totals) for any
look schedule; ``tests/audits/test_early_stop.py`` checks it is <= alpha. The price: the final bound is at
alpha (1 - EARLY_SHARE) = 0.9 alpha instead of alpha (about 3% more margin at alpha = 0.05).

**Selection.** The witness must be fixed before its samples are drawn; nothing else is needed for
validity. So the selection phase may end early too: with early verdicts on, a scored pair whose best event
is flagrant on its *selection* samples (:func:`is_flagrant`: the two-sided Clopper-Pearson bound at alpha
over the pairs and events compared clears the claim) ends the selection, the validation round is skipped
and the pair is the witness. This uses only selection samples, so it changes where the audit spends its
budget, never the validity of the test on fresh samples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gtm_core.errors import InvalidParameter

from .statistics import conditional_loss_lower_bound, loss_lower_bound

EARLY_SHARE = 0.1  # share of alpha spent on the interim looks (the final look keeps the rest)
FIRST_LOOK_DIVISOR = 256  # the first look after (planned runs per input) / this; then the runs double


def look_alpha(k: int, alpha: float) -> float:
    """Level of interim look k >= 1: alpha EARLY_SHARE 6 / (pi^2 k^2) (sum over k = alpha EARLY_SHARE)."""
    if k < 1:
        raise InvalidParameter(f"look: look numbers start at 1, got {k!r}")
    return alpha * EARLY_SHARE * 6.0 / (math.pi ** 2 * k * k)


def final_alpha(alpha: float, early_stop: bool) -> float:
    """Level of the final look: alpha (1 - EARLY_SHARE) with early verdicts, else alpha (the fixed-sample test)."""
    return alpha * (1.0 - EARLY_SHARE) if early_stop else alpha


def first_look_runs(planned: int, minimum: int) -> int:
    """Runs per input of the first look: planned / FIRST_LOOK_DIVISOR, at least ``minimum``."""
    return max(int(minimum), int(planned) // FIRST_LOOK_DIVISOR)


def is_flagrant(count_a: int, n_a: int, count_b: int, n_b: int, alpha: float, comparisons: int,
                epsilon: float) -> bool:
    """The selection's early end: ln(CP_lower(P_A) / CP_upper(P_B)) at level alpha / comparisons (two
    one-sided Clopper-Pearson bounds, :func:`audits.statistics.loss_lower_bound`) exceeds the claim. A
    heuristic for where to spend the budget (the test is on fresh samples), made strict by the Bonferroni
    factor so that the winner's curse of the selection rarely triggers it."""
    level = alpha / max(int(comparisons), 1)
    return bool(float(loss_lower_bound(count_a, n_a, count_b, n_b, level)) > epsilon)


@dataclass(frozen=True)
class Look:
    """One interim look at the witness: cumulative runs per input (Poisson mean), counts, level and bound;
    the audit's runs and seconds so far."""

    look: int
    runs_per_input: int
    count_a: int
    count_b: int
    alpha: float
    bound: float
    samples: int
    seconds: float

    def to_dict(self) -> dict:
        return {"look": self.look, "runs_per_input": self.runs_per_input, "count_a": self.count_a,
                "count_b": self.count_b, "alpha": self.alpha,
                "bound": self.bound if math.isfinite(self.bound) else None, "samples": self.samples}


def take_look(k: int, runs_mean: int, count_a: int, count_b: int, alpha: float, samples: int,
              seconds: float) -> Look:
    """Interim look k on the cumulative counts: the conditional bound at :func:`look_alpha`."""
    level = look_alpha(k, alpha)
    bound = float(conditional_loss_lower_bound(count_a, count_b, level))
    return Look(k, int(runs_mean), int(count_a), int(count_b), level, bound, int(samples), float(seconds))


@dataclass(frozen=True)
class EarlyVerdict:
    """The JSON's ``early_stop`` section: the rule, every interim look, where the verdict was reached.

    ``stopped_look``: the look whose bound cleared the claim (None: no early stop, the verdict is the final
    look's at ``alpha_final``); ``selection_ended_early``: a flagrant pair ended the selection
    (:func:`is_flagrant`). ``samples`` / ``seconds``: when the verdict was reached (time to verdict)."""

    alpha: float
    looks: tuple[Look, ...]
    stopped_look: int | None
    selection_ended_early: bool
    samples: int
    seconds: float
    budget_samples: int | None = None

    @property
    def alpha_final(self) -> float:
        return final_alpha(self.alpha, True)

    def to_dict(self) -> dict:
        return {"rule": "union bound over looks: look k at alpha * %g * 6 / (pi^2 k^2), the final look at "
                        "alpha * %g (total alpha)" % (EARLY_SHARE, 1 - EARLY_SHARE),
                "alpha": self.alpha, "alpha_final": self.alpha_final, "stopped_look": self.stopped_look,
                "selection_ended_early": self.selection_ended_early,
                "time_to_verdict": {"samples": self.samples, "seconds": self.seconds,
                                    "early": self.stopped_look is not None},
                "looks": [x.to_dict() for x in self.looks]}

    def describe(self) -> str:
        """One line: when the verdict was reached and why then."""
        if self.stopped_look is not None:
            why = f"early verdict at look {self.stopped_look} of the witness test"
        else:
            why = f"the final look (no interim look of {len(self.looks)} cleared the claim)"
        if self.selection_ended_early:
            why += "; a flagrant pair ended the selection"
        of = f" of {self.budget_samples:,}" if self.budget_samples is not None else ""
        return f"{self.seconds:.1f} s, {self.samples:,}{of} runs ({why})"


def critical_count(total: int, epsilon: float, alpha: float) -> int:
    """Smallest k_A with conditional_loss_lower_bound(k_A, total - k_A, alpha) > epsilon (total + 1: none)."""
    def clears(k: int) -> bool:
        return bool(float(conditional_loss_lower_bound(k, total - k, alpha)) > epsilon)

    if not clears(total):
        return total + 1
    lo, hi = 0, total  # the bound grows with k_A at a fixed total: bisect for the first k that clears
    while lo < hi:
        mid = (lo + hi) // 2
        if clears(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def sequential_false_alarm(totals, epsilon: float, alpha: float, *, final: bool = True,
                           levels=None) -> float:
    """Exact probability that the early-verdict test declares a violation on a witness whose true loss is
    epsilon (theta = e^eps / (1 + e^eps), the worst case of the null: the rejection region only grows with
    k_A), given the totals k_A + k_B at the looks (``totals``, increasing; the last is the final look when
    ``final``). Given the totals the look-to-look increments of k_A are independent Binomial(total
    increment, theta); a dynamic program carries the law of k_A over the paths that have not rejected.
    ``levels``: the looks' levels (default :func:`look_alpha` per look, :func:`final_alpha` for the last)."""
    from scipy import stats

    totals = [int(t) for t in totals]
    theta = math.exp(epsilon) / (1.0 + math.exp(epsilon))
    if levels is None:
        levels = [look_alpha(k + 1, alpha) for k in range(len(totals))]
        if final:
            levels[-1] = final_alpha(alpha, True)
    alive = np.ones(1)  # law of k_A (index) over the paths not yet rejected
    rejected, previous = 0.0, 0
    for total, level in zip(totals, levels):
        step = total - previous
        alive = np.convolve(alive, stats.binom.pmf(np.arange(step + 1), step, theta))
        c = critical_count(total, epsilon, level)
        rejected += float(alive[c:].sum())
        alive[c:] = 0.0
        previous = total
    return rejected
