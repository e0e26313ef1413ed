"""Argument type checks live in gtm_core/validation.py only, checked on the code with :mod:`ast`.

Every module under gtm_core/, proofs/ and audits/ is parsed (nothing is imported) and searched for
a *hand-rolled type check*, which is either

(A) **the "number but not a bool" idiom**: a boolean expression (``and`` / ``or``) that tests one
    expression X both with ``isinstance(X, <types naming bool>)`` and with another
    ``isinstance(X, <types naming a number type>)`` (the scalar types of (B) but bool), e.g.
    ``isinstance(x, bool) or not isinstance(x, int)`` or
    ``isinstance(v, (int, float)) and not isinstance(v, bool)``; anywhere (a condition, a
    comprehension, a return);
(B) **a refused scalar type**: an ``if`` statement whose body raises and whose condition calls
    ``isinstance(X, T)`` with T naming a scalar type (bool, int, float, complex, Fraction,
    Decimal, a :mod:`numbers` ABC or a numpy scalar type), where the call names ``bool`` or sits
    under a ``not``: ``if not isinstance(n, int) or n < 0: raise ...``,
    ``if isinstance(x, bool): raise ...``.

Dispatch on a value's kind (``if isinstance(x, float): ...`` without a refusal), checks of
containers (``not isinstance(data, dict)``) and the predicates ``is_integer`` / ``is_real`` of
gtm_core.validation are not type checks in this sense. The same scanner runs on planted sources
first: each form above must be found, and the helper-based spelling must not be.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("gtm_core", "proofs", "audits")
HOME = "gtm_core/validation.py"

ALLOWED: set[str] = set()  # files exempt from the scan (none)

BOOL_TYPES = {"bool", "bool_"}
SCALAR_TYPES = BOOL_TYPES | {
    "int", "float", "complex", "Fraction", "Decimal",
    "Number", "Complex", "Real", "Rational", "Integral",  # numbers
    "number", "integer", "signedinteger", "unsignedinteger", "floating", "complexfloating",  # numpy
}
NUMBER_TYPES = SCALAR_TYPES - BOOL_TYPES


def _type_names(node: ast.expr) -> set[str]:
    """The names of the types in isinstance's second argument (``np.integer`` -> ``integer``)."""
    out = set()
    for e in node.elts if isinstance(node, ast.Tuple) else [node]:
        if isinstance(e, ast.Name):
            out.add(e.id)
        elif isinstance(e, ast.Attribute):
            out.add(e.attr)
    return out


