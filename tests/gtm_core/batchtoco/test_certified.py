"""The certified variant: configuration, budget split spending eps, driver, horizon refusal, adaptive streams."""

import numpy as np
import pytest

from gtm_core.batchtoco import certified as C
from gtm_core.batchtoco.driver import run_stream
from gtm_core.batchtoco.errors import StreamError
from gtm_core.batchtoco.params import COConfig
from gtm_core.batchtoco.problems import make_problem
from gtm_core.batchtoco.streams import ADAPTIVE, adaptive_stream, synthetic_stream
from gtm_core.errors import InvalidParameter


def test_certified_fields_refused_with_literal_and_horizon_required():
    with pytest.raises(InvalidParameter, match="only used by variant"):
        COConfig(levels=3)
    with pytest.raises(InvalidParameter, match="horizon is required"):
        COConfig(variant="certified")
    with pytest.raises(InvalidParameter, match="gtm_share"):
        COConfig(variant="certified", horizon=10, gtm_share=1.5)
    assert COConfig.from_dict({"epsilon": 0.9, "variant": "certified", "horizon": 100}).horizon == 100


def test_split_spends_all_of_epsilon():
    s = C.certified_split(COConfig(variant="certified", horizon=2000, k=2))
    assert s.total() <= 0.9
    assert s.total() > 0.9 * (1 - 1e-9)
    assert 2 * s.eps_q + s.eps_0 <= s.eps_selection
    assert s.first_level >= 2 and s.levels >= 1


def test_driver_runs_and_refuses_updates_beyond_the_horizon():
    cfg = COConfig(variant="certified", horizon=300, k=2, seed=1)
    st = synthetic_stream(16, 301, 0)
    prob = make_problem("coverage", 16, 2)
    recs = run_stream(cfg, prob, st.edges[:300], np.random.default_rng(0))
    assert len(recs) == 300
    with pytest.raises(StreamError, match="beyond the planned horizon"):
        run_stream(cfg, prob, st.edges, np.random.default_rng(0))


@pytest.mark.parametrize("name", ADAPTIVE)
def test_adaptive_streams_are_seeded_and_valid(name):
    a, b = adaptive_stream(name, 3000, 4), adaptive_stream(name, 3000, 4)
    assert a.edges == b.edges and len(a) == 3000
    assert adaptive_stream(name, 3000, 5).edges != a.edges
