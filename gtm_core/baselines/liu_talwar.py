"""Liu and Talwar's ExtendedAboveThreshold (Section 9.2, Theorem 46, equation (25))."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import integrate, stats

from ..errors import InvalidParameter
from ..numeric import laplace_cdf, laplace_density
from ..validation import check_open_unit, check_positive_int, check_stream
from .common import PeerParameters, PeerResult, check_run_count, check_success_probability


# ---------------------------------------------------------------------------
# Liu-Talwar ExtendedAboveThreshold (Section 9.2, Theorem 46, equation (25))
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LiuTalwar(PeerParameters):
    """Liu and Talwar's ExtendedAboveThreshold (Section 9.2 steps (1)-(3), Theorem 46, eq. (25)).

    nu ~ Lap(4(eps1+eps0)/eps) once; at each step N evaluations, p_hat = mean, xi_t ~ Lap(8(eps1+eps0)/eps),
    halt iff e^{xi_t} Phi_Delta(p_hat) >= e^{nu} Phi_Delta(p*). (eps, delta)-DP (Theorem 46(1)); needs
    pure eps1-DP inputs and a finite horizon T. ``eps_0`` defaults to eps_1 (the paper leaves it free
    in (0, 1)); ``delta`` defaults to 1e-6.
    """

    T: int
    delta: float = 1e-6
    eps_0: float | None = None
    name: str = field(default="liu-talwar", init=False)

    def __post_init__(self):
        super().__post_init__()
        check_open_unit("delta", self.delta)
        check_positive_int("T", self.T)
        if self.T < 2:
            raise InvalidParameter(f"T must be > 1 for Liu-Talwar (Theorem 46), got {self.T!r}")
        if self.eps_0 is None:
            object.__setattr__(self, "eps_0", min(self.eps_1, 0.99))
        check_open_unit("eps_0", self.eps_0)

    # eq. (25) ---------------------------------------------------------
    @property
    def sigma(self) -> float:
        """sigma_LT = 12 (eps1 + eps0) / eps."""
        return 12 * (self.eps_1 + self.eps_0) / self.epsilon

    @property
    def C(self) -> float:
        return 2 * (math.exp(self.eps_0 + self.eps_1) + 1 + math.exp(self.eps_0 / 2))

    @property
    def Delta(self) -> float:
        """Delta = C ln(8T/delta) / (eps0 (e^{eps0+eps1} - 1))."""
        return self.C * math.log(8 * self.T / self.delta) / (self.eps_0 * math.expm1(self.eps_0 + self.eps_1))

    @property
    def N(self) -> float:
        """N = e^{eps0} Delta / min(p*, 1-p*) ((T+1)/beta)^sigma (rounded up; a float - may exceed int64)."""
        log_n = (self.eps_0 + math.log(self.Delta) - math.log(min(self.p_star, 1 - self.p_star))
                 + self.sigma * math.log((self.T + 1) / self.beta))
        n = math.exp(log_n)
        return float(math.ceil(n)) if n < 2**53 else n

    @property
    def threshold_noise_scale(self) -> float:
        return 4 * (self.eps_1 + self.eps_0) / self.epsilon

    @property
    def step_noise_scale(self) -> float:
        return 8 * (self.eps_1 + self.eps_0) / self.epsilon

    def log_phi(self, x):
        """ln Phi_Delta(x), Phi_Delta(x) = (N x + Delta) / (N (1 - x) + Delta)."""
        x = np.asarray(x, dtype=float)
        N, D = self.N, self.Delta
        return np.log(N * x + D) - np.log(N * (1 - x) + D)

    # claims -----------------------------------------------------------
    def guarantee(self) -> dict:
        return {"privacy": f"({self.epsilon:g}, {self.delta:g})-DP (approximate; Theorem 46(1))",
                "epsilon": self.epsilon, "delta": self.delta, "pure": False, "ex_post": False,
                "accuracy_failure_probability": self.beta + self.delta / 2,
                "requires": "pure eps_1-DP inputs, finite T",
                "source": "Theorem 46 (Liu-Talwar Theorem 4.4)"}

    def claimed_p_bar(self, t: int) -> float:
        """Theorem 46(2): conditional on halting at R = t, p_R >= (1/2) e^{-eps0} (beta/(t+1))^sigma p*."""
        return 0.5 * math.exp(-self.eps_0) * (self.beta / (t + 1)) ** self.sigma * self.p_star

    def table1_p_bar(self, t: int) -> float:
        """Table 1: p* / (Lambda (1 - p*) + p*), Lambda = (t / beta^2)^{12 (eps1+eps0)/eps}."""
        lam = (t / self.beta**2) ** self.sigma
        return self.p_star / (lam * (1 - self.p_star) + self.p_star)

    def moreover_bound_as_printed(self, t: int) -> float:
        """Theorem 46(3) "moreover" exactly as printed (an erratum: >= 1/3 for every p*; not a claim)."""
        x = math.exp(self.eps_0) / (2 * (1 - self.p_star)) * ((t + 1) / self.beta) ** self.sigma
        return 1 - 1 / (1 + x)

    def claimed_halt_threshold(self, t: int) -> float:
        """Theorem 46(4): halts w.p. >= 1 - beta - delta/(4T) once Phi_Delta(p) >= e^{eps0} beta^{-sigma} Phi_Delta(p*).

        Solved for p; ``inf`` when no p <= 1 satisfies it."""
        y = math.exp(self.eps_0) * self.beta ** (-self.sigma) * float(np.exp(self.log_phi(self.p_star)))
        N, D = self.N, self.Delta
        p = (y * N + (y - 1) * D) / (N * (1 + y))
        return p if p <= 1 else math.inf

    def evaluations_bound(self, t: int) -> float:
        """Theorem 46(5): exactly N evaluations at every step."""
        return self.N

    # law --------------------------------------------------------------
    def _sample_p_hat(self, p: float, m: int, rng) -> np.ndarray:
        N = self.N
        if N < 2**62:
            return rng.binomial(int(N), p, m) / N
        # N beyond int64: normal approximation of Binomial(N, p)/N (relative error ~ 1/sqrt(N p))
        return np.clip(p + math.sqrt(p * (1 - p) / N) * rng.standard_normal(m), 0.0, 1.0)

    def simulate(self, p, n: int, rng: np.random.Generator) -> PeerResult:
        p = check_stream("p", p)
        n = check_run_count(n)
        T = p.size
        halt = np.zeros(n, dtype=np.int64)
        steps = np.zeros(n, dtype=np.int64)
        nu = rng.laplace(0.0, self.threshold_noise_scale, n)
        bar = nu + float(self.log_phi(self.p_star))
        idx = np.arange(n)
        for t, pt in enumerate(p, start=1):
            if idx.size == 0:
                break
            p_hat = self._sample_p_hat(float(pt), idx.size, rng)
            xi = rng.laplace(0.0, self.step_noise_scale, idx.size)
            stop = xi + self.log_phi(p_hat) >= bar[idx]
            steps[idx] += 1
            halt[idx[stop]] = t
            idx = idx[~stop]
        return PeerResult(halt=halt, evaluations=steps * self.N, T=T)

    def _continue_probability(self, nu: np.ndarray, p: float) -> np.ndarray:
        """Pr[no halt at one step | nu] = E_{p_hat}[F_xi(nu + ln Phi(p*) - ln Phi(p_hat))]."""
        a = nu + float(self.log_phi(self.p_star))
        N, b = self.N, self.step_noise_scale
        if N * p * (1 - p) > 1e4:
            z, w = np.polynomial.hermite_e.hermegauss(60)
            w = w / w.sum()
            p_hat = np.clip(p + math.sqrt(p * (1 - p) / N) * z, 0.0, 1.0)
        elif N > 1e9:
            # N p (1-p) <= 1e4 with N > 1e9 forces p <= 1e-5 (or 1-p <= 1e-5): Binomial(N, p) is Poisson(N p)
            # up to a relative error O(p) (Le Cam); scipy's binomial pmf is unreliable at such N
            small = min(p, 1 - p)
            m = N * small
            k = np.arange(max(0, int(m - 12 * math.sqrt(m) - 10)), int(math.ceil(m + 12 * math.sqrt(m) + 40)) + 1)
            w = stats.poisson.pmf(k, m)
            w = w / w.sum()
            p_hat = k / N if small == p else 1 - k / N
        else:
            # support: mean +- 12 sd (+ a margin for tiny means); pmf in log space
            m = N * p
            sd = math.sqrt(max(m * (1 - p), 0.0))
            lo, hi = max(0, int(m - 12 * sd - 10)), min(int(N), int(math.ceil(m + 12 * sd + 40)))
            k = np.arange(lo, hi + 1)
            w = np.exp(stats.binom.logpmf(k, int(N), p))
            w = w / w.sum()
            p_hat = k / N
        lp = self.log_phi(p_hat)
        return laplace_cdf(a[:, None] - lp[None, :], scale=b) @ w

    def false_halt_probability(self, p: float, T: int) -> float:
        """1 - E_nu[(Pr[continue | nu])^T] on the constant stream p (exact given nu; the binomial p_hat is
        summed exactly when N p (1-p) <= 1e4 and N <= 1e9, as Poisson(N p) when N > 1e9, else by 60-point
        Gauss-Hermite on its normal approximation)."""
        p = check_success_probability("p", p)
        b = self.threshold_noise_scale
        x = np.linspace(-40 * b, 40 * b, 4001)
        dens = laplace_density(x, scale=b)
        cont = self._continue_probability(x, p) ** T
        return float(1 - integrate.simpson(cont * dens, x=x))

    def first_step_halt_probability(self, p: float) -> float:
        return self.false_halt_probability(p, 1)
