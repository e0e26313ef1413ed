"""Rigorous branch-and-bound interval certificates with python-flint ``arb`` balls.

A :class:`Certificate` proves ``f(x) >= 0`` (or ``<= 0``) for every ``x`` in a
closed interval ``[lo, hi]``. Each box is accepted by one of two tests:

1. *enclosure*: the ball evaluation of ``f`` over the whole box has the right sign;
2. *Taylor at the left end*: with ``f(a + s) = sum_{j<k} c_j s^j + C s^k`` where
   ``c_j`` are the Taylor coefficients at ``a`` and ``C`` encloses the ``k``-th
   coefficient over the box (Lagrange remainder), the lower bound
   ``c_0 + sum_j min(0, c_j) w^j + min(0, C) w^k`` is ``>= 0``. This is what
   certifies inequalities that *touch* zero at an endpoint (e.g. h(x) = x^2/2 + ...
   against x^2/(2(1+x)) at x = 0), where plain enclosures never have a sign.

Otherwise the box is bisected, up to ``max_depth``. Unbounded directions are
either compactified by the caller (a substitution onto a bounded interval) or
handed to a solver step. The result records the number of boxes and the depth.

A certificate's mutant is killed by a rigorous counterexample: a point where the
ball value has the wrong sign for certain, re-evaluated with mpmath at 60 digits.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import mpmath
from flint import arb, arb_series, ctx

from .core import StepResult

ctx.prec = 128
INV_E_BELOW = arb("0.36")  # < 1/e


def xlogx(v: arb) -> arb:
    """Enclosure of v ln v for a ball v (clipped to v >= 0), with 0 ln 0 = 0.

    On [0, 1/e] the map v -> v ln v is decreasing (derivative ln v + 1 < 0), so on
    a box [0, b] with b <= 0.36 < 1/e it ranges over [b ln b, 0].
    """
    v = v.nonnegative_part()
    if v.lower() > 0:
        return v * v.log()
    b = v.upper()
    if not (b <= INV_E_BELOW):
        return arb.nan()
    return (b * b.log()).union(arb(0))


@dataclass
class Certificate:
    """Branch-and-bound certificate of ``f >= 0`` (sense ">=") or ``f <= 0`` on [lo, hi]."""

    name: str
    description: str
    f_ball: Callable[[arb], arb]
    f_mp: Callable[[object], object]  # mpmath evaluation (60 digits) for counterexample re-checks
    lo: float
    hi: float
    sense: str = ">="
    f_series: Callable[[arb_series], arb_series] | None = None
    order: int = 3
    max_depth: int = 40
    max_boxes: int = 200_000

    kind = "interval"

    def _signed(self, y):
        return y if self.sense == ">=" else -y

    def _enclosure_ok(self, a: float, b: float) -> bool:
        box = arb(a).union(arb(b))
        y = self._signed(self.f_ball(box))
        return y.is_finite() and y >= 0

    def _taylor_ok(self, a: float, b: float) -> bool:
        if self.f_series is None:
            return False
        k = self.order
        try:
            at = self.f_series(arb_series([arb(a), 1], prec=k + 1))
            over = self.f_series(arb_series([arb(a).union(arb(b)), 1], prec=k + 1))
        except (ZeroDivisionError, ValueError):
            return False
        cs = [self._signed(c) for c in at.coeffs()] + [arb(0)] * (k + 1)
        over_c = [self._signed(c) for c in over.coeffs()] + [arb(0)] * (k + 1)
        w = arb(b) - arb(a)
        # try every truncation order m <= k: f(a+s) in sum_{j<m} c_j s^j + C_m s^m, s in [0, w]
        for m in range(1, k + 1):
            bound = cs[0]
            for j in range(1, m):
                bound = bound + (cs[j].min(arb(0))) * w**j
            bound = bound + over_c[m].min(arb(0)) * w**m
            if bound.is_finite() and bound >= 0:
                return True
        return False

    def run(self) -> StepResult:
        t0 = time.perf_counter()
        stack = [(float(self.lo), float(self.hi), 0)]
        boxes = 0
        deepest = 0
        by_taylor = 0
        failed_at = None
        while stack:
            a, b, d = stack.pop()
            boxes += 1
            deepest = max(deepest, d)
            if self._enclosure_ok(a, b):
                continue
            if self._taylor_ok(a, b):
                by_taylor += 1
                continue
            if d >= self.max_depth or boxes >= self.max_boxes:
                failed_at = (a, b)
                break
            m = (a + b) / 2
            stack.append((m, b, d + 1))
            stack.append((a, m, d + 1))
        ok = failed_at is None
        detail = {
            "claim": f"f(x) {self.sense} 0 for x in [{self.lo}, {self.hi}]",
            "boxes": boxes,
            "max_depth": deepest,
            "boxes_closed_by_taylor": by_taylor,
            "arb_precision_bits": ctx.prec,
        }
        if failed_at:
            detail["failed_box"] = list(failed_at)
        return StepResult(self.name, "interval", ok, "arb branch-and-bound", [], time.perf_counter() - t0, detail)

    def refute(self, name: str, samples: int = 4096) -> StepResult:
        """Find a point where the claim certainly fails (arb) and confirm it with mpmath at 60 digits."""
        t0 = time.perf_counter()
        lo, hi = float(self.lo), float(self.hi)
        for i in range(samples + 1):
            x = lo + (hi - lo) * i / samples
            y = self._signed(self.f_ball(arb(x)))
            if y.is_finite() and y < 0:
                with mpmath.workdps(60):
                    ym = self.f_mp(mpmath.mpf(x))
                    bad = (ym < 0) if self.sense == ">=" else (ym > 0)
                if bad:
                    return StepResult(
                        name, "mutant", True, "arb point evaluation + mpmath(60 digits)", [],
                        time.perf_counter() - t0,
                        {"counterexample": {"x": repr(x), "f(x)": mpmath.nstr(ym, 20)}},
                    )
        return StepResult(name, "mutant", False, "arb point evaluation", [], time.perf_counter() - t0,
                          {"failure": "no certain counterexample found"})