def _isinstance(node: ast.AST) -> tuple[str, set[str]] | None:
    """(dump of X, type names) for a call ``isinstance(X, T)``, else None."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance"
            and len(node.args) == 2):
        return ast.dump(node.args[0]), _type_names(node.args[1])
    return None


def _calls(node: ast.AST, negated: bool = False):
    """Every isinstance call in an expression, with whether it sits under a ``not``."""
    found = _isinstance(node)
    if found:
        yield (*found, negated)
        return
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        negated = True
    for child in ast.iter_child_nodes(node):
        yield from _calls(child, negated)


def _bool_excluding(node: ast.BoolOp) -> bool:
    """Form (A): one operand tests X against bool, another tests the same X against a number type."""
    calls = [c for operand in node.values for c in _calls(operand)
             if not isinstance(operand, ast.BoolOp)]  # nested BoolOps are visited on their own
    return any(x == y and t & BOOL_TYPES and u & NUMBER_TYPES
               for i, (x, t, _) in enumerate(calls) for j, (y, u, _) in enumerate(calls) if i != j)


def _refuses_scalar(node: ast.If) -> bool:
    """Form (B): an ``if`` whose body raises, refusing a scalar type by isinstance."""
    if not any(isinstance(n, ast.Raise) for stmt in node.body for n in ast.walk(stmt)):
        return False
    return any(types & SCALAR_TYPES and (negated or types & BOOL_TYPES) for _, types, negated in _calls(node.test))


def hand_rolled_checks(source: str) -> list[int]:
    """The line numbers of the hand-rolled type checks in ``source`` (see the module docstring)."""
    lines = set()
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.BoolOp) and _bool_excluding(node)) or (
                isinstance(node, ast.If) and _refuses_scalar(node)):
            lines.add(node.lineno)
    return sorted(lines)


def _library_modules() -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


# --- the scanner has power: planted sources ---------------------------------------------------

PLANTED = {
    "bool or not int": "def f(n):\n    if isinstance(n, bool) or not isinstance(n, int) or n < 0:\n"
                       "        raise ValueError(n)\n",
    "numpy types, attribute on self": "def f(self):\n    if self.seed is not None and (isinstance(self.seed, bool)\n"
                                      "            or not isinstance(self.seed, (int, np.integer))):\n"
                                      "        raise InvalidParameter('seed')\n",
    "int and not bool, in a comprehension": ("ok = all(isinstance(v, (int, float)) and not isinstance(v, bool) "
                                             "for v in S)\n"),
    "not (number and not bool and range)": "def f(s):\n"
                                           "    if not (isinstance(s, (int, float)) and not isinstance(s, bool) and s > 0):\n"
                                           "        raise ValueError(s)\n",
    "negated numbers ABC, no bool": "def f(x):\n    if not isinstance(x, numbers.Real):\n        raise TypeError(x)\n",
    "refused bool": "def f(x):\n    if isinstance(x, bool):\n        raise InvalidParameter(x)\n    return x\n",
    "negated under all()": "def f(vs):\n    if not all(isinstance(v, int) for v in vs):\n        raise StreamError(vs)\n",
    "bool and int in one tuple, then a range": "def f(x):\n    if isinstance(x, (bool, np.bool_)) or not isinstance(x, int):\n"
                                                "        raise ValueError(x)\n",
    "a flag": "def f(flag):\n    if not isinstance(flag, (bool, np.bool_)):\n        raise InvalidParameter(flag)\n",
}

CLEAN = '''
from gtm_core.validation import check_int, check_real, is_integer, is_real

def f(n, x, data, v, code):
    n = check_int("n", n, minimum=0)
    x = check_real("x", x, low=0, low_open=True)
    if not isinstance(data, dict):          # a container: a shape check, not a scalar type
        raise ConfigError("data must be a table")
    if isinstance(v, bool) or v is None or isinstance(v, str):  # dispatch on bool and str, no number
        return v
    if isinstance(v, float):                # dispatch, nothing refused
        v = round(v)
    if isinstance(code, str):
        return code
    if not is_integer(code):                # the validation predicate, with its own message
        raise TargetError("not a string or integer")
    return [w for w in data if is_real(w)]
'''


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_scanner_finds_planted_checks(name):
    assert hand_rolled_checks(PLANTED[name]), f"the scanner missed a planted check ({name})"


def test_scanner_passes_helper_calls_predicates_dispatch_and_container_checks():
    assert hand_rolled_checks(CLEAN) == []


def test_scanner_reports_the_line_of_each_check():
    source = "x = 1\n" + PLANTED["bool or not int"] + PLANTED["refused bool"]
    assert hand_rolled_checks(source) == [3, 6]


# --- the library -------------------------------------------------------------------------------


def test_validation_module_is_the_home_of_the_idiom():
    """validation.py itself spells the checks out (the scanner sees them there)."""
    assert hand_rolled_checks((ROOT / HOME).read_text())


def test_allowlisted_files_exist():
    missing = sorted(p for p in ALLOWED if not (ROOT / p).is_file())
    assert not missing, f"allowlisted files that no longer exist: {missing}"


@pytest.mark.parametrize("path", [p for p in _library_modules() if p != HOME and p not in ALLOWED])
def test_no_hand_rolled_type_check_outside_validation(path):
    lines = hand_rolled_checks((ROOT / path).read_text())
    assert not lines, (f"{path}: hand-rolled type check(s) at line(s) {lines}; "
                       "use a check_* helper (or is_integer / is_real) of gtm_core.validation")
