"""Parameter formulas of the pure-DP black-box evaluator (Algorithms 3 and 4), one function each.

Paper: "Private black-box evaluation via down sensitivity" (the second source paper of the project;
docs/blackbox.md). Every function takes ``dps``: ``None`` computes in float64, an integer computes
with mpmath at that many digits (:func:`gtm_core.numeric.backend`), so the float64 path and the
golden values (tests/golden/blackbox.json, >= 30 digits) come from one source.

Algorithm 4, line by line (M = |Y~|, d = dimension):

    eta = beta / 2, beta_0 = beta / 2, eps_0 = eps / 2
    delta_0 = min{1/4, eta (e^{eps_0} - 1) / M}
    Delta = 2 log(M / beta_0) / eps_0
    K = ceil((d + 1)(Delta + 1))
    R = (1 / eps_0) log(1 + (e^{eps_0} - 1) / (2 delta_0))        (TLap(1, eps_0, delta_0)'s support)
    h = floor(n~ - R - K),  n~ = |S| + Z, Z ~ TLap(1, eps_0, delta_0)
"""

from __future__ import annotations

from ..numeric import backend

__all__ = [
    "eta",
    "beta0",
    "eps0",
    "delta0",
    "utility_margin",
    "depth_margin",
    "tlap_radius",
    "tlap_radius_definition_a3",
    "tlap_normaliser",
    "cutoff",
    "locality",
    "exponential_mechanism_error",
]


def eta(beta, *, dps: int | None = None):
    """Algorithm 4 line 2: eta = beta / 2 (probability of the uniform branch B = 1)."""
    m = backend(dps)
    with m.context():
        return m.num(beta) / 2


def beta0(beta, *, dps: int | None = None):
    """Algorithm 4 line 2: beta_0 = beta / 2 (failure probability given to Algorithm 3)."""
    m = backend(dps)
    with m.context():
        return m.num(beta) / 2


def eps0(epsilon, *, dps: int | None = None):
    """Algorithm 4 line 2: eps_0 = eps / 2 (each of the size estimate and the exponential mechanism)."""
    m = backend(dps)
    with m.context():
        return m.num(epsilon) / 2


def delta0(epsilon, beta, M: int, *, dps: int | None = None):
    """Algorithm 4 line 2: delta_0 = min{1/4, eta (e^{eps_0} - 1) / M}.

    The 1/4 cap keeps TLap's delta in (0, 1/2) (Definition A.3); eta (e^{eps_0} - 1)/M is what the
    uniform branch can absorb (proof of Theorem 2.7: (1 - eta) delta_0 <= eta (e^eps - 1) / M).
    """
    m = backend(dps)
    with m.context():
        e0 = eps0(epsilon, dps=dps)
        v = eta(beta, dps=dps) * m.expm1(e0) / m.num(M)
        quarter = m.num(1) / 4
        return v if v < quarter else quarter


def utility_margin(epsilon, beta, M: int, *, dps: int | None = None):
    """Algorithm 4 line 3: Delta = 2 log(M / beta_0) / eps_0 (Theorem 4.10 / A.2 with sensitivity 1)."""
    m = backend(dps)
    with m.context():
        return 2 * m.log(m.num(M) / beta0(beta, dps=dps)) / eps0(epsilon, dps=dps)


def depth_margin(epsilon, beta, M: int, d: int, *, dps: int | None = None) -> int:
    """Algorithm 4 line 3: K = ceil((d + 1)(Delta + 1)) (so K/(d+1) - Delta >= 1, proof of Thm 2.7)."""
    m = backend(dps)
    with m.context():
        return m.ceil((d + 1) * (utility_margin(epsilon, beta, M, dps=dps) + 1))


def tlap_radius(eps, delta, *, s=1, dps: int | None = None):
    """Algorithm 4 line 3 / Geng et al. Thm 1: R = (s / eps) log(1 + (e^eps - 1) / (2 delta)).

    With this R, |Z| <= R and q(S) + Z is exactly (eps, delta)-DP for sensitivity s (the mass
    outside the overlap of two shifted supports is delta).
    """
    m = backend(dps)
    with m.context():
        e = m.num(eps)
        return m.num(s) / e * m.log1p(m.expm1(e) / (2 * m.num(delta)))


def tlap_radius_definition_a3(eps, delta, *, s=1, dps: int | None = None):
    """Definition A.3 as printed: R = (s / eps) log(1 + e^eps / (2 delta)) (larger than Algorithm 4's R).

    Erratum pinned in tests/gtm_core/blackbox/test_params.py: Definition A.3 and Algorithm 4 disagree;
    Definition A.3's R makes TLap (eps, delta (1 - e^{-eps}))-DP (still valid, more truncation
    headroom than needed); the evaluator uses Algorithm 4's R.
    """
    m = backend(dps)
    with m.context():
        e = m.num(eps)
        return m.num(s) / e * m.log1p(m.exp(e) / (2 * m.num(delta)))


def tlap_normaliser(eps, R, *, s=1, dps: int | None = None):
    """Definition A.3: density constant eps / (2 s (1 - e^{-eps R / s}))."""
    m = backend(dps)
    with m.context():
        e, sc = m.num(eps), m.num(s)
        return e / (2 * sc * -m.expm1(-e * m.num(R) / sc))


def cutoff(n_tilde, R, K: int, *, dps: int | None = None) -> int:
    """Algorithm 4 line 8: h = floor(n~ - R - K)."""
    m = backend(dps)
    with m.context():
        return m.floor(m.num(n_tilde) - m.num(R) - m.num(K))


def locality(R, K: int, *, dps: int | None = None) -> int:
    """Proof of Theorem 2.7: lambda = ceil(K + 2R + 1); every query and the output stay within N_lambda(S)."""
    m = backend(dps)
    with m.context():
        return m.ceil(m.num(K) + 2 * m.num(R) + 1)


def exponential_mechanism_error(epsilon, beta, size: int, *, sensitivity=1, dps: int | None = None):
    """Theorem A.2: Q(S, y^) >= max Q - 2 Delta_Q log(|Y| / beta) / eps with probability >= 1 - beta."""
    m = backend(dps)
    with m.context():
        return 2 * m.num(sensitivity) * m.log(m.num(size) / m.num(beta)) / m.num(epsilon)
