"""proofs.theorem23: a fast representative subset (unmarked) and the full check (slow)."""

import pytest

from proofs import theorem23
from proofs.core import prove_query, refute_query
from tests.proofs._helpers import assert_lemma_passes


def test_representative_steps_proved_and_mutants_killed():
    assert prove_query("_cancellation", theorem23._cancellation()).ok
    assert refute_query("_cancellation(ch_scale=1.1)", theorem23._cancellation(ch_scale=1.1)).ok
    assert prove_query("_expost_loss", theorem23._expost_loss()).ok
    assert refute_query("_expost_loss(two=1)", theorem23._expost_loss(two=1)).ok


@pytest.mark.slow
@pytest.mark.parametrize("lemma", theorem23.LEMMAS, ids=lambda lm: lm.key)
def test_lemma_proved_and_mutants_killed(lemma):
    assert_lemma_passes(lemma)
