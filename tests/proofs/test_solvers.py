"""proofs.solvers: both back ends agree on small queries; cvc5 gets the Z3 expression translated."""

import z3

from proofs import solvers


def test_both_solvers_sat_and_unsat_with_resource_accounting():
    x, y = z3.Reals("x y")
    sat_q = [x * x == 2, x > 0, y == x + 1]
    unsat_q = [x * x < 0]
    for run in (solvers.run_z3, solvers.run_cvc5):
        v = run(sat_q, want_model=True)
        assert v.result == "sat" and v.resource is not None
        assert set(v.model) >= {"x", "y"}
        assert run(unsat_q).result == "unsat"


def test_integer_queries_use_the_mixed_logic():
    k = z3.Int("k")
    x = z3.Real("x")
    q = [z3.ToReal(k) <= x, x < z3.ToReal(k) + 1, x == z3.RealVal("5/2"), k != 2]
    assert solvers.run_z3(q).result == "unsat"
    assert solvers.run_cvc5(q).result == "unsat"


def test_untranslatable_query_is_unknown_not_unsat():
    f = z3.Function("f", z3.RealSort(), z3.RealSort())
    x = z3.Real("x")
    v = solvers.run_cvc5([f(x) > 0])
    assert v.result == "unknown" and v.reason.startswith("error")
