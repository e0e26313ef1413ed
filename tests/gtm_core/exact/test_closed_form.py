"""The guarded closed-form per-step evaluator (gtm_core/exact/closed_form.py) and StepEval's dispatch to it."""

from __future__ import annotations

from fractions import Fraction

import mpmath
from flint import arb

from gtm_core.exact import StepEval, StepModel, continuation_probability_finite_sum, to_arb, working_precision
from gtm_core.exact import closed_form as CF

HORIZON_STEP = dict(t=1, s=1, c=2, rho=13.20575428, eps=0.1, tau2=3.5341191128167417)
MU1 = 10.094785960940536


def test_sigma_is_exact_and_integer_orders_stay_exact():
    assert CF.exact_sigma(0.5, 0.5) == Fraction(4)
    assert CF.order_ball(Fraction(3) + 1 - 4, 100).is_exact()  # order 0: no rounding at the pole
    assert not CF.order_ball(Fraction(1, 3), 100).is_exact()


def test_tiny_count_mean_keeps_full_accuracy_where_stepeval_does_not():
    """c = 2, a ~ 1.6e-6 (the horizon example's halting step at p = 0.001, eta_1 = 100): the guarded
    evaluator keeps >= bits - 8 relative bits; the once-rounded path kept ~18 of 58."""
    model = StepModel(r=to_arb(0.001), **HORIZON_STEP)
    with working_precision(58):
        cont, halt = CF.ClosedFormStep(model, MU1, 58).probs(arb(100))
    assert halt.rel_accuracy_bits() >= 50 and cont.rel_accuracy_bits() >= 50
    ref = continuation_probability_finite_sum(1, 2, model.rho, mpmath.mpf(0.001), 0.1, model.tau2, MU1, 100, dps=40)
    with mpmath.workdps(40):
        assert abs(mpmath.mpf(cont.mid().str(30, radius=False)) - ref) < mpmath.mpf(10) ** -25


def test_ball_argument_is_enclosed_by_monotonicity():
    """A ball x: the result contains the values at both endpoints (continue non-decreasing in x)."""
    model = StepModel(r=to_arb(0.3), **HORIZON_STEP)
    ev = CF.ClosedFormStep(model, MU1, 80)
    with working_precision(80):
        x = arb(7) + arb(0, "1e-6")
        cont, halt = ev.probs(x)
        lo, hi = ev.probs(arb(x.lower())), ev.probs(arb(x.upper()))
    assert cont.contains(lo[0]) and cont.contains(hi[0]) and halt.contains(lo[1]) and halt.contains(hi[1])
    assert hi[0] > lo[0]  # the enclosure is not vacuous: continue really grows with x
    assert cont.rad() < arb("1e-6")


def test_dispatch_rule_small_shape_only():
    small = StepModel(r=to_arb(0.3), **HORIZON_STEP)
    large = StepModel(r=to_arb(0.3), **dict(HORIZON_STEP, c=1019))
    assert CF.use_closed_form(small) and not CF.use_closed_form(large)
    with working_precision(80):
        assert StepEval(small, to_arb(MU1), 80).closed is not None
        assert StepEval(large, to_arb(MU1), 80).closed is None


def test_wrong_tail_order_is_caught_by_the_finite_sum():
    """Mutant: the telescoped tail with order c - sigma instead of c + 1 - sigma disagrees with the
    positive finite sum at 1e-3 (the agreement test in property_tests would fail on it)."""
    model = StepModel(r=to_arb(0.3), **HORIZON_STEP)
    ev = CF.ClosedFormStep(model, MU1, 100)
    prec = 200
    sq = CF.exact_sigma(0.1, model.tau2)
    with working_precision(prec):
        lm = ev.log_mean(arb(8), prec)
        a = lm.exp()
        sigma = CF.order_ball(sq, prec)
        lnfac = arb(3).lgamma()
        good = CF.continue_direct(2, sigma, CF.order_ball(3 - sq, prec), a, lm, lnfac)
        bad = CF.continue_direct(2, sigma, CF.order_ball(2 - sq, prec), a, lm, lnfac)
        total = CF.continue_direct_sum(2, sigma, [CF.order_ball(k - sq, prec) for k in range(3)], a, lm)
    assert total.overlaps(good)
    assert abs(bad - total) > arb("1e-3") * total


def test_inexact_input_is_a_typed_error_naming_the_field_and_value():
    """A ball eps or tau2 (no exact rational sigma) or a non-positive one: InvalidParameter (a GTMError)
    naming the field and its value, never a bare ValueError; an exact step is accepted (companion)."""
    import pytest

    from gtm_core.errors import GTMError, InvalidParameter

    ball = arb(3.5) + arb(0, "1e-10")
    for field, value in (("tau2", ball), ("eps", arb(0.1) + arb(0, "1e-12")), ("eps", -0.1), ("tau2", 0.0)):
        model = StepModel(r=to_arb(0.3), **dict(HORIZON_STEP, **{field: value}))
        with pytest.raises(InvalidParameter, match=rf"^{field} must be an exact positive number") as exc:
            CF.ClosedFormStep(model, MU1, 58)
        assert isinstance(exc.value, GTMError) and repr(value) in str(exc.value)
    assert CF.ClosedFormStep(StepModel(r=to_arb(0.3), **HORIZON_STEP), MU1, 58).sigma_q == CF.exact_sigma(0.1, 3.5341191128167417)
