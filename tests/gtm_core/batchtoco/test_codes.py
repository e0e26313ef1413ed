"""BatchToCO as a finite-output mechanism: codes are deterministic given the seed and finite."""

import pytest

from audits.power.batchtoco import variant
from gtm_core.batchtoco.codes import batchtoco_counts, batchtoco_output_code
from gtm_core.batchtoco.params import COConfig
from gtm_core.batchtoco.streams import EdgeStream
from gtm_core.errors import InvalidParameter

CONFIG = COConfig(epsilon=0.9, k=1, kappa=0.2)
STREAM = EdgeStream("tiny", ("a", "b", "c"), ((0, 1), (0, 2), (1, 2)))


def test_codes_are_reproducible_and_well_formed():
    a = batchtoco_output_code(CONFIG, STREAM, 5)
    assert a == batchtoco_output_code(CONFIG, STREAM, 5)
    assert len(a.split("|")) == 3 and set(a.split("|")) <= {"0", "1", "2"}
    assert batchtoco_output_code(CONFIG, STREAM, 5, summary="final") == a.split("|")[-1]


def test_counts_sum_to_n_for_every_variant():
    c = batchtoco_counts(CONFIG, STREAM, 30, 0)
    assert sum(c.values()) == 30
    nb = batchtoco_counts(CONFIG, STREAM.neighbour(2), 60, 0, implementation=variant("unnoised_score"),
                          summary="final")
    assert sum(nb.values()) == 60


def test_bad_summary():
    with pytest.raises(InvalidParameter, match="summary must be one of"):
        batchtoco_output_code(CONFIG, STREAM, 0, summary="all")
    with pytest.raises(InvalidParameter, match="n must be"):
        batchtoco_counts(CONFIG, STREAM, -1, 0)
