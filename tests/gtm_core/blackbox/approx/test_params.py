"""gtm_core.blackbox.approx.params: log*, the budget splits, the composition inequality (mpmath), errata."""

import mpmath
import pytest

from gtm_core.blackbox.approx import params as A
from gtm_core.errors import InvalidParameter


def test_log_star_and_tower_pins():
    assert [A.log_star(n) for n in (1, 2, 3, 4, 5, 16, 17, 65536, 65537)] == [0, 1, 2, 2, 3, 3, 4, 4, 5]
    assert [A.tower(k) for k in range(5)] == [1, 2, 4, 16, 65536]
    with pytest.raises(InvalidParameter, match="n"):
        A.log_star(0)


def test_level_budget_composes_back_to_the_input():
    e, b, d = A.level_budget("0.7", "0.1", "1e-6", 3, dps=50)
    assert 2 * 3 * e == mpmath.mpf("0.7") and 2 * 3 * b == mpmath.mpf("0.1") and 3 * d == mpmath.mpf("1e-6")


@pytest.mark.parametrize("eps", ["0.01", "0.5", "0.999"])
@pytest.mark.parametrize("delta", ["1e-12", "1e-3", "0.5", "0.999"])
@pytest.mark.parametrize("d", [1, 2, 3, 10])
def test_algorithm6_advanced_composition_at_most_eps(eps, delta, d):
    """Proof of Theorem G.4: d-fold advanced composition of (eps', delta') with slack delta/2 is (eps, delta)."""
    _b, ec, dc = A.highdim_budget(eps, "0.1", delta, d, dps=50)
    total = A.advanced_composition_epsilon(ec, d, mpmath.mpf(delta) / 2, dps=50)
    assert total < mpmath.mpf(eps)
    assert d * dc + mpmath.mpf(delta) / 2 == mpmath.mpf(delta)


def test_composition_needs_eps_below_one_region():
    """The proof uses eps < 1; at eps = 5 the same split overshoots for small log(2/delta) (why the range)."""
    _b, ec, _dc = A.highdim_budget(5, "0.1", "0.9", 1, dps=50)
    assert A.advanced_composition_epsilon(ec, 1, mpmath.mpf("0.45"), dps=50) > 5


def test_erratum_algorithm6_delta0_as_printed_is_below_theorem_g4():
    """Erratum A6-Delta0: Algorithm 6 line 5 prints 'delta log*|Y|' where Theorem G.4 has 8^{log*|Y|} log*|Y|."""
    args = ("0.5", "0.1", "1e-6", 2, 3, 160)
    repaired = A.highdim_margin(*args, dps=40)
    printed = A.highdim_margin_as_printed(*args, dps=40)
    assert printed < repaired and printed / repaired == mpmath.mpf("1e-6") / 8 ** 3


def test_constants_and_onedim_margin():
    c = A.ApproxConstants()
    assert c.C == 160 and c.gap_max_constant == 2 and c.is_proof_default
    assert not A.ApproxConstants(C=1).is_proof_default
    with pytest.raises(InvalidParameter, match="C"):
        A.ApproxConstants(C=0)
    # Theorem G.2: C 8^H (1 + H/eps log(8H^2/(beta delta))) at H = 1
    v = A.onedim_margin("0.5", "0.1", "0.01", 1, 160, dps=40)
    with mpmath.workdps(40):
        assert abs(v - 160 * 8 * (1 + 2 * mpmath.log(8 / mpmath.mpf("0.001")))) < mpmath.mpf("1e-30")


def test_gap_max_requirement_min_branch():
    big = A.gap_max_requirement(1, "0.1", 10**9, 4, 2, delta="1e-3", dps=30)
    small = A.gap_max_requirement(1, "0.1", 10, 4, 2, delta="1e-3", dps=30)
    with mpmath.workdps(30):
        assert abs(big - 2 * (1 + mpmath.log(1000) + mpmath.log(40))) < mpmath.mpf("1e-25")  # log(1/delta) branch
        assert abs(small - 2 * (1 + mpmath.log(10) + mpmath.log(40))) < mpmath.mpf("1e-25")


def test_privacy_parameters_name_what_privacy_does_not_depend_on():
    out = A.privacy_parameters(0.5, 1e-6, d=2)
    assert "C" in out["independent_of"] and "gap_max_constant" in out["independent_of"]
    with pytest.raises(InvalidParameter, match="delta"):
        A.privacy_parameters(0.5, 1.0, d=2)


@pytest.mark.parametrize("delta", ["1e-12", "1e-6", "0.1", "0.49"])
@pytest.mark.parametrize("d,H", [(1, 1), (2, 3), (3, 5)])
def test_erratum_theorem32_rendering_is_below_theorem_g4(delta, d, H):
    """Theorems 3.2/4.9 print sqrt(log(1/delta)) and log(d log*/(beta delta)); Theorem G.4 (proved, and what
    Algorithm 6 sets) has sqrt(2 log(2/delta)) and log(16 (d log*)^2/(beta delta)) - larger, so we use G.4."""
    a = A.highdim_margin("0.5", "0.1", delta, d, H, 1, dps=40)
    b = A.qco_margin_theorem32("0.5", "0.1", delta, d, H, 1, dps=40)
    assert a > b
