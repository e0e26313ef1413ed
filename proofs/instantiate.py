"""Instantiate the proved parameter identities with a plan's concrete numbers, rigorously.

``check_plan_identities(plan, t)`` re-derives, for step ``t`` of a
:class:`gtm_core.planners.Plan`, the claims the lemma checks prove symbolically,
now at the plan's numbers: exact rationals (every float is an exact binary
rational) where the claim is rational, arb balls (128 bits) where logarithms,
square roots or powers enter. A claim is ``ok`` only if it holds *for certain*;
an undecided ball comparison is a failure. Float64 values the planner produced
are accepted when they lie within ``FLOAT_REL_TOL`` of the exact value.

Used by ``gtm certify``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from flint import arb, fmpq

from . import interval  # noqa: F401  (sets the arb working precision)

FLOAT_REL_TOL = Fraction(1, 10**12)


@dataclass(frozen=True)
class ClaimVerdict:
    name: str
    ok: bool
    method: str
    lemma: str
    detail: str = ""

    def to_dict(self) -> dict:
        return {"name": self.name, "ok": self.ok, "method": self.method, "lemma": self.lemma, "detail": self.detail}


@dataclass(frozen=True)
class InstantiationResult:
    t: int
    parameterization: str
    claims: tuple = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return bool(self.claims) and all(c.ok for c in self.claims)

    def failed(self) -> list[ClaimVerdict]:
        return [c for c in self.claims if not c.ok]

    def to_dict(self) -> dict:
        return {
            "t": self.t,
            "parameterization": self.parameterization,
            "ok": self.ok,
            "claims": [c.to_dict() for c in self.claims],
        }


# ---------------------------------------------------------------------------


def _q(x) -> Fraction:
    return Fraction(x)


def _a(x) -> arb:
    f = Fraction(x)
    return arb(fmpq(f.numerator, f.denominator))


def _close(value: float, exact: Fraction) -> bool:
    """float64 ``value`` equals the exact rational up to relative FLOAT_REL_TOL."""
    v = Fraction(value)
    return abs(v - exact) <= FLOAT_REL_TOL * max(abs(exact), Fraction(1))


def _close_ball(value: float, ball: arb) -> bool:
    """float64 ``value`` is certainly within relative FLOAT_REL_TOL of every point of ``ball``."""
    v = _a(value)
    tol = _a(FLOAT_REL_TOL) * (abs(ball) + 1)
    return bool(abs(v - ball) < tol)


def _lam_left(c, L: arb) -> arb:
    c = _a(c)
    return c + L + (2 * c * L + L * L).sqrt()


def _lam_right(c, L: arb) -> arb:
    y = _a(c) + 1
    return y - (2 * y * L).sqrt()


def _ln_inv(x) -> arb:
    return -_a(x).log()


def _lemma11_claims(step, gamma) -> list[ClaimVerdict]:
    """Lemma 11 (1)-(2) at the concrete c_t, with (alpha, beta) chosen by the direction (Lemma 20)."""
    if step.s == 1:
        alpha, beta = step.beta_II, step.beta_I
    else:
        alpha, beta = step.beta_I, step.beta_II
    A, B = _ln_inv(alpha), _ln_inv(beta)
    g = _a(gamma)
    ll, lr = _lam_left(step.c, A), _lam_right(step.c, B)
    out = [
        ClaimVerdict(
            "lambda_left(c, alpha) <= gamma lambda_right(c, beta)",
            bool(ll <= g * lr),
            "arb balls (128 bits)",
            "Lemma 11(1)",
            f"c={step.c}, lambda_l={ll.str(12)}, gamma*lambda_r={(g * lr).str(12)}",
        ),
        ClaimVerdict(
            "c + 1 > 2 max(ln(1/alpha), ln(1/beta))",
            bool(_a(step.c + 1) > 2 * A) and bool(_a(step.c + 1) > 2 * B),
            "arb balls (128 bits)",
            "Lemma 11(2)",
            f"c={step.c}, 2A={(2 * A).str(12)}, 2B={(2 * B).str(12)}",
        ),
    ]
    # c is the Lemma 11 definition max(floor(2 max(A,B)), ceil(r^2)) -- decided only if no ball straddles an integer
    sA, sB = (2 * A).sqrt(), (2 * B).sqrt()
    a = sA + g * sB
    r = (a + (a * a + 8 * (g - 1) * A).sqrt()) / (2 * (g - 1))
    two_max = 2 * A if bool(A >= B) else (2 * B if bool(B >= A) else None)
    fl = two_max.floor() if two_max is not None else None
    ce = (r * r).ceil()
    decided = fl is not None and fl.is_exact() and ce.is_exact()
    if decided:
        expected = max(int(fl.unique_fmpz()), int(ce.unique_fmpz()))
        out.append(ClaimVerdict("c = max(floor(2 max(A,B)), ceil(r^2))", expected == step.c, "arb balls (128 bits)",
                                "Lemma 11 (definition of c)", f"c={step.c}, definition gives {expected}"))
    else:
        out.append(ClaimVerdict("c = max(floor(2 max(A,B)), ceil(r^2))", step.c >= int(ce.upper().ceil().unique_fmpz()),
                                "arb balls (128 bits), tie: only c >= ceil(r^2) checked", "Lemma 11 (definition of c)",
                                f"c={step.c}"))
    return out


def _lemma20_claims(step, gamma, p_star) -> list[ClaimVerdict]:
    target = _q(p_star) if step.s == 1 else 1 - _q(p_star)
    ranges = (
        0 < target < 1 and 0 < _q(step.beta_I) < 1 and 0 < _q(step.beta_II) < 1 and _q(step.Lambda) >= 1
        and 1 < _q(gamma) <= 2
    )
    out = [ClaimVerdict("p*, beta^I, beta^II in (0,1), Lambda >= 1, gamma in (1,2]", ranges, "exact rationals",
                        "Lemma 20 (hypotheses)")]
    LII = _ln_inv(step.beta_II)
    if step.s == 1:
        rho = _lam_left(step.c, LII) / _a(target)
        domain_L, domain_what = _ln_inv(step.beta_I), "continuation uses Lemma 10(3b) at beta^I"
    else:
        rho = _lam_right(step.c, LII) / _a(target)
        domain_L, domain_what = LII, "halting uses Lemma 10(3b) at beta^II"
    out.append(ClaimVerdict("rho = lambda^l(c, beta^II)/p*" if step.s == 1 else "rho = lambda^r(c, beta^II)/(1-p*)",
                            _close_ball(step.rho, rho), "arb balls vs float64 (rel 1e-12)", "Lemma 20",
                            f"plan rho={step.rho!r}, exact {rho.str(15)}"))
    out.append(ClaimVerdict("c + 1 >= 2 ln(1/beta) (domain of Lemma 10(3b))", bool(_a(step.c + 1) >= 2 * domain_L),
                            "arb balls (128 bits)", "Lemma 20 / Lemma 10(3b)", domain_what))
    x = _a(gamma) * _a(step.Lambda)
    direct = x * (1 - _a(p_star)) > _a(p_star)
    flipped = x * (1 - _a(p_star)) <= _a(p_star)
    rule_ok = (step.s == 1 and bool(direct)) or (step.s == -1 and bool(flipped))
    out.append(ClaimVerdict("s_t follows the flipping rule", rule_ok, "arb balls (128 bits)",
        "Theorem 21 (flipping rule)",
                            f"s={step.s}"))
    return out


def _theorem21_claims(plan, step) -> list[ClaimVerdict]:
    g = plan.config.gtm
    eps, theta = _q(g.epsilon), _q(g.theta)
    inv_tau1 = theta * eps / (theta + 2)
    inv_tau2 = eps / (theta + 2)
    tau1, tau2 = 1 / inv_tau1, 1 / inv_tau2
    out = [
        ClaimVerdict("1/tau_1 + 2/tau_2 = eps", inv_tau1 + 2 * inv_tau2 == eps, "exact rationals",
            "Theorem 21 (privacy)",
                     f"1/tau_1={inv_tau1}, 2/tau_2={2 * inv_tau2}"),
        ClaimVerdict("the plan's floats: 1/tau_1 + 2/tau_2 <= eps", 1 / _q(plan.tau1) + 2 / _q(step.tau2) <= eps,
                     "exact rationals", "Lemma 17 / Theorem 21 (privacy)", f"tau1={plan.tau1!r}, tau2={step.tau2!r}"),
        ClaimVerdict("plan tau_1, tau_2 match (theta+2)/(theta eps), (theta+2)/eps",
                     _close(plan.tau1, tau1) and _close(step.tau2, tau2), "exact rationals vs float64 (rel 1e-12)",
                     "Theorem 21 (proof)", f"tau1={plan.tau1!r}, tau2={step.tau2!r}"),
    ]
    Lb = (4 / _a(g.beta)).log()
    Lt = (4 / _a(step.beta_t)).log()
    et = _a(step.eps_t)
    mu1 = _a(tau1) * Lb
    from_lemma19 = (et * (mu1 + _a(tau2) * Lt)).exp()
    ratio = et / _a(eps)
    closed = ((ratio * (1 + 2 / _a(theta))) * Lb).exp() * ((ratio * (2 + _a(theta))) * Lt).exp()
    out.append(ClaimVerdict("Lambda_t = exp(eps_t(mu_1 + tau_2 ln(4/beta_t))) = (4/beta)^{..}(4/beta_t)^{..}",
                            bool(from_lemma19.overlaps(closed)) and _close_ball(step.Lambda, closed),
                            "arb balls vs float64 (rel 1e-12)", "Theorem 21 / Lemma 19(2)",
                            f"plan Lambda={step.Lambda!r}, exact {closed.str(15)}"))
    good = (-(_a(plan.mu1) / _a(plan.tau1))).exp() + _a(g.beta) / 4
    out.append(ClaimVerdict("Pr[G^c] <= e^{-mu_1/tau_1} + beta/4 = beta/2", _close_ball(float(g.beta) / 2, good),
                            "arb balls vs float64 (rel 1e-12)", "Theorem 21 / Lemma 19(1)", f"bound {good.str(12)}"))
    return out


def _theorem23_claims(plan, step) -> list[ClaimVerdict]:
    g = plan.config.gtm
    eps_c, ch = _q(g.epsilon_c), _q(g.c_h)
    out = [ClaimVerdict("1/tau_1 = eps_C", _close(plan.tau1, 1 / eps_c), "exact rationals vs float64 (rel 1e-12)",
                        "Theorem 23 (proof)", f"tau1={plan.tau1!r}")]
    if step.eps_t == 0:
        out.append(ClaimVerdict("eps_t = 0: Lambda_t = 1", step.Lambda == 1, "exact", "Theorem 23"))
        return out
    Lt = (4 / _a(step.beta_t)).log()
    canc = _a(step.eps_t) * _a(step.tau2) * Lt
    out.append(ClaimVerdict("eps_t tau_2,t ln(4/beta_t) = 2/C_H",
        bool(abs(canc - _a(2 / ch)) < _a(FLOAT_REL_TOL) * _a(2 / ch)),
                            "arb balls vs float64 (rel 1e-12)", "Theorem 23 (exact cancellation)",
                            f"value {canc.str(15)}"))
    Lb = (4 / _a(g.beta)).log()
    closed = ((_a(step.eps_t) / _a(eps_c)) * Lb).exp() * (2 / _a(ch)).exp()
    out.append(ClaimVerdict("Lambda_t = (4/beta)^{eps_t/eps_C} e^{2/C_H}", _close_ball(step.Lambda, closed),
                            "arb balls vs float64 (rel 1e-12)", "Theorem 23",
                            f"plan {step.Lambda!r}, exact {closed.str(15)}"))
    return out


def check_plan_identities(plan, t: int, step=None) -> InstantiationResult:
    """Rigorously check the parameter identities and preconditions of step ``t`` of ``plan``.

    ``step`` overrides ``plan.step(t)`` (to check a step table produced elsewhere).
    """
    step = plan.step(t) if step is None else step
    g = plan.config.gtm
    claims: list[ClaimVerdict] = []
    if plan.parameterization in ("theorem21", "exact_noise"):  # exact_noise keeps Theorem 21's noise and Lambda_t
        claims += _theorem21_claims(plan, step)
    elif plan.parameterization == "theorem23":
        claims += _theorem23_claims(plan, step)
    claims += _lemma11_claims(step, g.gamma)
    claims += _lemma20_claims(step, g.gamma, step.p_star)
    return InstantiationResult(t=t, parameterization=plan.parameterization, claims=tuple(claims))
