"""Integration over eta_1 of the exact engine: adaptive Gauss-Legendre panels with a
coefficient-decay error estimate, and certified panels (remainder bound on a Bernstein ellipse)."""

from __future__ import annotations

import math

from flint import arb

from .arb import lower_gamma_scaled, lower_reg_int, working_precision
from .step import StepEval


# ---------------------------------------------------------------------------
# the integrator
# ---------------------------------------------------------------------------

_GL_CACHE: dict[tuple[int, int], list[tuple[arb, arb]]] = {}


def _gl_nodes(n: int, bits: int) -> list[tuple[arb, arb]]:
    key = (n, bits)
    if key not in _GL_CACHE:
        with working_precision(bits):
            _GL_CACHE[key] = [arb.legendre_p_root(n, k, weight=True) for k in range(n)]
    return _GL_CACHE[key]


class Integrand:
    """All integrands at one node: per step (halt_i, cont_i), and under an enforced evaluation budget
    (steps with ``width == 3``) also refused_i: (halt_i, cont_i, refused_i)."""

    def __init__(self, evals: list, tau1: arb, bits: int):
        self.evals = evals
        self.tau1 = tau1
        self.bits = bits
        self.count = 0
        self.floor: list[arb] | None = None  # per-step skip thresholds
        self.width = max(getattr(ev, "width", 2) for ev in evals)

    def __call__(self, x: arb) -> list[arb]:
        self.count += 1
        T = len(self.evals)
        w = self.width
        out: list[arb] = []
        with working_precision(self.bits):
            P = (-x / self.tau1).exp() / self.tau1
            for i, ev in enumerate(self.evals):
                if self.floor is not None and P < self.floor[i]:
                    # everything later is in [0, P]: negligible, add it as a radius
                    pad = arb(0, P.upper())
                    out.extend([pad] * (w * (T - i)))
                    return out
                if w == 2:
                    cont, halt = ev.probs(x)
                    out.append(P * halt)
                    P = P * cont
                    out.append(P)
                    continue
                cont, halt, refused = ev.probs(x)
                halted, stopped = P * halt, P * refused
                P = P * cont
                out.extend([halted, P, stopped])
        return out


def _gl_panel(f: Integrand, lo: arb, hi: arb, n: int, bits: int) -> list[arb]:
    nodes = _gl_nodes(n, bits)
    with working_precision(bits):
        mid = (lo + hi) / 2
        hl = (hi - lo) / 2
        acc = None
        for xk, wk in nodes:
            v = f(mid + hl * xk)
            w = wk * hl
            if acc is None:
                acc = [w * u for u in v]
            else:
                acc = [a + w * u for a, u in zip(acc, v)]
    return acc


def _mag(b: arb) -> float:
    """|b| as a float (upper bound of the absolute value), 0 for exact zero."""
    u = abs(b).upper()
    return float(u.mid()) if u.is_finite() else math.inf


def initial_edges(trans: list[float], mu1: float, tau1: float, X: float) -> list[float]:
    """Panel edges: the transition points (count mean = c), panels of width <= 2 tau1 up to
    the last transition (or mu1), then geometrically growing panels (the integrand is
    a smooth exponential decay there) up to X."""
    core_end = min(max([mu1] + trans) + 2 * tau1, X)
    breaks = sorted({0.0, core_end, *[x for x in trans if 0 < x < core_end]})
    width = max(tau1, 1.0) * 2.0
    edges = [breaks[0]]
    for b in breaks[1:]:
        a = edges[-1]
        if b - a < width / 4 and b != core_end:
            continue  # a break this close to the last edge only makes a sliver panel
        k = max(1, int(math.ceil((b - a) / width)))
        edges.extend(a + (b - a) * j / k for j in range(1, k + 1))
    w = width
    while edges[-1] < X:
        w = min(2 * w, 16 * tau1)
        edges.append(min(edges[-1] + w, X))
    return sorted(set(edges))


def _legendre_tail_rows(n: int, bits: int) -> list[list[arb]]:
    """Rows L[m][k] = (2m+1)/2 w_k P_m(x_k) for the top four degrees m = n-1 .. n-4.

    With the n Gauss-Legendre values v_k of a function on [-1, 1], sum_k L[m][k] v_k is
    the degree-m Legendre coefficient of its interpolating polynomial (the rule is exact
    for P_m times a polynomial of degree n-1).
    """
    key = (n, bits, "tail")
    if key not in _GL_CACHE:
        nodes = _gl_nodes(n, bits)
        with working_precision(bits):
            _GL_CACHE[key] = [
                [(2 * m + 1) * w * arb.legendre_p(x, m) / 2 for x, w in nodes] for m in range(n - 1, n - 5, -1)
            ]
    return _GL_CACHE[key]


