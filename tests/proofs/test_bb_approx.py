"""proofs.bb_approx: every check proved or certified, every mutant killed."""

import pytest

from proofs import bb_approx
from tests.proofs._helpers import assert_lemma_passes


@pytest.mark.parametrize("lemma", bb_approx.LEMMAS, ids=lambda lm: lm.key)
def test_lemma_proved_and_mutants_killed(lemma):
    assert_lemma_passes(lemma)
