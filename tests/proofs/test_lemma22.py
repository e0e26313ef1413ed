"""proofs.lemma22: a fast representative subset (unmarked) and the full check (slow)."""

import pytest

from proofs import lemma22
from proofs.core import prove_query, refute_query
from tests.proofs._helpers import assert_lemma_passes


def test_representative_steps_proved_and_mutants_killed():
    assert prove_query("_case_direct", lemma22._case_direct()).ok
    assert refute_query("_case_direct(k=0.9)", lemma22._case_direct(k=0.9)).ok
    assert prove_query("_failure", lemma22._failure()).ok
    assert refute_query("failure bound", lemma22._failure(bound="2/5")).ok


@pytest.mark.slow
@pytest.mark.parametrize("lemma", lemma22.LEMMAS, ids=lambda lm: lm.key)
def test_lemma_proved_and_mutants_killed(lemma):
    assert_lemma_passes(lemma)