def gl_panel_with_error(f, lo: arb, hi: arb, n: int, bits: int) -> tuple[list[arb], list[float]]:
    """n-point Gauss-Legendre integrals of every component on [lo, hi] and an error estimate
    from the decay of the interpolant's Legendre coefficients (no extra evaluations).

    For f analytic in the Bernstein ellipse E_rho the Legendre coefficients fall like
    rho^-m and the n-point rule's error like rho^-2n (Trefethen, Approximation Theory and
    Approximation Practice, ch. 8 and 19).  With A1 = max(|a_{n-1}|, |a_{n-2}|),
    A2 = max(|a_{n-3}|, |a_{n-4}|) and r = sqrt(A1/A2) (capped at 1), the estimate is
    2 h A1 r^(n-2): the expected error ~ 2 h A1 r^(n+1) times a safety factor r^-3.  A panel
    that does not resolve its integrand has r ~ 1 and an estimate ~ its last coefficient,
    so it gets split.  Rounding noise enters through the balls' radii.
    """
    nodes = _gl_nodes(n, bits)
    rows = _legendre_tail_rows(n, bits)
    with working_precision(bits):
        mid = (lo + hi) / 2
        hl = (hi - lo) / 2
        values = [f(mid + hl * xk) for xk, _ in nodes]
        h = 2 * _mag(hl)
        integrals: list[arb] = []
        errors: list[float] = []
        for j in range(len(values[0])):
            col = [v[j] for v in values]
            integrals.append(hl * sum((wk * u for (_, wk), u in zip(nodes, col)), arb(0)))
            a = [_mag(sum((lk * u for lk, u in zip(row, col)), arb(0))) for row in rows]
            A1, A2 = max(a[0], a[1]), max(a[2], a[3])
            if A1 == 0:
                errors.append(0.0)
                continue
            r = 1.0 if A2 <= A1 else math.sqrt(A1 / A2)
            errors.append(h * A1 * r ** (n - 2))
    return integrals, errors


def integrate_estimated(f, edges, n, bits, rel_tol, max_panels, tau1):
    """Adaptive Gauss-Legendre panels with the coefficient-decay error estimate of
    :func:`_gl_panel_with_error` (a panel is accepted when its estimate is below a quarter
    of the tolerance relative to the component's total, else halved; the estimate is added
    to the panel as a radius, so every result carries it).

    The core panels (up to the last transition point + 2 tau1) are integrated first; their
    totals fix how far the exponentially decaying tail must be followed:
    X = tau1 ln(8 / (tol min_j total_j)), so the rigorously bounded remainder beyond X is
    below tol/8 of every component (never beyond the ``edges`` given).
    Returns the panels and the edges actually used (the last one is X).
    """
    tol = float(rel_tol)
    core_end = edges[0]
    for a, b in zip(edges[:-1], edges[1:]):
        if b - a > 2.0 * max(tau1, 1.0) * 1.000001:
            break
        core_end = b
    core = [e for e in edges if e <= core_end]
    done: list[list[arb]] = []
    est: list[float] | None = None

    def run(todo, m_nodes):
        nonlocal est
        while todo:
            vals = [(lo, hi, *gl_panel_with_error(f, lo, hi, m_nodes, bits)) for lo, hi in todo]
            if est is None:
                est = [sum(_mag(v[2][j]) for v in vals) for j in range(len(vals[0][2]))]
                # skip steps whose running product is negligible for every later component
                f.floor = _skip_floors(est, bits, f.width)
            nxt = []
            for lo, hi, integrals, errs in vals:
                ok = all(e <= tol * s / 4 for e, s in zip(errs, est))
                if ok or len(done) + len(nxt) > max_panels or float((hi - lo).mid()) < 1e-6:
                    with working_precision(bits):
                        done.append([v + arb(0, e) for v, e in zip(integrals, errs)])
                else:
                    with working_precision(bits):
                        mid = (lo + hi) / 2
                    nxt.extend([(lo, mid), (mid, hi)])
            todo = nxt

    run([(arb(a), arb(b)) for a, b in zip(core[:-1], core[1:])], n)
    positive = [s for s in est if s > 0]
    X = edges[-1]
    if positive:
        X = min(X, max(core_end, tau1 * math.log(8 / (tol * min(positive)))))
    tail = [e for e in edges if core_end < e < X] + ([X] if X > core_end else [])
    bounds = [core_end] + tail
    run([(arb(a), arb(b)) for a, b in zip(bounds[:-1], bounds[1:])], n)
    return done, core + tail


