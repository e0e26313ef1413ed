"""Independent reference for the exact engine: direct nested quadrature (no Pareto closed form).

C_t = int f1(x) prod_{i<=t} [ int f2_i(y) g_i(s_i (mu1 - x + y)) dy ] dx,
H_t = int f1(x) prod_{i<t} [...] [ int f2_t(y) (1 - g_t(...)) dy ] dx,
with g_i from Lemma 15(1): the Poisson CDF F(c; lambda(z) r) (s=+1) or its complement
(s=-1), evaluated as the finite sum e^{-m} sum_{k<=c} m^k/k! (small c on purpose).
Each inner integral over eta_2 is an mpmath tanh-sinh quadrature (cached per node).
"""

from __future__ import annotations

from dataclasses import dataclass

import mpmath


@dataclass(frozen=True)
class ManualStep:
    t: int
    s: int
    c: int
    rho: float
    eps_t: float
    tau2: float


@dataclass(frozen=True)
class ManualPlan:
    """A duck-typed plan with hand-picked small parameters (fast nested quadrature)."""

    tau1: float
    mu1: float
    steps_: tuple[ManualStep, ...]

    @property
    def horizon(self) -> int:
        return len(self.steps_)

    def step(self, t: int) -> ManualStep:
        return self.steps_[t - 1]

    def claimed_loss(self, t: int, halted: bool) -> float:
        return 1 / self.tau1 + (2 / self.step(t).tau2 if halted else 0.0)


GOLDEN_PLAN = ManualPlan(
    tau1=1.5,
    mu1=2.25,
    steps_=(
        ManualStep(1, 1, 3, 9.5, 0.5, 2.0),
        ManualStep(2, -1, 4, 7.25, 0.375, 2.5),
        ManualStep(3, 1, 2, 6.0, 0.625, 1.75),
    ),
)
GOLDEN_P1 = ["0.3"]
GOLDEN_P3 = ["0.3", "0.625", "0.125"]


def nested_quadrature(plan, p, dps: int = 40):
    """[(halt_t, cont_t) for t = 1..T] by direct nested mpmath quadrature."""
    with mpmath.workdps(dps + 10):
        tau1, mu1 = mpmath.mpf(plan.tau1), mpmath.mpf(plan.mu1)
        T = len(p)
        ps = [mpmath.mpf(v) for v in p]

        cache: dict = {}

        def poisson_cdf(c, m):
            term = mpmath.exp(-m)
            total = term
            for k in range(1, c + 1):
                term = term * m / k
                total += term
            return total

        def inner(i, x):
            key = (i, x)
            if key not in cache:
                cache[key] = inner_uncached(i, x)
            return cache[key]

        def inner_uncached(i, x):
            st = plan.step(i + 1)
            s, c = st.s, st.c
            r = ps[i] if s == 1 else 1 - ps[i]
            rho, eps, tau2 = mpmath.mpf(st.rho), mpmath.mpf(st.eps_t), mpmath.mpf(st.tau2)

            def g(y):
                z = s * (mu1 - x + y)
                m = rho * mpmath.exp(eps * z) * r
                F = poisson_cdf(c, m)  # = Q(c+1, m), the Poisson CDF as a finite sum
                cont = F if s == 1 else 1 - F
                return cont * mpmath.exp(-y / tau2) / tau2

            # break points where the count mean crosses c
            yb = x - mu1 + s * mpmath.log((c + 1) / (rho * r)) / eps
            pts = [0] + ([yb] if yb > 0 else []) + [mpmath.inf]
            cont = mpmath.quad(g, pts)
            return cont, 1 - cont

        def integrand(x, t, halted):
            val = mpmath.exp(-x / tau1) / tau1
            for i in range(t):
                cont, halt = inner(i, x)
                val *= halt if (halted and i == t - 1) else cont
            return val

        out = []
        xb = [0]
        for i in range(T):
            st = plan.step(i + 1)
            r = ps[i] if st.s == 1 else 1 - ps[i]
            xt = st.s * (mpmath.log(mpmath.mpf(st.rho) * r) + st.s * mpmath.mpf(st.eps_t) * mu1
                         - mpmath.log(st.c + 1)) / mpmath.mpf(st.eps_t)
            if xt > 0:
                xb.append(xt)
        xb = sorted(xb) + [mpmath.inf]
        for t in range(1, T + 1):
            h = mpmath.quad(lambda x: integrand(x, t, True), xb)
            c = mpmath.quad(lambda x: integrand(x, t, False), xb)
            out.append((+h, +c))
        return out


