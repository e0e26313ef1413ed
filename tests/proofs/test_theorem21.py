"""proofs.theorem21: a fast representative subset (unmarked) and the full check (slow)."""

import pytest

from proofs import theorem21
from proofs.core import prove_query, refute_query
from tests.proofs._helpers import assert_lemma_passes


def test_representative_steps_proved_and_mutants_killed():
    assert prove_query("_privacy_identity", theorem21._privacy_identity()).ok
    assert refute_query("_privacy_identity(theta_shift=1)", theorem21._privacy_identity(theta_shift=1)).ok
    assert prove_query("_flip_identity", theorem21._flip_identity()).ok
    assert refute_query("_flip_identity(k=1.1)", theorem21._flip_identity(k=1.1)).ok


@pytest.mark.slow
@pytest.mark.parametrize("lemma", theorem21.LEMMAS, ids=lambda lm: lm.key)
def test_lemma_proved_and_mutants_killed(lemma):
    assert_lemma_passes(lemma)