def _skip_floors(est: list[float], bits: int, width: int = 2) -> list[arb]:
    """floor[i]: a running product below it is negligible for all components >= step i."""
    T = len(est) // width
    floors = []
    running = math.inf
    mins = [0.0] * T
    for i in range(T - 1, -1, -1):
        running = min([running] + [est[width * i + j] for j in range(width)])
        mins[i] = running
    for i in range(T):
        v = mins[i] * 2.0 ** (-(bits + 16))
        floors.append(arb(v) if v > 0 and math.isfinite(v) else arb(0))
    return floors


def integrate_panels(f, edges: list[float], n: int, bits: int, rel_tol: float,
                     max_panels: int) -> list[tuple[float, float, arb]]:
    """Adaptive Gauss-Legendre on [edges[0], edges[-1]] for a one-component integrand ``f(u) -> [arb]``:
    each panel is accepted when the coefficient-decay estimate of :func:`gl_panel_with_error` is below a
    quarter of ``rel_tol`` times the first pass's total, else halved. Returns the accepted panels
    ``(lo, hi, integral + [0, estimate])`` in order of ``lo``."""
    todo = [(a, b) for a, b in zip(edges[:-1], edges[1:]) if b > a]
    done: list[tuple[float, float, arb]] = []
    est: float | None = None
    while todo:
        vals = [(a, b, *gl_panel_with_error(f, arb(a), arb(b), n, bits)) for a, b in todo]
        if est is None:
            est = sum(_mag(v[2][0]) for v in vals)
        nxt = []
        for a, b, ints, errs in vals:
            if errs[0] <= rel_tol * est / 4 or len(done) + len(nxt) > max_panels or b - a < 1e-14 * max(1.0, abs(a)):
                with working_precision(bits):
                    done.append((a, b, ints[0] + arb(0, errs[0])))
            else:
                m = (a + b) / 2
                nxt.extend([(a, m), (m, b)])
        todo = nxt
    return sorted(done, key=lambda d: d[0])


# ---------------------------------------------------------------------------
# certified quadrature: Gauss-Legendre remainder bound on a Bernstein ellipse
# ---------------------------------------------------------------------------


def _ellipse_abs_bounds(ev: StepEval, xl: float, xr: float, Y: float) -> tuple[arb, arb]:
    """Upper bounds on |h(x)| and |1 - h(x)| over {Re x in [xl, xr], |Im x| <= Y}.

    With theta = eps Y < pi/2 the count mean m = a w (or b/w) has |arg m| <= theta.
    Integrating u^c e^{-u} along the ray / horizontal line from m (Re u >= |u| cos theta):
      |Gamma(c+1, m)| <= cos(theta)^{-c} Gamma(c+1, |m| cos theta),
      |gamma(c+1, m)| <= cos(theta)^{-(c+1)} gamma(c+1, |m| cos theta),
    and the same for non-integer orders (exponent max(s-1, 0) / s).  |a^sigma| = |a|^sigma.
    Each bound is monotone in |m|, so it is evaluated at the extreme |m| of the region.
    Also |Q| <= 1 + |P| and |P| <= 1 + |Q| (Q + P = 1), whichever is smaller.
    """
    if ev.sigma is None:
        cont, halt = ev.const
        return abs(cont), abs(halt)
    if ev.lnA is None:
        return arb(1), arb(1)
    s, c, sigma = ev.s, ev.c, ev.sigma
    theta = ev.eps * Y
    cs = theta.cos()
    lnfac = ev.lnfac
    one = arb(1)
    if s == 1:
        m_lo = (ev.lnA - ev.eps * xr).exp()  # smallest |a|
        m_hi = (ev.lnA - ev.eps * xl).exp()  # largest |a|
    else:
        m_lo = (ev.lnA + ev.eps * xl).exp()
        m_hi = (ev.lnA + ev.eps * xr).exp()
    bits = ev.bits
    c1 = arb(c + 1)
    Qb = cs ** (-c) * (m_lo * cs).gamma_upper(c1, regularized=1)  # |Q(c+1, m)|
    Pb = cs ** (-(c + 1)) * lower_reg_int(c + 1, m_hi * cs, bits)  # |P(c+1, m)|
    Qabs = _min(Qb, one + Pb)
    Pabs = _min(Pb, one + Qb)
    shape = ev.shape
    if s == 1:
        # |a^sigma Gamma(shape, a)| / c!
        k = cs ** (-max(float(shape.mid()) - 1, 0.0)) if float(shape.mid()) > 1 else arb(1)
        G1 = k * (m_lo * cs).gamma_upper(shape)
        if shape > 0:
            G2 = shape.gamma() + cs ** (-shape) * lower_gamma_scaled(ev.shape_now, m_hi * cs, bits, False)
            G = _min(G1, G2)
        else:
            G = G1
        tail = (sigma * m_hi.log() - lnfac).exp() * G
        return Qabs + tail, Pabs + tail
    # s = -1: |b^{-sigma} gamma(shape, b)| / c!
    g1 = cs ** (-shape) * lower_gamma_scaled(ev.shape_now, m_hi * cs, bits, False)
    g2 = shape.gamma() + cs ** (-(shape - 1)) * (m_lo * cs).gamma_upper(shape)
    g = _min(g1, g2)
    tail = (-sigma * m_lo.log() - lnfac).exp() * g
    return Pabs + tail, Qabs + tail


