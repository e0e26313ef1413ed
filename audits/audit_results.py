"""What an audit reports: the witness, the search summary, the budget assessment and the result.

Every value here is frozen and has ``to_dict()``, the JSON form of ``gtm audit --json`` (the keys
and their order are part of the output contract, docs/README). :func:`without_timings` drops what
depends on where and how fast an audit ran. The engine that produces these values is
:mod:`audits.audit_engine`; the GTM audit is :mod:`audits.gtm_audit`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

VIOLATION, NO_VIOLATION = "violation", "no-violation-found"

METHOD = ("two-phase: successive-halving selection, then one pre-registered witness on fresh samples; "
          "Poisson(M) runs per input and the conditional test (one-sided Clopper-Pearson at alpha on "
          "P[E] / (P[E] + P'[E]) given the total count)")

TIMING_KEYS = ("seconds", "execution")  # where and how long an audit ran: not part of its result
BUDGET_TIMING_KEYS = ("seconds_used", "time_share_used")


def _finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


@dataclass(frozen=True)
class AuditWitness:
    """The pre-registered (pair, event, direction) and its final-phase estimates."""

    input_a: Any
    input_b: Any
    event: str
    family: str
    count_a: int
    n_a: int
    count_b: int
    n_b: int
    probability_a: float
    probability_a_lower: float
    probability_b: float
    probability_b_upper: float
    event_codes: tuple = ()
    runs_mean: int = 0  # planned Poisson mean M of the runs per input
    loss_bound: float = float("-inf")  # the conditional test's lower bound on ln(P[E] / P'[E])

    def to_dict(self) -> dict:
        return {
            "event_codes": list(self.event_codes),
            "runs_mean": self.runs_mean,
            "loss_bound": self.loss_bound,
            "statistic": "poisson-conditional",
            "p": self.input_a,
            "p_prime": self.input_b,
            "event": self.event,
            "family": self.family,
            "probability": {"estimate": self.probability_a, "lower": self.probability_a_lower,
                            "count": self.count_a, "n": self.n_a},
            "probability_prime": {"estimate": self.probability_b, "upper": self.probability_b_upper,
                                  "count": self.count_b, "n": self.n_b},
        }


@dataclass(frozen=True)
class FamilyTally:
    """One candidate family's share of the selection: pairs proposed and scored (sampled), the last
    round that scored one of them and their best projected bound (-inf before any was scored)."""

    proposed: int = 0
    scored: int = 0
    last_round: int = 0
    best_score: float = -math.inf

    def with_proposed(self, n: int = 1) -> "FamilyTally":
        """The tally after ``n`` more proposed pairs."""
        return replace(self, proposed=self.proposed + n)

    def with_score(self, round_number: int, score: float, *, first_time: bool) -> "FamilyTally":
        """The tally after one of its pairs was scored in ``round_number`` (``first_time``: never before)."""
        return replace(self, scored=self.scored + int(first_time), last_round=round_number,
                       best_score=max(self.best_score, score))

    @property
    def not_visited(self) -> int:
        """Proposed pairs never sampled (the selection budget ran out first)."""
        return self.proposed - self.scored

    def to_dict(self) -> dict:
        return {"proposed": self.proposed, "scored": self.scored, "last_round": self.last_round,
                "best_score": _finite_or_none(self.best_score), "not_visited": self.not_visited}


@dataclass(frozen=True)
class SkippedRegion:
    """A part of the input space the search does not try, and why."""

    region: str
    reason: str

    def to_dict(self) -> dict:
        return {"region": self.region, "reason": self.reason}


@dataclass(frozen=True)
class SearchCoverage:
    """What the search tried (``searched``: the problem's own description, e.g. the GTM grid's levels
    and lengths, :func:`audits.pair_search.coverage`) and what it skipped, with reasons."""

    searched: Mapping[str, Any] = field(default_factory=dict)
    skipped: tuple[SkippedRegion, ...] = ()

    def with_skipped(self, region: str, reason: str) -> "SearchCoverage":
        return replace(self, skipped=self.skipped + (SkippedRegion(region, reason),))

    def to_dict(self) -> dict:
        if not self.searched and not self.skipped:
            return {}
        return {**self.searched, "skipped": [s.to_dict() for s in self.skipped]}


@dataclass(frozen=True)
class RankedPair:
    """One of the last selection round's best pairs: its projected bound, event and the pair."""

    score: float
    event: str
    pair: Mapping[str, Any]

    def to_dict(self) -> dict:
        return {"score": self.score, "event": self.event, "pair": self.pair}


