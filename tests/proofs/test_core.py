"""proofs.core: the checker must reject vacuous, false, unknown and spurious results (tests of the tester)."""

import z3

from proofs import solvers
from proofs.core import Check, LemmaCheck, Mutant, Q, prove_query, refute_query, run_lemma


def _true_step():
    q = Q()
    x = Q.real("x")
    q.hyp(x >= 0)
    return q.query(x * x >= 0)


def _false_step():
    q = Q()
    x = Q.real("x")
    q.hyp(x >= 0)
    return q.query(x >= 1)  # false at x = 1/2


def _vacuous_step():
    q = Q()
    x = Q.real("x")
    q.hyp(x > 1, x < 0)  # unsatisfiable hypotheses: every claim would be "unsat"
    return q.query(x == 42)


def test_true_step_is_proved_by_both_solvers_with_satisfiable_hypotheses():
    r = prove_query("true", _true_step())
    assert r.ok
    assert r.detail["hypotheses_satisfiable"]
    assert r.detail["negated_claim"] == {"z3": "unsat", "cvc5": "unsat"}
    assert {v.solver for v in r.verdicts} == {"z3", "cvc5"}
    assert all(v.version and v.seconds >= 0 for v in r.verdicts)


def test_vacuity_check_catches_unsatisfiable_hypotheses():
    r = prove_query("vacuous", _vacuous_step())
    assert r.detail["negated_claim"] == {"z3": "unsat", "cvc5": "unsat"}  # the solvers alone would "prove" it
    assert not r.detail["hypotheses_satisfiable"]
    assert not r.ok


def test_false_step_fails_and_is_refuted():
    assert not prove_query("false", _false_step()).ok
    k = refute_query("false", _false_step())
    assert k.ok and k.detail["counterexample"]


def test_true_claim_cannot_be_killed():
    assert not refute_query("true", _true_step()).ok


def test_unknown_is_failure(monkeypatch):
    monkeypatch.setattr(solvers, "Z3_RLIMIT", 1)
    q = Q()
    A, B, g, m = Q.real("A B g m")
    q.hyp(A > 0, B > 0, g > 1, g <= 2, m >= 0)
    s = q.sqrt("s", 2 * A + B)
    q.hyp(m * (g - 1) >= s + A)
    r = prove_query("starved", q.query((g - 1) * m * m >= A * m))
    z = [v for v in r.verdicts if v.solver == "z3"]
    assert any(v.result == "unknown" for v in z)
    assert not r.ok


def test_spurious_model_of_an_unconstrained_exponential_is_rejected():
    # e^x >= 1 + x is true, but with u = e^x as a bare auxiliary the solver finds u = 0.5 at x = 1;
    # the 60-digit re-check recomputes u = e and must refuse to count this as a kill.
    q = Q()
    x = Q.real("x")
    q.hyp(x >= 0, x <= 1)
    u = q.exp("u", x)
    r = refute_query("spurious", q.query(u >= 1 + x))
    assert not r.ok
    assert any(v.result == "sat" for v in r.verdicts)


def test_deliberately_wrong_lemma_fails_and_reports_the_failed_step():
    wrong = LemmaCheck(
        key="wrong",
        ref="a wrong lemma",
        statement="x >= 0 => x >= 1",
        steps=[Check("false step", "x >= 0 => x >= 1", _false_step)],
        statement_query=_false_step,
        mutants=[Mutant("m1", "still false", _false_step), Mutant("m2", "true claim", _true_step)],
    )
    r = run_lemma(wrong)
    assert r.status == "failed" and not r.ok
    assert not r.steps[0].ok
    assert r.chain.ok  # the chain only says "steps imply statement"; here the step itself is false
    assert r.mutants[0].ok and not r.mutants[1].ok  # a mutant that is really true survives
    d = r.to_dict()
    assert d["status"] == "failed" and d["mutants_killed"] == 1


def test_chain_query_instantiates_steps():
    good = LemmaCheck(
        key="good", ref="r", statement="s",
        steps=[Check("sq", "x^2 >= 0", _true_step)],
        statement_query=_true_step,
        mutants=[Mutant("m", "false", _false_step), Mutant("m2", "false", _false_step)],
    )
    cq = good.chain_query()
    assert any(z3.is_implies(h) for h in cq.hyps)
    r = run_lemma(good)
    assert r.ok and r.status == "proved"
