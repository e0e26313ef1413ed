"""proofs.mpeval: three-valued re-evaluation of solver models."""

from fractions import Fraction

import z3

from proofs.mpeval import FALSE, TRUE, UNSURE, MPEvaluator
from proofs.solvers import Approx


def test_exact_mode_decides_boundaries_exactly():
    x, y = z3.Reals("x y")
    ev = MPEvaluator({"x": Fraction(11, 5), "y": Fraction(1)}, [])
    assert ev.exact
    assert ev.truth(x == y * z3.RealVal("11/5")) == TRUE
    assert ev.truth(x < y * z3.RealVal("11/5")) == FALSE


def test_approximate_values_are_never_exact_and_equalities_are_unsure():
    x = z3.Real("x")
    ev = MPEvaluator({"x": Approx(141421356237309504880168872420969807856967187537694807317667973799, 10**65)}, [])
    assert not ev.exact
    # within 1e-45 relative: accepted as a hypothesis, never counted as a violation
    assert ev.truth(x * x == 2) in (TRUE, UNSURE)
    assert ev.truth(z3.Not(x * x == 2)) in (FALSE, UNSURE)
    assert ev.truth(x * x > 3) == FALSE


def test_aux_definitions_are_recomputed():
    x, s = z3.Reals("x s")
    ev = MPEvaluator({"x": Fraction(2), "s": Fraction(7)}, [(s, "sqrt", x)])
    assert ev.truth(s * s == x) in (TRUE, UNSURE)
    assert ev.truth(s > z3.RealVal("1.41")) == TRUE


def test_kleene_connectives():
    x = z3.Real("x")
    ev = MPEvaluator({"x": Fraction(1)}, [])
    assert ev.truth(z3.Implies(x > 2, x == 5)) == TRUE
    assert ev.truth(z3.And(x > 0, z3.Not(x > 0))) == FALSE
    assert ev.truth(z3.If(x > 0, x, -x) == 1) == TRUE
