"""proofs.bb_theorem27: every check proved or certified, every mutant killed, errata pinned."""

import pytest

from proofs import bb_theorem27
from tests.proofs._helpers import assert_lemma_passes


@pytest.mark.parametrize("lemma", bb_theorem27.LEMMAS, ids=lambda lm: lm.key)
def test_lemma_proved_and_mutants_killed(lemma):
    assert_lemma_passes(lemma)
