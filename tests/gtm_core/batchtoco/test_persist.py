"""The BatchToCO state file: round trip, crash mid-step, permissions, corruption, JSON only."""

import json
import os

import pytest

from gtm_core.batchtoco import persist
from gtm_core.errors import StateError


def test_round_trip_and_permissions(tmp_path):
    f = tmp_path / "s.state"
    persist.save(f, {"x": 1, "pending": None})
    assert oct(os.stat(f).st_mode & 0o777) == "0o600"
    assert persist.load(f)["x"] == 1
    os.chmod(f, 0o644)
    with pytest.raises(StateError, match="group or others"):
        persist.load(f)


def test_crash_mid_step_fails_the_run(tmp_path):
    f = tmp_path / "s.state"
    persist.save(f, {"pending": 7})
    with pytest.raises(StateError, match="crashed during update 7"):
        persist.load(f)


def test_corruption_detected(tmp_path):
    f = tmp_path / "s.state"
    persist.save(f, {"x": 1, "pending": None})
    text = f.read_text()
    assert json.loads(text)["body"] == {"x": 1, "pending": None}  # a JSON document, never a pickle
    f.write_text(text.replace('"x":1', '"x":2'))
    os.chmod(f, 0o600)
    with pytest.raises(StateError, match="corrupted"):
        persist.load(f)
    f.write_text(text[: len(text) // 2])  # torn write
    with pytest.raises(StateError, match="corrupted"):
        persist.load(f)
    f.write_bytes(b"hello")
    with pytest.raises(StateError, match="corrupted"):
        persist.load(f)
    f.write_text(text.replace("gtm-batchtoco-state", "gtm-deployment-state"))
    with pytest.raises(StateError, match="not a BatchToCO state"):
        persist.load(f)
    f.write_bytes(b"\x80\x04\x95")  # a pickle header is not parsed
    with pytest.raises(StateError, match="not UTF-8"):
        persist.load(f)


def test_missing_state_is_a_state_error(tmp_path):
    with pytest.raises(StateError, match="not found"):
        persist.load(tmp_path / "absent.state")


def test_failed_run_is_terminal(tmp_path):
    f = tmp_path / "s.state"
    persist.save(f, {"pending": None, "failed": "update 4: evaluation budget exceeded"})
    with pytest.raises(StateError, match="failed at update 4"):
        persist.load(f)
