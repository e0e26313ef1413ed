"""The audit's result values (audits.audit_results): frozen, and their JSON form."""

import dataclasses
import math

import pytest

from audits.audit_results import (AuditResult, BudgetAssessment, FamilyTally, RankedPair, SearchCoverage,
                                  SearchSummary, without_timings)


def test_family_tally_counts_proposed_scored_and_the_best_score():
    tally = FamilyTally().with_proposed().with_proposed()
    tally = tally.with_score(1, 0.5, first_time=True).with_score(2, 0.2, first_time=False)
    assert (tally.proposed, tally.scored, tally.last_round, tally.best_score) == (2, 1, 2, 0.5)
    assert tally.to_dict() == {"proposed": 2, "scored": 1, "last_round": 2, "best_score": 0.5, "not_visited": 1}
    assert list(FamilyTally().to_dict()) == ["proposed", "scored", "last_round", "best_score", "not_visited"]
    assert FamilyTally().to_dict()["best_score"] is None  # -inf before any pair was scored
    with pytest.raises(dataclasses.FrozenInstanceError):
        tally.scored = 3


def test_coverage_json():
    assert SearchCoverage().to_dict() == {}
    only_skipped = SearchCoverage().with_skipped("2 proposed pairs never sampled", "budget")
    assert only_skipped.to_dict() == {"skipped": [{"region": "2 proposed pairs never sampled", "reason": "budget"}]}
    cov = SearchCoverage({"lengths": [1, 2]}).with_skipped("a", "b")
    assert list(cov.to_dict()) == ["lengths", "skipped"]


def _summary() -> SearchSummary:
    budget = BudgetAssessment(seconds=None, max_samples=4000, samples_used=3900, seconds_used=0.5,
                              time_share_used=None, final_runs_per_input=900, best_reachable_bound=math.log(2),
                              meaningful=False, warning="budget too small")
    return SearchSummary(rounds=2, pairs_examined=10, selection_top=(RankedPair(0.3, "halt=1", {"p": [0.1]}),),
                         projected_bound=0.3, final_runs_per_stream=901, first_round_runs_per_input=50,
                         first_round_runs_per_input_structured=100, families={"grid": FamilyTally(3, 3, 2, 0.3)},
                         coverage=SearchCoverage(), budget=budget)


def test_search_summary_json_keys_in_order():
    d = _summary().to_dict()
    assert list(d) == ["rounds", "pairs_examined", "selection_top", "projected_bound", "final_runs_per_stream",
                       "first_round_runs_per_input", "first_round_runs_per_input_structured", "families",
                       "coverage", "budget"]
    assert d["selection_top"] == [{"score": 0.3, "event": "halt=1", "pair": {"p": [0.1]}}]
    assert list(d["budget"]) == ["seconds", "max_samples", "samples_used", "seconds_used", "time_share_used",
                                 "final_runs_per_input", "best_reachable_bound", "meaningful", "warning", "stopped"]


def test_without_timings_drops_where_and_how_fast():
    result = AuditResult(verdict="no-violation-found", epsilon_claimed=1.0, epsilon_lower_bound=0.2, confidence=0.95,
                         witness=None, samples=3900, seconds=1.5, seed=0, target="t", search=_summary())
    doc = {**result.to_dict(), "execution": {"workers": 2}}
    out = without_timings(doc)
    assert "seconds" not in out and "execution" not in out
    assert "seconds_used" not in out["search"]["budget"] and "time_share_used" not in out["search"]["budget"]
    assert out["search"]["budget"]["samples_used"] == 3900 and doc["search"]["budget"]["seconds_used"] == 0.5
    assert AuditResult(**{**dataclasses.asdict(result), "search": None}).to_dict()["search"] == {}
