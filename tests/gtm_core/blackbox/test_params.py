"""Algorithm 4's parameter formulas: golden values (50 digits, >= 30 compared), float64 agreement,
closed forms from the proof of Theorem 2.7, and the Definition A.3 / Algorithm 4 erratum."""

import json
import math
from pathlib import Path

import mpmath
import pytest

from gtm_core.blackbox import params as P

GOLDEN = json.loads((Path(__file__).parents[2] / "golden" / "blackbox.json").read_text())
CASES = GOLDEN["cases"]


def _close30(x, ref: str):
    with mpmath.workdps(50):
        r = mpmath.mpf(ref)
        assert abs(x - r) <= abs(r) * mpmath.mpf(10) ** -30 + mpmath.mpf(10) ** -45


@pytest.mark.parametrize("c", CASES, ids=lambda c: f"eps{c['epsilon']}-beta{c['beta']}-M{c['M']}-d{c['d']}")
def test_golden_mpmath_30_digits_and_float64(c):
    e, b, M, d = c["epsilon"], c["beta"], c["M"], c["d"]
    e0 = P.eps0(e, dps=50)
    d0 = P.delta0(e, b, M, dps=50)
    R = P.tlap_radius(e0, d0, dps=50)
    for value, key in [(P.eta(b, dps=50), "eta"), (P.beta0(b, dps=50), "beta0"), (e0, "eps0"), (d0, "delta0"),
                       (P.utility_margin(e, b, M, dps=50), "Delta"), (R, "R"),
                       (P.tlap_radius_definition_a3(e0, d0, dps=50), "R_definition_a3"),
                       (P.tlap_normaliser(e0, R, dps=50), "tlap_normaliser")]:
        _close30(value, c[key])
    assert P.depth_margin(e, b, M, d, dps=50) == c["K"] == P.depth_margin(float(e), float(b), M, d)
    assert P.locality(R, c["K"], dps=50) == c["locality"]
    # float64 path: same source, relative error ~1e-15
    fe0, fd0 = P.eps0(float(e)), P.delta0(float(e), float(b), M)
    assert fd0 == pytest.approx(float(mpmath.mpf(c["delta0"])), rel=1e-13)
    assert P.tlap_radius(fe0, fd0) == pytest.approx(float(mpmath.mpf(c["R"])), rel=1e-13)
    assert P.utility_margin(float(e), float(b), M) == pytest.approx(float(mpmath.mpf(c["Delta"])), rel=1e-13)


@pytest.mark.parametrize("c", CASES, ids=lambda c: f"eps{c['epsilon']}-M{c['M']}")
def test_closed_forms_of_the_proof_of_theorem_2_7(c):
    """Independent oracle: R = (2/eps) log(1 + M/beta) when delta_0 is not capped, else
    R = (1/eps_0) log(2 e^{eps_0} - 1) <= 1 + log 2 / eps_0; K/(d+1) - Delta >= 1."""
    with mpmath.workdps(50):
        e, b, M, d = mpmath.mpf(c["epsilon"]), mpmath.mpf(c["beta"]), c["M"], c["d"]
        R = mpmath.mpf(c["R"])
        e0 = e / 2
        if b / 2 * mpmath.expm1(e0) / M < mpmath.mpf(1) / 4:
            closed = 2 / e * mpmath.log(1 + M / b)
        else:
            closed = mpmath.log(2 * mpmath.exp(e0) - 1) / e0
            assert closed <= 1 + mpmath.log(2) / e0
        assert abs(R - closed) < mpmath.mpf(10) ** -40
        assert c["K"] / mpmath.mpf(d + 1) - mpmath.mpf(c["Delta"]) >= 1


def test_erratum_definition_a3_radius_differs_from_algorithm_4():
    """ERRATUM (pinned): Definition A.3 prints R = (s/eps) log(1 + e^eps / (2 delta)); Algorithm 4 and
    Geng et al. (Thm 1) use log(1 + (e^eps - 1) / (2 delta)). Both are private (A.3's is larger, so its
    TLap is (eps, delta (1 - e^-eps))-DP); the paper's statements are inconsistent. The evaluator
    uses Algorithm 4's R, which makes TLap exactly (eps, delta)-DP."""
    e, delta = 1.0, 0.01
    Ra = P.tlap_radius_definition_a3(e, delta)
    R4 = P.tlap_radius(e, delta)
    assert Ra > R4
    # exact delta of the shifted-by-1 TLap = mass of [R - 1, R]: e^{-eps R}(e^eps - 1) / (2 (1 - e^{-eps R}))
    mass = lambda R: math.exp(-e * R) * math.expm1(e) / (2 * -math.expm1(-e * R))  # noqa: E731
    assert mass(R4) == pytest.approx(delta, rel=1e-12)
    assert mass(Ra) == pytest.approx(delta * (1 - math.exp(-e)), rel=1e-12)


def test_delta0_cap_and_bad_dps():
    assert P.delta0(20.0, 0.5, 2) == 0.25
    with pytest.raises(Exception, match="dps"):
        P.eta(0.1, dps=2)
