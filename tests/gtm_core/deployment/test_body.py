"""The deployment state body as a value (gtm_core.deployment.body)."""

from pathlib import Path

import numpy as np
import pytest

from gtm_core import GTMConfig
from gtm_core.deployment import Deployment
from gtm_core.deployment.body import Failure, StateBody
from gtm_core.deployment.state import read_state_body_unchecked
from gtm_core.errors import StateError
from gtm_core.evaluation import BernoulliMechanism

ROOT = Path(__file__).resolve().parents[3]
CONFIG = GTMConfig.load(ROOT / "examples" / "default.toml")


@pytest.fixture
def stored(tmp_path) -> dict:
    with Deployment.create(tmp_path / "s", CONFIG, seed=3) as dep:
        dep.step(BernoulliMechanism(1e-6, np.random.default_rng(0)))
    return read_state_body_unchecked(tmp_path / "s")


def test_a_stored_body_round_trips_to_the_same_json_object(stored):
    body = StateBody.from_dict(stored, "'s'")
    assert body.to_dict() == stored
    assert body.steps_done == 1 and body.transcript == (("continue", 1),) and body.failure is None


def test_unknown_and_optional_fields_are_kept_as_written(stored):
    older = {k: v for k, v in stored.items() if k != "gtm_version"}
    assert "gtm_version" not in StateBody.from_dict(older, "'s'").to_dict()
    newer = {**stored, "future_field": {"x": [1, 2]}}
    assert StateBody.from_dict(newer, "'s'").to_dict() == newer


def test_transitions(stored):
    body = StateBody.from_dict(stored, "'s'")
    pending = body.pending(2, body.eta1_bits)
    assert pending.pending_step == 2 and pending.steps_done == 1
    more = pending.committed(2, halted=False, evaluations=7)
    assert more.transcript == (("continue", 2),) and more.pending_step is None
    assert more.evaluations_total == body.evaluations_total + 7
    halted = more.committed(3, halted=True, evaluations=1)
    assert halted.status == "halted" and halted.halted_at == 3 and halted.transcript[-1] == ("halt", 1)
    failed = body.failed(2, "interrupted", "why", body.eta1_bits)
    assert failed.status == "failed" and failed.failure == Failure(2, "interrupted", "why")
    # every transition is a valid stored body again
    for b in (pending, more, halted, failed):
        assert StateBody.from_dict(b.to_dict(), "'s'") == b
    assert body.next_generation().generation == body.generation + 1


def test_a_body_is_checked_before_it_becomes_a_value(stored):
    with pytest.raises(StateError, match="inconsistent: unknown status"):
        StateBody.from_dict({**stored, "status": "paused"}, "'s'")
    with pytest.raises(StateError, match="transcript length"):
        StateBody.from_dict({**stored, "steps_done": 2}, "'s'")
