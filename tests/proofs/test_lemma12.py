"""proofs.lemma12: a fast representative subset (unmarked) and the full check (slow)."""

import pytest

from proofs import lemma12
from proofs.core import prove_query, refute_query
from tests.proofs._helpers import assert_lemma_passes


def test_representative_steps_proved_and_mutants_killed():
    assert prove_query("_truncated_mean", lemma12._truncated_mean()).ok
    assert refute_query("_truncated_mean(sign=-1)", lemma12._truncated_mean(sign=-1)).ok
    assert prove_query("_exp_to_pareto", lemma12._exp_to_pareto()).ok
    assert refute_query("_exp_to_pareto(k=1.1)", lemma12._exp_to_pareto(k=1.1)).ok


@pytest.mark.slow
@pytest.mark.parametrize("lemma", lemma12.LEMMAS, ids=lambda lm: lm.key)
def test_lemma_proved_and_mutants_killed(lemma):
    assert_lemma_passes(lemma)
