"""proofs.registry: selection, coverage of the paper, and (slow) the full run."""

import pytest

from gtm_core.errors import InvalidParameter
from proofs import registry
from proofs.core import Check
from proofs.interval import Certificate

REQUIRED = [
    "lemma10.3a", "lemma10.3b", "lemma10.4", "lemma10.5", "lemma11.1", "lemma11.2", "lemma11.3", "lemma12",
    "lemma15.3", "lemma17", "lemma19", "lemma20.1", "lemma20.2", "lemma20.base", "theorem21", "lemma22",
    "theorem23", "lemma24.1", "lemma24.2", "lemma24.3", "lemma27", "lemma28", "corollary30", "lemma33",
    "lemma54.1", "lemma54.2", "lemma55",
]


def test_registry_covers_the_issue_list_with_two_mutants_each():
    keys = [lm.key for lm in registry.all_lemmas()]
    assert len(keys) == len(set(keys))
    assert set(REQUIRED) <= set(keys)
    for lm in registry.all_lemmas():
        assert len(lm.mutants) >= 2, lm.key
        assert lm.steps and all(isinstance(s, (Check, Certificate)) for s in lm.steps)


def test_select_by_key_and_prefix():
    assert [lm.key for lm in registry.select(["lemma11.1"])] == ["lemma11.1"]
    assert [lm.key for lm in registry.select(["lemma10"])] == ["lemma10.3a", "lemma10.3b", "lemma10.4", "lemma10.5"]
    assert len(registry.select(None)) == len(registry.all_lemmas())


def test_unknown_lemma_is_a_typed_error_naming_it():
    with pytest.raises(InvalidParameter, match="lemma99"):
        registry.select(["lemma99"])


def test_lemma11_3_certifies_with_errata_reported():
    rep = registry.run(registry.select(["lemma11.3"]))
    d = rep.to_dict()
    assert d["ok"] and d["summary"]["errata"] == ["no additive constant"]
    assert {"z3", "cvc5"} <= set(d["lemmas"][0]["solvers"])


@pytest.mark.slow
def test_full_registry_run_is_green_and_within_budget():
    rep = registry.run(registry.select(None))
    d = rep.to_dict()
    assert d["ok"], [(r["lemma"], r["status"]) for r in d["lemmas"] if not r["ok"]]
    assert d["summary"]["mutants_killed"] == d["summary"]["mutants"]
    assert rep.seconds < 300
