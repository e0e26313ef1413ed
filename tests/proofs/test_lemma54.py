"""proofs.lemma54: every check proved or certified, every mutant killed."""

import pytest

from proofs import lemma54
from tests.proofs._helpers import assert_lemma_passes


@pytest.mark.parametrize("lemma", lemma54.LEMMAS, ids=lambda lm: lm.key)
def test_lemma_proved_and_mutants_killed(lemma):
    assert_lemma_passes(lemma)
