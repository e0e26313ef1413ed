"""proofs.interval: branch-and-bound certificates prove true inequalities and refute false ones."""

import mpmath

from proofs.interval import Certificate, xlogx
from flint import arb


def test_touching_inequality_is_certified_with_box_count_and_depth():
    cert = Certificate(
        name="log(1+x) >= x - x^2/2", description="touches 0 at x = 0 to third order",
        f_ball=lambda x: (1 + x).log() - x + x * x / 2, f_series=lambda x: (1 + x).log() - x + x * x / 2,
        f_mp=lambda x: mpmath.log(1 + x) - x + x * x / 2, lo=0.0, hi=3.0, order=4,
    )
    r = cert.run()
    assert r.ok and r.kind == "interval"
    assert r.detail["boxes"] >= 1 and r.detail["max_depth"] >= 0


def test_false_inequality_is_not_certified_and_is_refuted():
    cert = Certificate(
        name="log(1+x) >= x - 0.4 x^2", description="false near 0",
        f_ball=lambda x: (1 + x).log() - x + 0.4 * x * x, f_series=lambda x: (1 + x).log() - x + 0.4 * x * x,
        f_mp=lambda x: mpmath.log(1 + x) - x + mpmath.mpf("0.4") * x * x, lo=0.0, hi=3.0, order=4, max_depth=20,
    )
    r = cert.run()
    assert not r.ok and "failed_box" in r.detail
    k = cert.refute("false")
    assert k.ok and float(k.detail["counterexample"]["f(x)"]) < 0


def test_xlogx_encloses_the_endpoint():
    b = xlogx(arb(0).union(arb("0.1")))  # the box [0, 0.1] touches v = 0
    for v in ("0.1", "0.05", "0.001"):
        assert b.contains(arb(v) * arb(v).log())
    assert b.contains(0)
    assert xlogx(arb(0.5)).overlaps(arb(0.5) * arb(0.5).log())
