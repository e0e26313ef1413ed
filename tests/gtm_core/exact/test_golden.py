"""Golden values: the closed-form engine against direct nested quadrature (T = 1 and T = 3).

GOLDEN_T1 / GOLDEN_T3 were computed by ``nested_gauss_legendre`` (tests/gtm_core/
exact_golden_helpers.py) at 40 digits (55-digit working precision, 30-node composite
Gauss-Legendre in eta_1 and, nested, in eta_2, with the Poisson CDF as a finite sum):
no Pareto closed form and no incomplete gamma function is involved.  The default test
checks the engine (closed form + adaptive quadrature, both modes) against them to 30
significant digits; the slow test recomputes the nested quadrature.
The plan (GOLDEN_PLAN) has small c on purpose, and a flipped (s = -1) second step.
"""

from __future__ import annotations

import mpmath
import pytest

from gtm_core.exact import transcript_distribution

from tests.gtm_core.exact.golden_helpers import GOLDEN_P1, GOLDEN_P3, GOLDEN_PLAN, nested_gauss_legendre

# (halt_t, cont_t) for t = 1..T
GOLDEN_T1 = [
    ("0.842294620968025723983211723265053746174445", "0.157705379031974276016788276734946253825555"),
]
GOLDEN_T3 = [
    ("0.842294620968025723983211723265053746174445", "0.157705379031974276016788276734946253825555"),
    ("0.125397785624572774205103496440998862109981", "0.0323075934074015018116847802939473917155743"),
    ("0.00307736716357429458849625854983318004113757", "0.0292302262438272072231885217441142116744368"),
]


def _check(dist, golden, digits):
    with mpmath.workdps(50):
        for t, (h, c) in enumerate(golden, start=1):
            for got, want in ((dist.halt[t - 1].value, mpmath.mpf(h)), (dist.cont[t - 1].value, mpmath.mpf(c))):
                assert abs(got - want) <= mpmath.mpf(10) ** (-digits) * abs(want), (t, got, want)


@pytest.mark.parametrize("p,golden", [(GOLDEN_P1, GOLDEN_T1), (GOLDEN_P3, GOLDEN_T3)], ids=["T1", "T3"])
def test_closed_form_engine_matches_nested_quadrature_to_30_digits(p, golden):
    _check(transcript_distribution(GOLDEN_PLAN, p, dps=35), golden, 30)


@pytest.mark.parametrize("p,golden", [(GOLDEN_P1, GOLDEN_T1), (GOLDEN_P3, GOLDEN_T3)], ids=["T1", "T3"])
def test_certified_enclosures_contain_the_golden_values(p, golden):
    d = transcript_distribution(GOLDEN_PLAN, p, dps=32, certified=True)
    _check(d, golden, 30)
    for prob in d.halt + d.cont:
        assert prob.significant_digits() >= 30


@pytest.mark.slow
@pytest.mark.parametrize("p,golden", [(GOLDEN_P1, GOLDEN_T1), (GOLDEN_P3, GOLDEN_T3)], ids=["T1", "T3"])
def test_nested_quadrature_reproduces_the_golden_values(p, golden):
    ref = nested_gauss_legendre(GOLDEN_PLAN, p, dps=40, nodes=30)
    with mpmath.workdps(50):
        for (h, c), (gh, gc) in zip(ref, golden):
            assert abs(h - mpmath.mpf(gh)) <= mpmath.mpf(10) ** -36 * mpmath.mpf(gh)
            assert abs(c - mpmath.mpf(gc)) <= mpmath.mpf(10) ** -36 * mpmath.mpf(gc)
