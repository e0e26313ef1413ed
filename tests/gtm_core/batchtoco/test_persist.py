"""The BatchToCO state file: round trip, crash mid-step, permissions, corruption, JSON only, and the
deployment's guards (lock, link resolution, HMAC key file, generation; version-2 states refused)."""

import hashlib
import json
import os

import pytest

from gtm_core.batchtoco import persist
from gtm_core.deployment.state import canonical_body
from gtm_core.errors import StateError


def test_round_trip_and_permissions(tmp_path):
    f = tmp_path / "s.state"
    with persist.RunState.create(f, {"x": 1, "pending": None}) as run:
        assert run.generation == 1
        run.save({"x": 2, "pending": None})
        assert run.generation == 2
    for p in (f, tmp_path / "s.state.key"):
        assert oct(os.stat(p).st_mode & 0o777) == "0o600"
    with persist.RunState.open(f) as run:
        assert run.body["x"] == 2 and run.generation == 2
    os.chmod(f, 0o644)
    with pytest.raises(StateError, match="group or others"):
        persist.RunState.open(f)


def test_crash_mid_step_fails_the_run(tmp_path):
    f = tmp_path / "s.state"
    persist.RunState.create(f, {"pending": 7}).close()
    with pytest.raises(StateError, match="crashed during update 7"):
        persist.RunState.open(f)


def test_corruption_and_tampering_detected(tmp_path):
    f = tmp_path / "s.state"
    persist.RunState.create(f, {"x": 1, "pending": None}).close()
    text = f.read_text()
    assert json.loads(text)["body"]["x"] == 1  # a JSON document, never a pickle
    f.write_text(text.replace('"x":1', '"x":2'))
    os.chmod(f, 0o600)
    with pytest.raises(StateError, match="corrupted"):
        persist.RunState.open(f)
    doc = json.loads(text)  # an edit with a recomputed SHA-256: only the key holder can make the HMAC
    doc["body"]["x"] = 2
    doc["sha256"] = hashlib.sha256(canonical_body(doc["body"])).hexdigest()
    f.write_text(json.dumps(doc))
    with pytest.raises(StateError, match="tampered"):
        persist.RunState.open(f)
    f.write_text(text[: len(text) // 2])  # torn write
    with pytest.raises(StateError, match="corrupted"):
        persist.RunState.open(f)
    f.write_text(text.replace("gtm-batchtoco-state", "gtm-deployment-state"))
    with pytest.raises(StateError, match="not a BatchToCO state"):
        persist.RunState.open(f)


def test_missing_state_is_a_state_error(tmp_path):
    with pytest.raises(StateError, match="not found"):
        persist.RunState.open(tmp_path / "absent.state")


def test_failed_run_is_terminal(tmp_path):
    f = tmp_path / "s.state"
    persist.RunState.create(f, {"pending": None, "failed": "update 4: evaluation budget exceeded"}).close()
    with pytest.raises(StateError, match="failed at update 4"):
        persist.RunState.open(f)


def test_two_handles_on_one_state_are_refused_also_through_a_link(tmp_path):
    """The attack: two concurrent resumes of one state (both would release the next update)."""
    f = tmp_path / "s.state"
    link = tmp_path / "link.state"
    persist.RunState.create(f, {"pending": None}).close()
    link.symlink_to(f)
    with persist.RunState.open(f):
        for name in (f, link):
            with pytest.raises(StateError, match="in use"):
                persist.RunState.open(name)
        os.unlink(f"{f}.lock")  # deleting the lock file does not let a second handle in (the key is locked)
        with pytest.raises(StateError, match="in use"):
            persist.RunState.open(f)
    persist.RunState.open(f).close()


def test_a_symlinked_state_is_written_through_not_replaced(tmp_path):
    f = tmp_path / "real.state"
    link = tmp_path / "link.state"
    persist.RunState.create(f, {"pending": None, "x": 0}).close()
    link.symlink_to(f)
    with persist.RunState.open(link) as run:
        run.save({"pending": None, "x": 1})
    assert link.is_symlink()  # no regular-file fork left behind
    with persist.RunState.open(f) as run:
        assert run.body["x"] == 1


def test_create_refuses_an_existing_state_or_key(tmp_path):
    f = tmp_path / "s.state"
    persist.RunState.create(f, {"pending": None}).close()
    with pytest.raises(StateError, match="already exists"):
        persist.RunState.create(f, {"pending": None})
    os.unlink(f)
    with pytest.raises(StateError, match="key file .* already exists"):
        persist.RunState.create(f, {"pending": None})


def test_a_version_2_state_is_refused_in_one_line(tmp_path):
    f = tmp_path / "old.state"
    body = {"pending": None, "released": []}
    doc = {"format": "gtm-batchtoco-state", "version": 2, "body": body,
           "sha256": hashlib.sha256(canonical_body(body)).hexdigest()}
    f.write_text(json.dumps(doc))
    os.chmod(f, 0o600)
    with pytest.raises(StateError, match="version-2 BatchToCO state") as exc:
        persist.RunState.open(f)
    assert "\n" not in str(exc.value)
