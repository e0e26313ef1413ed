"""Rules of the audits/ package checked on its code (parsed with ast, nothing imported):

* the library does not depend on the command line: only ``audits.cli`` modules import ``audits.cli``;
* modules that ship in the same wheel are imported, never feature-checked
  (no ``importlib.util.find_spec`` / ``importlib.import_module`` / ``except ImportError``);
* an ``except Exception`` either raises (a foreign error - a user's target, an OpenDP measurement -
  translated into a typed GTMError with its message) or says on its line why it may not
  (``# broad-except: <reason>``): a crashing certificate witness becomes a failed claim with its
  message, a failed benchmark cell is recorded and makes the run exit 1, a destructor must not raise.
  Nothing is swallowed silently.

Each rule has a companion showing that the check finds a planted violation.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AUDITS = ROOT / "audits"


def _modules():
    return sorted(AUDITS.rglob("*.py"))


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def cli_imports(source: str, *, in_cli: bool) -> list[int]:
    """Lines where a non-CLI module imports audits.cli (absolute or relative)."""
    if in_cli:
        return []
    bad = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if (node.level == 0 and (mod == "audits.cli" or mod.startswith("audits.cli."))) or \
                    (node.level > 0 and (mod == "cli" or mod.startswith("cli.") or
                                         (not mod and any(a.name == "cli" for a in node.names)))):
                bad.append(node.lineno)
        elif isinstance(node, ast.Import):
            if any(a.name == "audits.cli" or a.name.startswith("audits.cli.") for a in node.names):
                bad.append(node.lineno)
    return bad


def feature_checks(source: str) -> list[int]:
    """Lines that feature-check a module: find_spec / import_module calls, ``except ImportError``."""
    bad = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in ("find_spec", "import_module"):
            bad.append(node.lineno)
        if isinstance(node, ast.ExceptHandler) and node.type is not None:
            names = [n.id for n in ast.walk(node.type) if isinstance(n, ast.Name)]
            if {"ImportError", "ModuleNotFoundError"} & set(names):
                bad.append(node.lineno)
    return bad


def broad_excepts(source: str) -> list[int]:
    """Lines of bare / ``Exception`` handlers that neither raise nor give their reason."""
    lines = source.splitlines()
    bad = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ExceptHandler):
            broad = node.type is None or (isinstance(node.type, ast.Name)
                                          and node.type.id in ("Exception", "BaseException"))
            raises = any(isinstance(n, ast.Raise) for n in ast.walk(node))
            if broad and not raises and "# broad-except:" not in lines[node.lineno - 1]:
                bad.append(node.lineno)
    return bad


def test_library_does_not_import_the_cli():
    bad = [f"{_rel(p)}:{line}" for p in _modules()
           for line in cli_imports(p.read_text(), in_cli="cli" in p.relative_to(AUDITS).parts[:1])]
    assert not bad, bad


def test_no_feature_checks_for_modules_of_the_wheel():
    bad = [f"{_rel(p)}:{line}" for p in _modules() for line in feature_checks(p.read_text())
           if _rel(p) not in ("audits/integrations/opendp.py",  # opendp is an optional extra ([opendp])
                              "audits/execution.py",  # so is Dask ([dask]): ClusterError when missing
                              "audits/integrations/opendp_audit.py")]  # imports the user's module, by name
    assert not bad, bad


def test_broad_excepts_only_where_they_report():
    bad = [f"{_rel(p)}:{line}" for p in _modules() for line in broad_excepts(p.read_text())]
    assert not bad, bad


def test_the_checks_find_planted_violations():
    assert cli_imports("from .cli.common import write_json\n", in_cli=False) == [1]
    assert cli_imports("from audits.cli import main\n", in_cli=False) == [1]
    assert cli_imports("from . import cli\n", in_cli=False) == [1]
    assert cli_imports("from .cli.common import write_json\n", in_cli=True) == []
    assert feature_checks("import importlib.util\nok = importlib.util.find_spec('x')\n") == [2]
    assert feature_checks("try:\n    import x\nexcept ImportError:\n    x = None\n") == [3]
    assert broad_excepts("try:\n    f()\nexcept Exception:\n    pass\n") == [3]
    assert broad_excepts("try:\n    f()\nexcept Exception:\n    cleanup()\n    raise\n") == []
    assert broad_excepts("try:\n    f()\nexcept Exception:  # broad-except: a destructor\n    pass\n") == []
