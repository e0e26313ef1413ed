"""The source tree passes ``ruff check`` with the rules configured in pyproject.toml ([tool.ruff]).

The companion test runs the same command, with the same configuration, on a planted file carrying an
unused import and a too-long line, and checks that both are reported: a lint run that reports nothing
because it checked nothing (wrong paths, a configuration that selects no rules) fails there.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PATHS = ("gtm_core", "audits", "proofs", "tests", "benchmarks", "property_tests")


def _ruff(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise",
                           "--config", str(ROOT / "pyproject.toml"), *args],
                          cwd=cwd, capture_output=True, text=True, timeout=300)


def test_source_tree_has_no_lint_findings():
    r = _ruff(*PATHS)
    assert r.returncode == 0, f"ruff check found problems:\n{r.stdout}{r.stderr}"


def test_lint_flags_a_planted_unused_import_and_long_line(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text("import os\n\nX = '" + "x" * 140 + "'\n")
    r = _ruff(str(planted), cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "F401" in r.stdout and "E501" in r.stdout, r.stdout
