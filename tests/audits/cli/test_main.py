"""`gtm --version`: the version and where the running code lives."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import audits
from gtm_core import __version__

ROOT = Path(audits.__file__).resolve().parents[1]


def test_version_names_the_checkout_it_runs_from():
    out = subprocess.run([sys.executable, "-m", "audits.cli", "--version"], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"gtm {__version__} from {ROOT} (source checkout)"


def test_version_of_an_installed_copy_says_so(tmp_path):
    # a copy of the packages without pyproject.toml next to them, as in site-packages
    import shutil

    for pkg in ("audits", "gtm_core", "proofs"):
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    out = subprocess.run([sys.executable, "-m", "audits.cli", "--version"], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"gtm {__version__} from {tmp_path.resolve()} (installed copy)"


def test_bare_gtm_prints_the_help_and_exits_0():
    # no verb is a request for help, not an error
    out = subprocess.run([sys.executable, "-m", "audits.cli"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("Usage: gtm [OPTIONS] COMMAND [ARGS]...") and out.stderr == ""
    for verb in ("plan", "prove", "exact", "audit", "certify", "bench", "deploy"):
        assert f"  {verb}" in out.stdout


def test_an_unknown_verb_is_still_a_one_line_usage_error():
    out = subprocess.run([sys.executable, "-m", "audits.cli", "bogus"], capture_output=True, text=True, cwd=ROOT,
                         timeout=120)
    assert out.returncode == 2 and out.stdout == "" and out.stderr.count("\n") == 1