def nested_gauss_legendre(plan, p, dps: int = 40, nodes: int = 40):
    """Same nested integrals with fixed composite Gauss-Legendre rules (panels doubling in
    width from the break points), all inner integrals shared between transcripts."""
    with mpmath.workdps(dps + 15):
        tau1, mu1 = mpmath.mpf(plan.tau1), mpmath.mpf(plan.mu1)
        T = len(p)
        ps = [mpmath.mpf(v) for v in p]
        xs, ws = zip(*[(mpmath.mpf(x), mpmath.mpf(w)) for x, w in _gl(nodes, dps + 15)])

        def panels(breaks, end):
            # widths grow with the distance to the nearest break point: 0.5 next to a break
            # (the Poisson CDF turns there), at most 0.25 * distance, at most 16
            pts = sorted({mpmath.mpf(0), *[b for b in breaks if 0 < b < end]})
            out = []
            pos = mpmath.mpf(0)
            while pos < end:
                d = min(abs(pos - b) for b in pts)
                ahead = [b for b in pts if b > pos]
                w = min(mpmath.mpf(16), max(mpmath.mpf(1) / 2, d / 4))
                nxt = min(pos + w, end, ahead[0] if ahead else end)
                out.append((pos, nxt))
                pos = nxt
            return out

        def rule(f, pans):
            tot = mpmath.mpf(0)
            for a, b in pans:
                h = (b - a) / 2
                m = (a + b) / 2
                tot += h * mpmath.fsum(w * f(m + h * x) for x, w in zip(xs, ws))
            return tot

        def poisson_cdf(c, m):
            term = mpmath.exp(-m)
            total = term
            for k in range(1, c + 1):
                term = term * m / k
                total += term
            return total

        def step_const(i):
            st = plan.step(i + 1)
            r = ps[i] if st.s == 1 else 1 - ps[i]
            return st, r, mpmath.mpf(st.rho), mpmath.mpf(st.eps_t), mpmath.mpf(st.tau2)

        consts = [step_const(i) for i in range(T)]

        def inner(i, x):
            st, r, rho, eps, tau2 = consts[i]
            s, c = st.s, st.c

            def g(y):
                m = rho * mpmath.exp(eps * s * (mu1 - x + y)) * r
                F = poisson_cdf(c, m)
                return (F if s == 1 else 1 - F) * mpmath.exp(-y / tau2) / tau2

            yb = x - mu1 + s * mpmath.log((c + 1) / (rho * r)) / eps
            end = tau2 * (dps + 20) * mpmath.log(10)
            cont = rule(g, panels([yb], end))
            return cont, 1 - cont

        xb = []
        for i in range(T):
            st, r, rho, eps, _ = consts[i]
            xb.append(st.s * (mpmath.log(rho * r) + st.s * eps * mu1 - mpmath.log(st.c + 1)) / eps)
        xend = tau1 * (dps + 20) * mpmath.log(10)
        pans = panels(xb, xend)
        halt_sums = [mpmath.mpf(0)] * T
        cont_sums = [mpmath.mpf(0)] * T
        for a, b in pans:
            h = (b - a) / 2
            m = (a + b) / 2
            for x0, w in zip(xs, ws):
                x = m + h * x0
                P = h * w * mpmath.exp(-x / tau1) / tau1
                for i in range(T):
                    cont, halt = inner(i, x)
                    halt_sums[i] += P * halt
                    P = P * cont
                    cont_sums[i] += P
        return [(+halt_sums[i], +cont_sums[i]) for i in range(T)]


def _gl(n: int, dps: int):
    with mpmath.workdps(dps):
        xs, ws = [], []
        for k in range(1, n + 1):
            x = mpmath.cos(mpmath.pi * (k - mpmath.mpf(1) / 4) / (n + mpmath.mpf(1) / 2))
            for _ in range(100):
                p0, p1 = mpmath.mpf(1), x
                for j in range(2, n + 1):
                    p0, p1 = p1, ((2 * j - 1) * x * p1 - (j - 1) * p0) / j
                dp = n * (x * p1 - p0) / (x * x - 1)
                dx = p1 / dp
                x -= dx
                if abs(dx) < mpmath.mpf(10) ** (-dps - 5):
                    break
            p0, p1 = mpmath.mpf(1), x
            for j in range(2, n + 1):
                p0, p1 = p1, ((2 * j - 1) * x * p1 - (j - 1) * p0) / j
            dp = n * (x * p1 - p0) / (x * x - 1)
            xs.append(x)
            ws.append(2 / ((1 - x * x) * dp * dp))
        return list(zip(xs, ws))
