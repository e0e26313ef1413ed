"""proofs.lemma24: every check proved or certified, every mutant killed."""

import pytest

from proofs import lemma24
from tests.proofs._helpers import assert_lemma_passes


@pytest.mark.parametrize("lemma", lemma24.LEMMAS, ids=lambda lm: lm.key)
def test_lemma_proved_and_mutants_killed(lemma):
    assert_lemma_passes(lemma)


def test_erratum_phi_one_half_breaks_the_equivalence():
    from proofs.core import prove_query, refute_query

    err = lemma24.LEMMA24_1.errata[0]
    cex = refute_query("as printed", err.counterexample())
    assert cex.ok and cex.detail["counterexample"]["phi"] == "1/2"
    assert prove_query("phi < 1/2", err.repaired()).ok


def test_erratum_corollary25_strict_slack_fails_at_delta_zero():
    from proofs.core import refute_query

    err = lemma24.LEMMA24_3.errata[0]
    cex = refute_query("as printed", err.counterexample())
    assert cex.ok and cex.detail["counterexample"]["delta"] == "0"
