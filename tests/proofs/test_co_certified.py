"""proofs.co_certified: the certified BatchToCO split proved by Z3 and cvc5, mutants (selection_up) killed."""

import pytest

from proofs import co_certified
from tests.proofs._helpers import assert_lemma_passes


@pytest.mark.parametrize("lemma", co_certified.LEMMAS, ids=lambda lm: lm.key)
def test_lemma_proved_and_mutants_killed(lemma):
    assert_lemma_passes(lemma)


def test_registered():
    from proofs import registry

    assert "co_certified" in {lm.key for lm in registry.all_lemmas()}
