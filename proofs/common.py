"""Encodings of the paper's recurring objects as solver terms (shared by the lemma modules)."""

from __future__ import annotations

import z3

from .core import Q


def lam_left(q: Q, x, L, tag: str = ""):
    """Equation (3): lambda^l(x, alpha) = x + L + sqrt(2 x L + L^2), L = ln(1/alpha); returns (value, sqrt aux)."""
    s = q.sqrt(f"sl{tag}", 2 * x * L + L * L)
    return x + L + s, s


def lam_right(q: Q, x, L, tag: str = ""):
    """Equation (4): lambda^r(x, alpha) = x + 1 - sqrt(2 (x+1) L); returns (value, sqrt aux)."""
    s = q.sqrt(f"sr{tag}", 2 * (x + 1) * L)
    return x + 1 - s, s


def lemma11_root(q: Q, A, B, g, *, disc: int = 8):
    """Lemma 11's r = (a + sqrt(a^2 + 8(g-1)A)) / (2(g-1)), a = sqrt(2A) + g sqrt(2B)."""
    sA = q.sqrt("sA", 2 * A)
    sB = q.sqrt("sB", 2 * B)
    a = sA + g * sB
    d = q.sqrt("d", a * a + disc * (g - 1) * A)
    return (a + d) / (2 * (g - 1)), dict(sA=sA, sB=sB, a=a, d=d)


def lemma11_params(q: Q):
    """A, B > 0 and gamma in (1, 2]."""
    A, B, g = Q.real("A B g")
    q.hyp(A > 0, B > 0, g > 1, g <= 2)
    return A, B, g


def Max(a, b):
    return z3.If(a >= b, a, b)


def Min(a, b):
    return z3.If(a <= b, a, b)


def sign_vals(s):
    """s in {-1, +1}."""
    return z3.Or(s == 1, s == -1)
