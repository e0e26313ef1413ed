"""The proof-check framework: queries, proof steps, lemma checks, mutants, runners.

Vocabulary
----------
* :class:`Query` - hypotheses and a claim over real (or integer) variables, written
  as Z3 expressions. Square roots, exponentials and logarithms enter only as
  auxiliary variables with a recorded definition (``s >= 0, s*s == x`` for a
  square root; ``u = e^x`` with bounds that are themselves certified facts).
* :class:`Check` - one proof step: a named query builder. It is **proved** iff
  (i) the hypotheses alone are satisfiable, shown by a model that mpmath
  re-checks (no vacuous proofs), and (ii) hypotheses and the negated claim are
  ``unsat`` in Z3 *and* in cvc5, each with a fresh solver and a fixed resource
  limit. ``unknown`` (resource limit, timeout) is a failure.
* :class:`Mutant` - a deliberately wrong variant of a step or statement. It is
  **killed** iff a solver returns ``sat`` and the model, re-evaluated at 60
  digits, satisfies the hypotheses and certainly violates the claim.
* :class:`LemmaCheck` - paper reference, statement, steps, the chain (the
  statement's hypotheses plus every step, instantiated, imply the statement's
  claim - itself a proved query), mutants, and errata.

Interval certificates (:mod:`proofs.interval`) are steps too: they expose the
same ``run()`` protocol.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import z3

from . import solvers
from .mpeval import FALSE, MPEvaluator


# ---------------------------------------------------------------------------
# Queries
# ---------------------------------------------------------------------------


class Q:
    """Builder of one query: variables, auxiliary definitions, hypotheses, claim."""

    def __init__(self):
        self.hyps: list = []
        self.definitional: list = []  # constraints that only define aux variables
        self.defs: list = []  # (var, kind, argument) in definition order
        self.facts: list = []  # (formula, why) certified foundation facts used as hypotheses

    # variables ---------------------------------------------------------
    @staticmethod
    def real(names: str):
        vs = [z3.Real(n) for n in names.split()]
        return vs[0] if len(vs) == 1 else vs

    @staticmethod
    def int(names: str):
        vs = [z3.Int(n) for n in names.split()]
        return vs[0] if len(vs) == 1 else vs

    def sqrt(self, name: str, radicand):
        """Auxiliary s = sqrt(radicand): s >= 0 and s*s == radicand (never z3.Sqrt)."""
        s = z3.Real(name)
        self.definitional += [s >= 0, s * s == radicand]
        self.defs.append((s, "sqrt", radicand))
        return s

    def exp(self, name: str, arg):
        """Auxiliary u = e^arg. Only the positivity u > 0 is added; other bounds via :meth:`fact`."""
        u = z3.Real(name)
        self.definitional.append(u > 0)
        self.defs.append((u, "exp", arg))
        return u

    def log(self, name: str, arg):
        """Auxiliary L = ln(arg). No constraint is added; bounds via :meth:`fact`."""
        L = z3.Real(name)
        self.defs.append((L, "log", arg))
        return L

    # formulas ----------------------------------------------------------
    def hyp(self, *fs):
        self.hyps.extend(fs)
        return self

    def fact(self, formula, why: str):
        """A certified foundation fact (e.g. monotonicity of exp) used as a hypothesis."""
        self.facts.append((formula, why))
        return self

    def query(self, claim) -> "Query":
        return Query(
            hyps=list(self.hyps) + [f for f, _ in self.facts],
            definitional=list(self.definitional),
            defs=list(self.defs),
            claim=claim,
            facts=[w for _, w in self.facts],
        )


@dataclass
class Query:
    hyps: list
    definitional: list
    defs: list
    claim: object
    facts: list = field(default_factory=list)

    def premises(self) -> list:
        return self.hyps + self.definitional

    def implication(self):
        """The step as one formula: premises => claim (valid once the step is proved)."""
        return z3.Implies(z3.And(*self.premises()), self.claim)

    def instance(self, **subs):
        """The step's implication with variables renamed/instantiated: ``instance(k1=k + 1)``.

        Sound for chains: a proved step is valid for all values of its variables.
        """
        imp = self.implication()
        pairs = []
        for name, term in subs.items():
            var = next((v for v in _free_consts(imp) if v.decl().name() == name), None)
            if var is None:
                raise KeyError(f"step has no variable {name!r}")
            pairs.append((var, term if z3.is_expr(term) else z3.RealVal(term)))
        return z3.substitute(imp, *pairs) if pairs else imp

    def text(self) -> str:
        return f"{' & '.join(map(str, self.hyps))}  =>  {self.claim}"


def _free_consts(e) -> list:
    seen, out, stack = set(), {}, [e]
    while stack:
        x = stack.pop()
        if x.get_id() in seen:
            continue
        seen.add(x.get_id())
        if z3.is_const(x) and x.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            out[x.decl().name()] = x
        stack.extend(x.children())
    return list(out.values())


# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------


@dataclass
class StepResult:
    name: str
    kind: str  # "solver" | "interval" | "chain" | "mutant" | "erratum"
    ok: bool
    method: str
    verdicts: list = field(default_factory=list)  # solvers.Verdict
    seconds: float = 0.0
    detail: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "kind": self.kind,
            "ok": self.ok,
            "method": self.method,
            "seconds": round(self.seconds, 6),
            "verdicts": [v.to_dict() for v in self.verdicts],
            **({"detail": self.detail} if self.detail else {}),
        }


def _check_model(query: Query, model: dict, *, want_claim_false: bool) -> tuple[bool, str]:
    """Re-evaluate a model at 60 digits: hypotheses hold; claim certainly false (if asked)."""
    try:
        ev = MPEvaluator(model, query.defs)
        for h in query.hyps:
            if ev.truth(h) == FALSE:
                return False, f"hypothesis fails at 60 digits: {h}"
        if want_claim_false:
            t = ev.truth(query.claim)
            if t != FALSE:
                return False, f"claim not certainly violated at 60 digits ({t})"
        return True, ""
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
        return False, f"model re-evaluation failed: {exc}"


def _model_summary(model: dict, limit: int = 12) -> dict:
    out = {}
    for k in sorted(model)[:limit]:
        v = model[k]
        out[k] = str(v) if not hasattr(v, "numerator") or v.denominator < 10**12 else f"~{float(v):.12g}"
    return out


def find_model(formulas, query: Query, *, want_claim_false: bool):
    """Ask Z3, then cvc5, for a model that survives the 60-digit re-check."""
    verdicts = []
    for run in (solvers.run_z3, solvers.run_cvc5):
        v = run(formulas, want_model=True)
        verdicts.append(v)
        if v.result == "sat":
            ok, why = _check_model(query, v.model, want_claim_false=want_claim_false)
            if ok:
                return True, verdicts, v.model, ""
            reason = why
        else:
            reason = f"{v.solver}: {v.result}"
    return False, verdicts, None, reason


def _aux_existence(query: Query) -> tuple[bool, list]:
    """Every square root / logarithm the query defines exists wherever its hypotheses hold.

    A chain's definitional constraints (s*s == x) would otherwise silently exclude the points
    where x < 0, making the chain vacuous there. Each condition is proved like a step (both solvers).
    """
    verdicts, ok = [], True
    for var, kind, arg in query.defs:
        if kind not in ("sqrt", "log"):
            continue
        others = [c for c in query.definitional if not any(v.get_id() == var.get_id() for v in _free_consts(c))]
        need = arg >= 0 if kind == "sqrt" else arg > 0
        neg = query.hyps + others + [z3.Not(need)]
        z, c = solvers.run_z3(neg), solvers.run_cvc5(neg)
        verdicts += [z, c]
        ok = ok and z.result == "unsat" and c.result == "unsat"
    return ok, verdicts


def prove_query(name: str, query: Query, kind: str = "solver") -> StepResult:
    """Proved iff hypotheses are satisfiable (checked model) and the negated claim is unsat in both solvers.

    For a chain, the auxiliary square roots and logarithms must also be shown to exist.
    """
    t0 = time.perf_counter()
    sat_ok, vac_verdicts, model, why = find_model(query.premises(), query, want_claim_false=False)
    verdicts = list(vac_verdicts)
    detail: dict = {"hypotheses_satisfiable": sat_ok}
    if sat_ok:
        detail["hypotheses_witness"] = _model_summary(model)
    else:
        detail["vacuity_failure"] = why
    neg = query.premises() + [z3.Not(query.claim)]
    z = solvers.run_z3(neg)
    c = solvers.run_cvc5(neg)
    verdicts += [z, c]
    ok = sat_ok and z.result == "unsat" and c.result == "unsat"
    detail["negated_claim"] = {"z3": z.result, "cvc5": c.result}
    if kind == "chain" and query.defs:
        exists, ev = _aux_existence(query)
        verdicts += ev
        detail["auxiliaries_exist"] = exists
        ok = ok and exists
    return StepResult(name, kind, ok, "z3+cvc5", verdicts, time.perf_counter() - t0, detail)


def refute_query(name: str, query: Query, kind: str = "mutant") -> StepResult:
    """Killed iff a solver finds hypotheses & not claim, and the model survives the 60-digit re-check."""
    t0 = time.perf_counter()
    ok, verdicts, model, why = find_model(query.premises() + [z3.Not(query.claim)], query, want_claim_false=True)
    detail = {"counterexample": _model_summary(model)} if ok else {"failure": why}
    return StepResult(name, kind, ok, "z3/cvc5 model + mpmath(60 digits)", verdicts, time.perf_counter() - t0, detail)


# ---------------------------------------------------------------------------
# Steps, mutants, errata, lemmas
# ---------------------------------------------------------------------------


@dataclass
class Check:
    """One proof step checked by the two solvers."""

    name: str
    description: str
    build: Callable[[], Query]
    in_chain: bool = True  # contribute the instantiated step to the chain query

    kind = "solver"

    def run(self) -> StepResult:
        return prove_query(self.name, self.build())


@dataclass
class Mutant:
    """A deliberately wrong variant; ``build`` returns the mutated query (or an object with ``refute()``)."""

    name: str
    description: str
    build: Callable[[], object]

    def run(self) -> StepResult:
        q = self.build()
        if isinstance(q, Query):
            return refute_query(self.name, q)
        return q.refute(self.name)  # interval-certificate mutants


@dataclass
class Erratum:
    """The paper's statement fails at a boundary: a counterexample query and a repaired statement."""

    name: str
    description: str
    counterexample: Callable[[], Query]  # the statement as printed: must be refuted
    repaired: Callable[[], Query]  # with the minimal extra hypothesis: must be proved
    fix: str

    def run(self) -> list[StepResult]:
        a = refute_query(f"{self.name}: as printed", self.counterexample(), kind="erratum")
        b = prove_query(f"{self.name}: repaired", self.repaired(), kind="erratum")
        return [a, b]


