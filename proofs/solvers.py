"""Solver back ends: Z3 (native) and cvc5 (base API, QF_NRA with cylindrical coverings).

Every query is written once, as Z3 Python expressions. Z3 runs it directly; for
cvc5 the expression tree is translated to cvc5 terms; for model re-checking it
is evaluated with mpmath at 60 digits in a three-valued logic (see
:mod:`proofs.mpeval`). A fresh solver is created for every query, with a fixed
resource limit (deterministic) and a wall-clock timeout (safety net).
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import time
from dataclasses import dataclass, field
from fractions import Fraction

import cvc5
import z3
from cvc5 import Kind

#: Z3 deterministic resource limit per query ("rlimit" units) and wall-clock timeout.
Z3_RLIMIT = 20_000_000
Z3_TIMEOUT_MS = 20_000
#: cvc5 deterministic resource limit per query and wall-clock timeout.
CVC5_RLIMIT = 2_000_000
CVC5_TIMEOUT_MS = 20_000


def z3_version() -> str:
    return z3.get_full_version()


def cvc5_version() -> str:
    return str(getattr(cvc5, "__version__", "unknown"))


@dataclass
class Verdict:
    """One solver run on one query."""

    solver: str
    version: str
    result: str  # "sat" | "unsat" | "unknown"
    seconds: float
    resource: int | None
    reason: str = ""
    model: dict = field(default_factory=dict, repr=False)  # name -> Fraction | int | ("approx", Fraction)

    def to_dict(self) -> dict:
        return {
            "solver": self.solver,
            "version": self.version,
            "result": self.result,
            "seconds": round(self.seconds, 6),
            "resource": self.resource,
            **({"reason": self.reason} if self.reason else {}),
        }


# ---------------------------------------------------------------------------
# Z3
# ---------------------------------------------------------------------------


class Approx(Fraction):
    """A rational approximation of an irrational (algebraic) model value: never re-checked exactly."""


def _z3_value(v):
    if z3.is_int_value(v):
        return v.as_long()
    if z3.is_rational_value(v):
        return Fraction(v.numerator_as_long(), v.denominator_as_long())
    if z3.is_algebraic_value(v):
        q = v.approx(80)
        return Approx(q.numerator_as_long(), q.denominator_as_long())
    raise TypeError(f"unsupported model value {v!r}")


_Z3_RLIMIT_SEEN = 0


def run_z3(formulas, *, rlimit: int | None = None, timeout_ms: int | None = None, want_model=False) -> Verdict:
    """Check satisfiability of the conjunction of ``formulas`` with a fresh Z3 solver."""
    rlimit = Z3_RLIMIT if rlimit is None else rlimit
    timeout_ms = Z3_TIMEOUT_MS if timeout_ms is None else timeout_ms
    s = z3.Solver()
    s.set("rlimit", rlimit)
    s.set("timeout", timeout_ms)
    s.add(*formulas)
    t0 = time.perf_counter()
    r = s.check()
    dt = time.perf_counter() - t0
    stats = s.statistics()
    used = None
    for k in stats.keys():
        if k == "rlimit count":  # cumulative over the Z3 context: report this query's share
            global _Z3_RLIMIT_SEEN
            total = int(stats.get_key_value(k))
            used, _Z3_RLIMIT_SEEN = max(total - _Z3_RLIMIT_SEEN, 0), total
    res = str(r)
    model = {}
    if res == "sat" and want_model:
        m = s.model()
        for c in _constants(formulas):
            model[c.decl().name()] = _z3_value(m.eval(c, model_completion=True))
    reason = s.reason_unknown() if res == "unknown" else ""
    return Verdict("z3", z3_version(), res, dt, used, reason, model)


# ---------------------------------------------------------------------------
# cvc5 (translation of Z3 expression trees)
# ---------------------------------------------------------------------------

_BIN = {
    z3.Z3_OP_LE: Kind.LEQ,
    z3.Z3_OP_GE: Kind.GEQ,
    z3.Z3_OP_LT: Kind.LT,
    z3.Z3_OP_GT: Kind.GT,
    z3.Z3_OP_EQ: Kind.EQUAL,
    z3.Z3_OP_IMPLIES: Kind.IMPLIES,
    z3.Z3_OP_DIV: Kind.DIVISION,
    z3.Z3_OP_IDIV: Kind.INTS_DIVISION,
    z3.Z3_OP_MOD: Kind.INTS_MODULUS,
}
_NARY = {
    z3.Z3_OP_AND: Kind.AND,
    z3.Z3_OP_OR: Kind.OR,
    z3.Z3_OP_ADD: Kind.ADD,
    z3.Z3_OP_MUL: Kind.MULT,
    z3.Z3_OP_SUB: Kind.SUB,
    z3.Z3_OP_DISTINCT: Kind.DISTINCT,
}


class _Cvc5Translator:
    def __init__(self, slv: cvc5.Solver):
        self.slv = slv
        self.consts: dict[str, cvc5.Term] = {}
        self.cache: dict[int, cvc5.Term] = {}

    def sort(self, s):
        if s == z3.RealSort():
            return self.slv.getRealSort()
        if s == z3.IntSort():
            return self.slv.getIntegerSort()
        if s == z3.BoolSort():
            return self.slv.getBooleanSort()
        raise TypeError(f"unsupported sort {s}")

    def __call__(self, e):
        key = e.get_id()
        if key in self.cache:
            return self.cache[key]
        out = self._tr(e)
        self.cache[key] = out
        return out

    def _tr(self, e):
        slv = self.slv
        if z3.is_true(e):
            return slv.mkTrue()
        if z3.is_false(e):
            return slv.mkFalse()
        if z3.is_int_value(e):
            return slv.mkInteger(e.as_long())
        if z3.is_rational_value(e):
            return slv.mkReal(e.numerator_as_long(), e.denominator_as_long())
        if z3.is_const(e) and e.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            name = e.decl().name()
            if name not in self.consts:
                self.consts[name] = slv.mkConst(self.sort(e.sort()), name)
            return self.consts[name]
        k = e.decl().kind()
        args = [self(c) for c in e.children()]
        if k == z3.Z3_OP_NOT:
            return slv.mkTerm(Kind.NOT, args[0])
        if k == z3.Z3_OP_UMINUS:
            return slv.mkTerm(Kind.NEG, args[0])
        if k == z3.Z3_OP_TO_REAL:
            return slv.mkTerm(Kind.TO_REAL, args[0])
        if k == z3.Z3_OP_TO_INT:
            return slv.mkTerm(Kind.TO_INTEGER, args[0])
        if k == z3.Z3_OP_ITE:
            return slv.mkTerm(Kind.ITE, *args)
        if k == z3.Z3_OP_POWER:
            exp = e.children()[1]
            if not (z3.is_int_value(exp) or z3.is_rational_value(exp)):
                raise TypeError("only constant integer powers are supported")
            n = int(str(exp))
            out = args[0]
            for _ in range(n - 1):
                out = slv.mkTerm(Kind.MULT, out, args[0])
            return out
        if k in _BIN:
            return slv.mkTerm(_BIN[k], *args)
        if k in _NARY:
            if len(args) == 1 and k in (z3.Z3_OP_AND, z3.Z3_OP_OR, z3.Z3_OP_ADD, z3.Z3_OP_MUL):
                return args[0]
            if not args and k == z3.Z3_OP_AND:
                return slv.mkTrue()
            return slv.mkTerm(_NARY[k], *args)
        raise TypeError(f"unsupported operator {e.decl()} in {e}")


def _constants(formulas) -> list:
    seen, out = set(), {}
    stack = list(formulas)
    while stack:
        e = stack.pop()
        if e.get_id() in seen:
            continue
        seen.add(e.get_id())
        if z3.is_const(e) and e.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            out[e.decl().name()] = e
        stack.extend(e.children())
    return list(out.values())


def _uses_ints(formulas) -> bool:
    seen = set()
    stack = list(formulas)
    while stack:
        e = stack.pop()
        if e.get_id() in seen:
            continue
        seen.add(e.get_id())
        if z3.is_const(e) and e.sort() == z3.IntSort() and e.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            return True
        stack.extend(e.children())
    return False


#: extra wall-clock grace before a cvc5 child process is killed (its own tlimit does not
#: interrupt every procedure, e.g. cylindrical coverings in the middle of a projection)
CVC5_HARD_GRACE_S = 5.0


def run_cvc5(formulas, *, rlimit: int | None = None, timeout_ms: int | None = None, want_model=False) -> Verdict:
    """Run :func:`_run_cvc5` in a forked child with a hard wall-clock limit (killed -> ``unknown``)."""
    timeout_ms = CVC5_TIMEOUT_MS if timeout_ms is None else timeout_ms
    if not hasattr(os, "fork"):
        return _run_cvc5(formulas, rlimit=rlimit, timeout_ms=timeout_ms, want_model=want_model)
    r, w = os.pipe()
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # child: solve, send the verdict, exit without cleanup
        try:
            os.close(r)
            v = _run_cvc5(formulas, rlimit=rlimit, timeout_ms=timeout_ms, want_model=want_model)
            data = pickle.dumps(v)
            with os.fdopen(w, "wb") as fh:
                fh.write(data)
        finally:
            os._exit(0)
    os.close(w)
    deadline = t0 + timeout_ms / 1000 + CVC5_HARD_GRACE_S
    chunks = []
    with os.fdopen(r, "rb") as fh:
        while True:
            left = deadline - time.perf_counter()
            ready, _, _ = select.select([fh], [], [], max(left, 0))
            if not ready:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return Verdict("cvc5", cvc5_version(), "unknown", time.perf_counter() - t0, None,
                    "hard timeout (killed)")
            chunk = os.read(fh.fileno(), 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    os.waitpid(pid, 0)
    try:
        return pickle.loads(b"".join(chunks))
    except Exception as exc:  # a crashed child is a failure, never a pass
        return Verdict("cvc5", cvc5_version(), "unknown", time.perf_counter() - t0, None,
            f"error: child failed ({exc})")


def _run_cvc5(formulas, *, rlimit: int | None = None, timeout_ms: int | None = None, want_model=False) -> Verdict:
    """Check satisfiability with a fresh cvc5 solver.

    Pure real queries use QF_NRA with cylindrical algebraic coverings (``nl-cov``);
    queries with integer variables use QF_NIRA with the incremental linearisation
    extension (coverings do not support integers).
    """
    rlimit = CVC5_RLIMIT if rlimit is None else rlimit
    timeout_ms = CVC5_TIMEOUT_MS if timeout_ms is None else timeout_ms
    slv = cvc5.Solver()
    slv.setOption("produce-models", "true")
    ints = _uses_ints(formulas)
    slv.setLogic("QF_NIRA" if ints else "QF_NRA")
    if not ints:
        slv.setOption("nl-cov", "true")
    slv.setOption("rlimit-per", str(rlimit))
    slv.setOption("tlimit-per", str(timeout_ms))
    tr = _Cvc5Translator(slv)
    t0 = time.perf_counter()
    try:
        for f in formulas:
            slv.assertFormula(tr(f))
        r = slv.checkSat()
    except (RuntimeError, TypeError) as exc:  # an untranslatable query is a failure, never a pass
        return Verdict("cvc5", cvc5_version(), "unknown", time.perf_counter() - t0, None, f"error: {exc}")
    dt = time.perf_counter() - t0
    if r.isSat():
        res = "sat"
    elif r.isUnsat():
        res = "unsat"
    else:
        res = "unknown"
    used = None
    try:
        used = int(slv.getStatistics()["resource::resourceUnitsUsed"]["value"])
    except Exception:  # statistics layout differs between versions
        used = None
    model = {}
    if res == "sat" and want_model:
        for name, c in tr.consts.items():
            v = slv.getValue(c)
            if v.isIntegerValue():
                model[name] = int(v.getIntegerValue())
            elif v.isRealValue():
                model[name] = Fraction(v.getRealValue())
            else:  # real algebraic number: midpoint of its isolating interval (an approximation)
                try:
                    lo = Fraction(v.getRealAlgebraicNumberLowerBound().getRealValue())
                    hi = Fraction(v.getRealAlgebraicNumberUpperBound().getRealValue())
                    mid = (lo + hi) / 2
                    model[name] = Approx(mid.numerator, mid.denominator)
                except Exception:  # leave it out: the re-check then fails, never passes
                    pass
    reason = str(r.getUnknownExplanation()) if res == "unknown" else ""
    return Verdict("cvc5", cvc5_version(), res, dt, used, reason, model)
