"""The mechanism side of Algorithm 1: outputs as +1/-1 and the wrappers (negation, purification).

The purification check is deterministic (generator seed 0): 40000 outputs of a certain success
purified with crossover 0.25 have a +1 frequency within 0.01 of 0.75 (0.01 is 4.6 standard errors).
"""

import numpy as np
import pytest

from gtm_core.errors import InvalidParameter
from gtm_core.evaluation import BernoulliMechanism, Negated, Purified, as_sign


def test_accepts_bools_and_numpy_values():
    assert as_sign(True) == 1 and as_sign(np.bool_(False)) == -1
    assert as_sign(np.int64(-1)) == -1 and as_sign(1.0) == 1


def test_wrappers():
    rng = np.random.default_rng(0)
    assert Negated(lambda x: 1)(None) == -1
    m = Purified(BernoulliMechanism(1.0, rng), 0.25, rng)
    out = m.batch(None, 40000)
    assert abs((out == 1).mean() - 0.75) < 0.01
    with pytest.raises(InvalidParameter):
        Purified(lambda x: 1, 0.6, rng)
