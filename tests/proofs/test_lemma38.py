"""proofs.lemma38: Lemma 38's budget identities, Lemma 39/41 inequalities, erratum E1 reproduced."""

import pytest

from proofs import lemma38
from tests.proofs._helpers import assert_lemma_passes


@pytest.mark.parametrize("lemma", lemma38.LEMMAS, ids=lambda lm: lm.key)
def test_lemma_proved_and_mutants_killed(lemma):
    assert_lemma_passes(lemma)


def test_registered():
    from proofs import registry

    keys = {lm.key for lm in registry.all_lemmas()}
    assert {"lemma38", "lemma39", "lemma41"} <= keys
