"""proofs.lemma11: every check proved, every mutant killed, and the item-3 erratum pinned."""

import pytest

from proofs import lemma11
from proofs.core import prove_query, refute_query
from tests.proofs._helpers import assert_lemma_passes


def test_item1_stepwise_proof_and_mutants():
    r = assert_lemma_passes(lemma11.LEMMA11_1)
    assert r.chain is not None and r.chain.ok
    assert [s.name for s in r.steps] == ["left bound", "right expansion", "m > r", "root bound", "rearrangement"]


def test_issue_mutant_discriminant_8_to_4_is_refuted():
    res = refute_query("disc4", lemma11._s_quadratic(disc=4))
    assert res.ok and res.detail["counterexample"]


def test_item3_erratum_uniform_constant_fails_without_additive_term():
    err = lemma11.LEMMA11_3.errata[0]
    printed = refute_query("as printed", err.counterexample())
    assert printed.ok, printed.detail
    cex = printed.detail["counterexample"]
    assert cex["c"] == "1"  # c = ceil(r^2) = 1 while 16 (A+B)/(gamma-1)^2 < 1
    assert prove_query("repaired", err.repaired()).ok


@pytest.mark.slow
@pytest.mark.parametrize("lemma", [lemma11.LEMMA11_2, lemma11.LEMMA11_3], ids=lambda lm: lm.key)
def test_items_2_3(lemma):
    assert_lemma_passes(lemma)