@dataclass
class LemmaCheck:
    """A paper statement with its proof steps, chain, mutants and errata."""

    key: str  # registry name, e.g. "lemma11.1"
    ref: str  # paper reference, e.g. "Lemma 11(1)"
    statement: str
    steps: list
    mutants: list
    statement_query: Callable[[], Query] | None = None  # hypotheses/claim of the statement (chain target)
    chain: Callable[[], Query] | None = None  # explicit chain query (default: built from steps)
    errata: list = field(default_factory=list)
    notes: str = ""

    def chain_query(self) -> Query | None:
        if self.chain is not None:
            return self.chain()
        if self.statement_query is None:
            return None
        st = self.statement_query()
        built = [s.build() for s in self.steps if isinstance(s, Check) and s.in_chain]
        # every step, instantiated at the statement's variables (valid once the step is proved),
        # plus the certified foundation facts the steps rely on
        instances = [b.implication() for b in built]
        facts = [f for b in built for f in b.hyps[len(b.hyps) - len(b.facts):]]
        return Query(
            hyps=st.hyps + facts + instances,
            definitional=st.definitional,
            defs=st.defs,
            claim=st.claim,
            facts=st.facts,
        )

    @property
    def methods(self) -> list[str]:
        m = []
        if any(isinstance(s, Check) for s in self.steps):
            m.append("z3+cvc5")
        if any(not isinstance(s, Check) for s in self.steps):
            m.append("arb interval branch-and-bound")
        return m


