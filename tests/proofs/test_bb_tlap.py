"""proofs.bb_tlap: every check proved or certified, every mutant killed, errata pinned."""

import pytest

from proofs import bb_tlap
from tests.proofs._helpers import assert_lemma_passes


@pytest.mark.parametrize("lemma", bb_tlap.LEMMAS, ids=lambda lm: lm.key)
def test_lemma_proved_and_mutants_killed(lemma):
    assert_lemma_passes(lemma)