def _min(a: arb, b: arb) -> arb:
    ua, ub = a.upper(), b.upper()
    return ua if ua < ub else ub


def _ellipse_bound(evals, tau1: arb, lo: float, hi: float, rho_e: float, bits: int) -> list[arb]:
    """Upper bounds M_j on |integrand_j| over the Bernstein ellipse E_rho of [lo, hi]."""
    L = (hi - lo) / 2
    mid = (hi + lo) / 2
    a_semi = L * (rho_e + 1 / rho_e) / 2
    Y = L * (rho_e - 1 / rho_e) / 2
    xl, xr = mid - a_semi, mid + a_semi
    with working_precision(bits):
        fmax = (-arb(xl) / tau1).exp() / tau1
        out = []
        P = fmax
        for ev in evals:
            if ev.sigma is not None and float(ev.eps.mid()) * Y >= 1.2:
                return [arb("inf")] * (2 * len(evals))
            hb, hh = _ellipse_abs_bounds(ev, arb(xl), arb(xr), arb(Y))
            out.append((P * hh).upper())
            P = (P * hb).upper()
            out.append(P)
    return out


def integrate_certified(f, evals, tau1, edges, n, bits, rel_tol, max_panels):
    """Gauss-Legendre panels with the rigorous remainder |E| <= L 64 M / (15 (1 - rho^-2) rho^{2n})."""
    tol = float(rel_tol)
    todo = [(a, b) for a, b in zip(edges[:-1], edges[1:])]
    done: list[list[arb]] = []
    est: list[float] | None = None
    while todo:
        nxt = []
        vals = []
        for a, b in todo:
            vals.append((a, b, _gl_panel(f, arb(a), arb(b), n, bits)))
        if est is None:
            m = len(vals[0][2])
            est = [sum(_mag(v[2][j]) for v in vals) for j in range(m)]
            f.floor = _skip_floors(est, bits, f.width)
        m = len(est)
        for a, b, pv in vals:
            best = None
            for rho_e in (1.5, 2.5, 4.0, 7.0):
                Ms = _ellipse_bound(f.evals, tau1, a, b, rho_e, bits)
                with working_precision(bits):
                    factor = arb((b - a) / 2) * 64 / (15 * (1 - arb(rho_e) ** -2) * arb(rho_e) ** (2 * n))
                    errs = [(M * factor).upper() for M in Ms]
                if best is None or _worst(errs, est) < _worst(best, est):
                    best = errs
            ok = all(_mag(e) <= tol * est[j] / 4 for j, e in enumerate(best))
            if ok or len(done) + len(nxt) > max_panels or (b - a) < 1e-6:
                with working_precision(bits):
                    if not all(e.is_finite() for e in best):
                        # no usable ellipse: every integrand lies in [0, f1(a)] on the panel
                        top = (arb(b - a) * (-arb(a) / tau1).exp() / tau1).upper()
                        done.append([arb(0, top) for _ in pv])
                    else:
                        done.append([v + arb(0, e) for v, e in zip(pv, best)])
            else:
                mid = (a + b) / 2
                nxt.extend([(a, mid), (mid, b)])
        todo = nxt
    return done


def _worst(errs, est) -> float:
    w = 0.0
    for e, s in zip(errs, est):
        me = _mag(e)
        if s > 0:
            w = max(w, me / s)
        elif me > 0:
            w = math.inf
    return w
