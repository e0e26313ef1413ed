"""The layering of the source tree, checked on the code, not by eye.

Parsed with :mod:`ast` (nothing is imported), for every module under gtm_core/, proofs/ and
audits/, including imports inside functions:

* ``gtm_core`` imports nothing from ``proofs`` or ``audits``; ``proofs`` nothing from ``audits``;
* no module imports a private name (``_x``) from another module (``from m import _x``, relative
  or absolute), and no module reads ``m._x`` of a module ``m`` it imported or ``C._x`` of a
  class or function ``C`` it imported (members of *instances* are not tracked);
* the module import graph has no cycle.

Each check runs per package, so a package that is done shows green while another one is still
being reshaped. An ``import a.b.c`` or ``from a.b import c`` counts as an edge to ``a.b.c`` (or
to ``a.b`` when ``c`` is not a module); a package ``__init__`` that re-exports its submodules is
an edge from the package to the submodule, and a submodule importing a sibling through the
package (``from . import x``) is an edge to the sibling only, so re-exporting packages do not
count as cycles by construction (Python resolves them the same way).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("gtm_core", "proofs", "audits")
FORBIDDEN = {"gtm_core": ("proofs", "audits"), "proofs": ("audits",), "audits": ()}


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the imported module (resolved, absolute)
    names: tuple[str, ...]  # names taken with "from target import ..."
    line: int


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            out[_module_name(path)] = path
    return out


MODULES = _modules()


def _is_package(name: str) -> bool:
    return MODULES.get(name, Path()).name == "__init__.py"


def _resolve(module: str, level: int, target: str | None) -> str:
    if level == 0:
        return target or ""
    base = module.split(".")
    if not _is_package(module):
        base = base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _imports(name: str, path: Path) -> list[Import]:
    tree = ast.parse(path.read_text(), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                out.append(Import(name, alias.name, (), node.lineno))
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(name, node.level, node.module)
            out.append(Import(name, target, tuple(a.name for a in node.names), node.lineno))
    return out


IMPORTS = {name: _imports(name, path) for name, path in MODULES.items()}


def _edges(imp: Import) -> list[str]:
    """Modules of the project an import statement depends on."""
    out = []
    if imp.names:
        for n in imp.names:
            sub = f"{imp.target}.{n}"
            if sub in MODULES:
                out.append(sub)  # "from pkg import submodule"
            elif imp.target in MODULES:
                out.append(imp.target)
    elif imp.target in MODULES:
        out.append(imp.target)
    return [m for m in out if m != imp.module]


def _package_of(module: str) -> str:
    return module.split(".")[0]


def _in(pkg: str):
    return sorted(m for m in MODULES if _package_of(m) == pkg)


# ---------------------------------------------------------------------------


@pytest.mark.parametrize("pkg", PACKAGES)
def test_layers(pkg):
    bad = [f"{i.module}:{i.line} imports {i.target}"
           for m in _in(pkg) for i in IMPORTS[m]
           if _package_of(i.target) in FORBIDDEN[pkg]]
    assert not bad, "\n".join(bad)


def _private_imports(module: str) -> list[str]:
    bad = []
    aliases = {}  # local name -> project module, for attribute access
    for i in IMPORTS[module]:
        if _package_of(i.target) not in PACKAGES:
            continue
        if i.names:
            for n in i.names:
                if f"{i.target}.{n}" in MODULES:
                    aliases[n] = f"{i.target}.{n}"
                elif n.startswith("_") and not n.startswith("__"):
                    bad.append(f"{module}:{i.line} imports {n} from {i.target}")
                else:
                    aliases[n] = f"{i.target}.{n}"  # a class or function: its _members are private too
        else:
            aliases[i.target.split(".")[0]] = i.target
    tree = ast.parse(MODULES[module].read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) or isinstance(node, ast.Import):
            for a in node.names:
                if a.asname and a.name in aliases:
                    aliases[a.asname] = aliases[a.name]
                elif a.asname:
                    target = _resolve(module, getattr(node, "level", 0), getattr(node, "module", None))
                    sub = f"{target}.{a.name}" if isinstance(node, ast.ImportFrom) else a.name
                    if sub in MODULES:
                        aliases[a.asname] = sub
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            bad.append(f"{module}:{node.lineno} reads {node.value.id}.{node.attr} of {aliases[node.value.id]}")
    return bad


@pytest.mark.parametrize("pkg", PACKAGES)
def test_no_private_names_across_modules(pkg):
    bad = [b for m in _in(pkg) for b in _private_imports(m)]
    assert not bad, "\n".join(bad)


def _graph() -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(MODULES)
    for m, imps in IMPORTS.items():
        for i in imps:
            for target in _edges(i):
                g.add_edge(m, target)
    return g


@pytest.mark.parametrize("pkg", PACKAGES)
def test_no_import_cycles(pkg):
    g = _graph()
    cycles = [c for c in nx.simple_cycles(g) if any(_package_of(m) == pkg for m in c)]
    assert not cycles, "\n".join(" -> ".join(c + [c[0]]) for c in cycles[:20])


# ---------------------------------------------------------------------------
# the checker itself has power: it finds each kind of violation in a planted example


def test_checker_finds_planted_violations(tmp_path):
    src = {
        "gtm_core/__init__.py": "",
        "gtm_core/a.py": "from .b import _hidden\nfrom audits import x\n",
        "gtm_core/b.py": "def f():\n    from . import a\n    return a._secret\n",
        "audits/__init__.py": "",
        "audits/x.py": "",
        "proofs/__init__.py": "",
    }
    for rel, text in src.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    global ROOT, MODULES, IMPORTS
    saved = ROOT, MODULES, IMPORTS
    try:
        ROOT = tmp_path
        MODULES = _modules()
        IMPORTS = {n: _imports(n, p) for n, p in MODULES.items()}
        with pytest.raises(AssertionError, match="imports audits"):
            test_layers("gtm_core")
        with pytest.raises(AssertionError, match="imports _hidden from gtm_core.b"):
            test_no_private_names_across_modules("gtm_core")
        with pytest.raises(AssertionError, match=r"reads a\._secret"):
            test_no_private_names_across_modules("gtm_core")
        with pytest.raises(AssertionError, match="gtm_core.a -> gtm_core.b -> gtm_core.a|gtm_core.b -> gtm_core.a"):
            test_no_import_cycles("gtm_core")
    finally:
        ROOT, MODULES, IMPORTS = saved