@dataclass
class LemmaResult:
    key: str
    ref: str
    status: str  # "proved" | "certified" | "failed"
    method: str
    steps: list
    chain: StepResult | None
    mutants: list
    errata: list
    seconds: float

    @property
    def mutants_killed(self) -> int:
        return sum(1 for m in self.mutants if m.ok)

    @property
    def ok(self) -> bool:
        return self.status in ("proved", "certified") and all(m.ok for m in self.mutants)

    def to_dict(self) -> dict:
        parts = self.steps + ([self.chain] if self.chain else []) + self.mutants + self.errata
        allv = [v for s in parts for v in s.verdicts]
        res = {}
        for v in allv:
            r = res.setdefault(v.solver, {"version": v.version, "queries": 0, "seconds": 0.0, "resource": 0,
                "verdicts": {}})
            r["queries"] += 1
            r["seconds"] = round(r["seconds"] + v.seconds, 6)
            r["resource"] += v.resource or 0
            r["verdicts"][v.result] = r["verdicts"].get(v.result, 0) + 1
        return {
            "lemma": self.key,
            "ref": self.ref,
            "status": self.status,
            "ok": self.ok,
            "method": self.method,
            "seconds": round(self.seconds, 6),
            "solvers": res,
            "mutants_total": len(self.mutants),
            "mutants_killed": self.mutants_killed,
            "steps": [s.to_dict() for s in self.steps],
            "chain": self.chain.to_dict() if self.chain else None,
            "mutants": [m.to_dict() for m in self.mutants],
            "errata": [e.to_dict() for e in self.errata],
        }


def run_lemma(lemma: LemmaCheck, progress: Callable[[str], None] | None = None) -> LemmaResult:
    """Run every step, the chain, every mutant and every erratum of one lemma."""
    t0 = time.perf_counter()
    say = progress or (lambda _msg: None)
    steps = []
    for s in lemma.steps:
        say(f"{lemma.key}: step {s.name}")
        steps.append(s.run())
    chain = None
    cq = lemma.chain_query()
    if cq is not None:
        say(f"{lemma.key}: chain")
        chain = prove_query(f"{lemma.key} chain", cq, kind="chain")
    mutants = []
    for m in lemma.mutants:
        say(f"{lemma.key}: mutant {m.name}")
        mutants.append(m.run())
    errata = []
    for e in lemma.errata:
        say(f"{lemma.key}: erratum {e.name}")
        errata.extend(e.run())
    good = all(s.ok for s in steps) and (chain is None or chain.ok) and all(e.ok for e in errata)
    if not good:
        status = "failed"
    elif any(s.kind == "interval" for s in steps):
        status = "certified"
    else:
        status = "proved"
    method = " + ".join(lemma.methods)
    return LemmaResult(lemma.key, lemma.ref, status, method, steps, chain, mutants, errata, time.perf_counter() - t0)
