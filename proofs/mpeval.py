"""Re-evaluate a query at a solver model with mpmath (60 digits), in three-valued logic.

A mutant counts as killed only if its counterexample survives this independent
check: every hypothesis holds (up to 10^-45 relative slack: a model value may be
an algebraic number known to 80 digits) and the claim is *certainly* false (the
violation exceeds the slack). Auxiliary variables (square roots, exponentials,
logarithms) are recomputed from their definitions, never taken from the model.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import z3

DPS = 60
REL_TOL = mpmath.mpf(10) ** -45

TRUE, FALSE, UNSURE = "true", "false", "unsure"


def _and(vals):
    if any(v == FALSE for v in vals):
        return FALSE
    if all(v == TRUE for v in vals):
        return TRUE
    return UNSURE


def _or(vals):
    if any(v == TRUE for v in vals):
        return TRUE
    if all(v == FALSE for v in vals):
        return FALSE
    return UNSURE


def _not(v):
    return {TRUE: FALSE, FALSE: TRUE, UNSURE: UNSURE}[v]


def _cmp(kind, a, b):
    if isinstance(a, Fraction) and isinstance(b, Fraction):
        ok = {z3.Z3_OP_EQ: a == b, z3.Z3_OP_LE: a <= b, z3.Z3_OP_LT: a < b, z3.Z3_OP_GE: a >= b,
            z3.Z3_OP_GT: a > b}[kind]
        return TRUE if ok else FALSE
    diff = a - b
    tol = REL_TOL * max(1, abs(a), abs(b))
    if kind == z3.Z3_OP_EQ:
        if diff == 0:
            return TRUE
        return UNSURE if abs(diff) <= tol else FALSE
    if kind in (z3.Z3_OP_LE, z3.Z3_OP_LT):
        lt = diff < -tol
        gt = diff > tol
    else:  # GE, GT: a >= b  <=>  b <= a
        lt = diff > tol
        gt = diff < -tol
    if diff == 0:
        return TRUE if kind in (z3.Z3_OP_LE, z3.Z3_OP_GE) else FALSE
    if lt:
        return TRUE
    if gt:
        return FALSE
    return UNSURE


def to_mpf(v):
    if isinstance(v, Fraction):
        return mpmath.mpf(v.numerator) / v.denominator
    return mpmath.mpf(v)


class MPEvaluator:
    """Evaluate Z3 expressions at an assignment, with aux variables recomputed."""

    def __init__(self, values: dict, defs: list):
        # a rational model of a query without auxiliary (irrational) variables is re-evaluated exactly
        self.exact = not defs and all(
            isinstance(v, (int, Fraction)) and type(v).__name__ != "Approx" for v in values.values()
        )
        if self.exact:
            self.env = {k: Fraction(v) for k, v in values.items()}
            return
        with mpmath.workdps(DPS):
            self.env = {k: to_mpf(v) for k, v in values.items()}
            for var, kind, arg in defs:  # in definition order
                x = self.term(arg)
                fn = {"sqrt": mpmath.sqrt, "exp": mpmath.exp, "log": mpmath.log}[kind]
                if kind == "sqrt" and x < 0:
                    x = mpmath.mpf(0) if x > -REL_TOL * 10 else x
                self.env[var.decl().name()] = fn(x)

    def term(self, e):
        with mpmath.workdps(DPS):
            return self._term(e)

    def _term(self, e):
        if z3.is_int_value(e):
            return Fraction(e.as_long()) if self.exact else mpmath.mpf(e.as_long())
        if z3.is_rational_value(e):
            if self.exact:
                return Fraction(e.numerator_as_long(), e.denominator_as_long())
            return mpmath.mpf(e.numerator_as_long()) / e.denominator_as_long()
        if z3.is_const(e) and e.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            name = e.decl().name()
            if name not in self.env:
                raise KeyError(f"no value for variable {name}")
            return self.env[name]
        k = e.decl().kind()
        if k == z3.Z3_OP_ITE:
            c = self._truth(e.children()[0])
            if c == UNSURE:
                raise ValueError("ambiguous if-then-else condition")
            return self._term(e.children()[1] if c == TRUE else e.children()[2])
        a = [self._term(c) for c in e.children()]
        if k == z3.Z3_OP_ADD:
            return sum(a[1:], a[0]) if self.exact else mpmath.fsum(a)
        if k == z3.Z3_OP_SUB:
            out = a[0]
            for x in a[1:]:
                out -= x
            return out
        if k == z3.Z3_OP_MUL:
            out = Fraction(1) if self.exact else mpmath.mpf(1)
            for x in a:
                out *= x
            return out
        if k == z3.Z3_OP_DIV:
            return a[0] / a[1]
        if k == z3.Z3_OP_UMINUS:
            return -a[0]
        if k in (z3.Z3_OP_TO_REAL, z3.Z3_OP_TO_INT):
            if k == z3.Z3_OP_TO_REAL:
                return a[0]
            return Fraction(a[0].numerator // a[0].denominator) if self.exact else mpmath.floor(a[0])
        if k == z3.Z3_OP_POWER:
            return a[0] ** a[1]
        raise TypeError(f"unsupported term {e}")

    def truth(self, e) -> str:
        with mpmath.workdps(DPS):
            return self._truth(e)

    def _truth(self, e) -> str:
        if z3.is_true(e):
            return TRUE
        if z3.is_false(e):
            return FALSE
        k = e.decl().kind()
        ch = e.children()
        if k == z3.Z3_OP_AND:
            return _and([self._truth(c) for c in ch])
        if k == z3.Z3_OP_OR:
            return _or([self._truth(c) for c in ch])
        if k == z3.Z3_OP_NOT:
            return _not(self._truth(ch[0]))
        if k == z3.Z3_OP_IMPLIES:
            return _or([_not(self._truth(ch[0])), self._truth(ch[1])])
        if k == z3.Z3_OP_EQ and ch[0].sort() == z3.BoolSort():
            x, y = self._truth(ch[0]), self._truth(ch[1])
            if UNSURE in (x, y):
                return UNSURE
            return TRUE if x == y else FALSE
        if k in (z3.Z3_OP_LE, z3.Z3_OP_LT, z3.Z3_OP_GE, z3.Z3_OP_GT, z3.Z3_OP_EQ):
            return _cmp(k, self._term(ch[0]), self._term(ch[1]))
        raise TypeError(f"unsupported formula {e}")
