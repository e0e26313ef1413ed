"""proofs.corollary30: a fast representative subset (unmarked) and the full check (slow)."""

import pytest

from proofs import corollary30
from proofs.core import prove_query, refute_query
from tests.proofs._helpers import assert_lemma_passes


def test_representative_steps_proved_and_mutants_killed():
    assert prove_query("_odds", corollary30._odds(3)).ok
    assert refute_query("case 3 quarter", corollary30._odds(3, quarter="11/40")).ok
    assert prove_query("_exponent", corollary30._exponent()).ok
    assert refute_query("_exponent(k=1.8)", corollary30._exponent(k=1.8)).ok


@pytest.mark.slow
@pytest.mark.parametrize("lemma", corollary30.LEMMAS, ids=lambda lm: lm.key)
def test_lemma_proved_and_mutants_killed(lemma):
    assert_lemma_passes(lemma)