@dataclass(frozen=True)
class BudgetAssessment:
    """How much of the budget was used, and whether it could give a meaningful bound.

    ``best_reachable_bound`` is the largest bound the conditional test could have reported on the
    witness event with the hits it got (:func:`audits.audit_verdict.budget_assessment`); None when
    no hit at all. ``warning`` says so when that bound is not above the claim; ``stopped`` describes a
    budget stop (:func:`audits.audit_engine.budget_stop_note`)."""

    seconds: float | None
    max_samples: int | None
    samples_used: int
    seconds_used: float
    time_share_used: float | None
    final_runs_per_input: int
    best_reachable_bound: float | None
    meaningful: bool
    warning: str | None
    stopped: str | None = None  # a budget stop: the clock ran out before the sample budget (None: it did not)

    def to_dict(self) -> dict:
        return {"seconds": self.seconds, "max_samples": self.max_samples, "samples_used": self.samples_used,
                "seconds_used": self.seconds_used, "time_share_used": self.time_share_used,
                "final_runs_per_input": self.final_runs_per_input,
                "best_reachable_bound": self.best_reachable_bound, "meaningful": self.meaningful,
                "warning": self.warning, "stopped": self.stopped}


@dataclass(frozen=True)
class SearchSummary:
    """The JSON's ``search`` section: selection rounds, pairs examined, the last round's best pairs, the
    witness's projected bound and final runs, first-round sizes, per-family tallies, coverage, budget."""

    rounds: int
    pairs_examined: int
    selection_top: tuple[RankedPair, ...]
    projected_bound: float
    final_runs_per_stream: int
    first_round_runs_per_input: int
    first_round_runs_per_input_structured: int
    families: Mapping[str, FamilyTally]
    coverage: SearchCoverage
    budget: BudgetAssessment

    def to_dict(self) -> dict:
        return {"rounds": self.rounds, "pairs_examined": self.pairs_examined,
                "selection_top": [r.to_dict() for r in self.selection_top],
                "projected_bound": self.projected_bound, "final_runs_per_stream": self.final_runs_per_stream,
                "first_round_runs_per_input": self.first_round_runs_per_input,
                "first_round_runs_per_input_structured": self.first_round_runs_per_input_structured,
                "families": {name: f.to_dict() for name, f in self.families.items()},
                "coverage": self.coverage.to_dict(), "budget": self.budget.to_dict()}


@dataclass(frozen=True)
class AuditResult:
    """Outcome of an audit (scipy-style result object).

    Attributes:
        verdict: ``"violation"`` (the lower bound exceeds the claim) or ``"no-violation-found"``.
        epsilon_claimed: the epsilon the deployment claims.
        epsilon_lower_bound: lower bound on the deployment's privacy loss, valid with
            probability ``confidence`` (``-inf`` when no event could be estimated).
        confidence: the confidence level of the bound.
        witness: the pair of streams, the event and its estimated probabilities (or None).
        samples: total runs requested from the target.
        seconds: wall-clock time the audit took.
        seed: the audit's seed.
        target: a description of the audited target.
        per_event: losses of the events examined in the last phase, with their intervals.
        search: the search summary (:class:`SearchSummary`; None: not recorded).
        method: the statistical method, in words.
        early_stop: early verdicts' record (:class:`audits.early_stop.EarlyVerdict`: the looks at the witness
            and the time to verdict); None when early verdicts were off (the JSON then has no such key).
    """

    verdict: str
    epsilon_claimed: float
    epsilon_lower_bound: float
    confidence: float
    witness: AuditWitness | None
    samples: int
    seconds: float
    seed: int
    target: str
    per_event: tuple = ()
    search: SearchSummary | None = None
    method: str = ""
    early_stop: Any = None

    @property
    def violation(self) -> bool:
        return self.verdict == VIOLATION

    def to_dict(self) -> dict:
        out = {
            "verdict": self.verdict,
            "epsilon_claimed": self.epsilon_claimed,
            "epsilon_lower_bound": self.epsilon_lower_bound,
            "confidence": self.confidence,
            "witness": None if self.witness is None else self.witness.to_dict(),
            "samples": self.samples,
            "seconds": self.seconds,
            "seed": self.seed,
            "target": self.target,
            "per_event": [e.to_dict() for e in self.per_event],
            "search": {} if self.search is None else self.search.to_dict(),
            "method": self.method,
        }
        if self.early_stop is not None:
            out["early_stop"] = self.early_stop.to_dict()
        return out

    def __repr__(self) -> str:
        return (f"AuditResult(verdict={self.verdict!r}, epsilon_claimed={self.epsilon_claimed:g}, "
                f"epsilon_lower_bound={self.epsilon_lower_bound:.4f}, confidence={self.confidence:g}, "
                f"samples={self.samples}, seconds={self.seconds:.1f})")


def without_timings(doc: dict) -> dict:
    """An audit's JSON (``AuditResult.to_dict()``) without what depends on where and how fast it ran:
    two runs with the same seed and sample budget agree on everything that is left."""
    out = {k: v for k, v in doc.items() if k not in TIMING_KEYS}
    if isinstance(out.get("search"), dict) and isinstance(out["search"].get("budget"), dict):
        budget = {k: v for k, v in out["search"]["budget"].items() if k not in BUDGET_TIMING_KEYS}
        out["search"] = {**out["search"], "budget": budget}
    if isinstance(out.get("early_stop"), dict):  # the time to verdict: its seconds are timing, its runs are not
        verdict_time = {k: v for k, v in out["early_stop"]["time_to_verdict"].items() if k != "seconds"}
        out["early_stop"] = {**out["early_stop"], "time_to_verdict": verdict_time}
    return out
