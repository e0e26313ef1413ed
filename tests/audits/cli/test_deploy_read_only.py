"""`gtm deploy status` on a read-only file system: a read-only view (the earlier status failed to
create the lock file it only needed for reading), the same status as a writable open, nothing written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gtm_core.deployment import Deployment
from gtm_core.deployment.state import read_only_status, read_state_body_unchecked
from gtm_core.errors import StateError
from gtm_core.evaluation import BernoulliMechanism
from gtm_core.reference import default_rng
from gtm_core import GTMConfig

ROOT = Path(__file__).resolve().parents[3]
CONFIG = GTMConfig.load(ROOT / "examples" / "default.toml")


@pytest.fixture
def deployed(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    with Deployment.create(d / "s", CONFIG, seed=3) as dep:
        dep.step(BernoulliMechanism(0.0, default_rng(1)[0]))
    os.unlink(d / "s.lock")
    return d


def test_status_on_a_read_only_mount(deployed):
    """A bind mount of the state's directory remounted read-only in a user namespace (unshare -rm)."""
    assert shutil.which("unshare"), "this test needs util-linux unshare (user namespaces)"
    d = str(deployed)
    script = (f"mount --bind {d} {d} && mount -o remount,ro,bind {d} && touch {d}/probe 2>/dev/null && exit 9; "
              f"{sys.executable} -m audits.cli deploy status {d}/s")
    out = subprocess.run(["unshare", "-rm", "sh", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         start_new_session=True)
    assert out.returncode == 0, (out.returncode, out.stdout, out.stderr)
    assert "running" in out.stdout and "steps committed: 1 of horizon 1000" in out.stdout
    assert "read-only view: nothing was recovered or written" in out.stdout
    assert sorted(os.listdir(d)) == ["s", "s.key"]  # no lock file, nothing written


def test_the_read_only_view_is_the_status(deployed):
    view = read_only_status(deployed / "s")
    with Deployment.open(deployed / "s") as dep:
        assert {k: v for k, v in view.items() if k not in ("certificate", "pending_step")} == dep.status_dict()
    assert view["certificate"] is None and view["pending_step"] is None


def test_the_read_only_view_waits_for_no_writer_and_recovers_nothing(deployed):
    with Deployment.open(deployed / "s"):
        with pytest.raises(StateError, match="in use"):  # a writer holds the deployment
            read_only_status(deployed / "s")
    doc = json.loads((deployed / "s").read_text())
    before = (deployed / "s").read_bytes()
    assert read_state_body_unchecked(deployed / "s")["pending_step"] is None
    view = read_only_status(deployed / "s")
    assert (deployed / "s").read_bytes() == before and doc["body"]["generation"] == view["generation"]


def test_the_status_text_names_a_pending_step(deployed):
    from audits.cli.deploy import status_text

    view = read_only_status(deployed / "s")
    text = status_text({**view, "pending_step": 2})
    assert "step 2 was pending" in text and "crashed_during_step" in text
    assert "pending" not in status_text({k: v for k, v in view.items() if k != "pending_step"})
