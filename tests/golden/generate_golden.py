"""Generate tests/golden/formulas.json: golden values of every formula in gtm_core.formulas.

    python tests/golden/generate_golden.py          # rewrites formulas.json
    python tests/golden/generate_golden.py --check  # exit 1 if the file would change

Each formula gets >= 20 parameter points (hand-picked paper examples plus points
drawn from a *seeded* generator over the parameter box), evaluated with mpmath at
50 digits and stored as strings with 45 significant digits. Arguments are stored as
decimal strings and are taken *exactly* by the mpmath path; the float64 path gets
float(arg).

Domain restrictions (documented in the JSON "note" of the formula):

* lambda_right, base_rate_below: points with |x + 1 - 2 ln(1/alpha)| >= (x + 1)/4.
  Near the validity boundary x + 1 = 2 ln(1/alpha) the value crosses zero and is
  ill-conditioned in ln(1/alpha) (condition number ~ sqrt(2yL)/(2|lambda^r|)); a
  float64 input rounding of alpha alone moves it by more than 1e-12 relative.
  tests/gtm_core/test_formulas_golden.py pins that loss and its explanation.
* theorem29_alpha_sum: points whose value is not smaller than 1e-3 times the sum of
  the magnitudes of its terms (the bound crosses zero; same reason).
* corollary30_rejection_threshold: points at least 1e-6 away from the case
  boundaries (p* = 1/2, Lambda_0 (1 - p*) = 1/2), where the piecewise formula's
  branch is decided by the last bit.

The values are produced by gtm_core.formulas itself (so they pin regressions);
independent checks of each formula's defining property live in
tests/gtm_core/test_formulas_golden.py.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from pathlib import Path

import mpmath

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gtm_core import formulas as F  # noqa: E402

OUT = Path(__file__).with_name("formulas.json")
DPS = 50
STORED_DIGITS = 45
SEED = 20260530


def _d(x: float, sig: int = 6) -> str:
    """A float rounded to `sig` significant digits, as a decimal string."""
    return f"{x:.{sig}g}"


class Box:
    """Seeded samplers for the parameter box."""

    def __init__(self, seed: int):
        self.r = random.Random(seed)

    def logu(self, lo: float, hi: float) -> str:
        return _d(math.exp(self.r.uniform(math.log(lo), math.log(hi))))

    def u(self, lo: float, hi: float) -> str:
        return _d(self.r.uniform(lo, hi))

    def i(self, lo: int, hi: int) -> int:
        return self.r.randint(lo, hi)

    def logi(self, lo: int, hi: int) -> int:
        return int(round(math.exp(self.r.uniform(math.log(lo), math.log(hi)))))

    def gamma(self) -> str:
        return _d(1 + math.exp(self.r.uniform(math.log(1e-3), 0)))

    def p(self) -> str:
        return self.u(0.001, 0.999)

    def beta(self) -> str:
        return self.logu(1e-12, 0.9)


# ---------------------------------------------------------------------------
# Parameter points per formula (arguments in the function's positional order)
# ---------------------------------------------------------------------------


def _mp(x):
    return mpmath.mpf(x) if isinstance(x, str) else x


def _lambda_right_well_conditioned(x, alpha) -> bool:
    with mpmath.workdps(30):
        y = mpmath.mpf(x) + 1
        L = -mpmath.log(mpmath.mpf(alpha))
        return abs(y - 2 * L) >= y / 4


def _theorem29_well_conditioned(eps, delta, beta, T) -> bool:
    with mpmath.workdps(30):
        e, d, b, TT = (mpmath.mpf(v) for v in (eps, delta, beta, T))
        dp = d / mpmath.expm1(e)
        if not b + dp < mpmath.mpf(1) / 2:
            return False
        t1 = mpmath.log(TT / (2 * (b + TT * dp))) / e
        t2 = mpmath.log(1 / (2 * (b + dp))) / e
        value = t1 + t2 - 2
        return abs(value) >= 1e-3 * (abs(t1) + abs(t2) + 2)


def _corollary30_away_from_boundaries(p_star, L0) -> bool:
    with mpmath.workdps(30):
        p, L = mpmath.mpf(p_star), mpmath.mpf(L0)
        return abs(p - 0.5) > 1e-6 and abs(L * (1 - p) - 0.5) > 1e-6 and abs(L - 1) > 1e-6


def points() -> dict[str, dict]:
    b = Box(SEED)
    P: dict[str, dict] = {}

    def add(name, args, pts, note=None):
        P[name] = {"args": args, "points": pts, **({"note": note} if note else {})}

    add("zeta", [], [[]], "no parameters: one point")

    ts = [1, 2, 3, 4, 5, 7, 10, 20, 50, 100, 365, 1000, 4096, 10**4, 12345, 10**5, 10**6,
          10**7, 123456789, 10**9, 10**12]
    add("omega", ["t"], [[t] for t in ts])
    add("step_failure_probability", ["t", "beta"],
        [[1, "0.05"], [10, "0.05"], [1000, "0.05"], [1, "0.5"]]
        + [[b.logi(1, 10**8), b.beta()] for _ in range(18)])

    ll = [["282", "0.0076450609021314194"], ["0", "0.5"], ["0", "1e-10"], ["1", "0.3"]]
    ll += [[b.logu(0.1, 1e6), b.logu(1e-30, 0.9)] for _ in range(14)]
    ll += [[str(b.logi(1, 10**5)), b.logu(1e-12, 0.5)] for _ in range(6)]
    add("lambda_left", ["x", "alpha"], ll)

    lr = [["282", "0.0076450609021314194"], ["100", "0.001"], ["10", "0.5"], ["3", "0.5"]]
    while len(lr) < 26:
        x, a = b.logu(0.5, 1e6), b.logu(1e-30, 0.9)
        if _lambda_right_well_conditioned(x, a):
            lr.append([x, a])
    note_lr = ("restricted to |x+1-2ln(1/alpha)| >= (x+1)/4: near the validity boundary the "
               "value crosses 0 and is ill-conditioned in ln(1/alpha)")
    add("lambda_right", ["x", "alpha"], lr, note_lr)

    rtv = [["282", "0.0076450609021314194"], ["0", "0.5"], ["1", "0.5"], ["8", "0.01"],
           ["9", "0.01"]]
    rtv += [[b.logu(0.1, 1e3), b.logu(1e-30, 0.9)] for _ in range(20)]
    add("right_tail_valid", ["x", "alpha"], rtv)

    l11 = [["0.0076450609021314194", "0.0076450609021314194", "1.5"],
           ["0.005096707268087613", "0.005096707268087613", "1.5"],
           ["0.01", "0.001", "2"], ["0.001", "0.01", "1.01"]]
    l11 += [[b.logu(1e-30, 0.9), b.logu(1e-30, 0.9), b.gamma()] for _ in range(20)]
    add("lemma11_root", ["alpha", "beta", "gamma"], l11)
    add("lemma11_threshold", ["alpha", "beta", "gamma"], l11,
        "integer; the float64 path (dps=None) may be off by one only at exact ties")

    bra = [[282, "0.0076450609021314194", "0.5"]]
    bra += [[b.logi(1, 10**6), b.logu(1e-20, 0.5), b.p()] for _ in range(21)]
    add("base_rate_above", ["c", "beta_II", "p_star"], bra)

    brb = [[282, "0.0076450609021314194", "0.05"]]
    while len(brb) < 22:
        c, a, p = b.logi(1, 10**6), b.logu(1e-20, 0.5), b.p()
        if _lambda_right_well_conditioned(c, a):
            brb.append([c, a, p])
    add("base_rate_below", ["c", "beta_II", "p_star"], brb, note_lr)

    lg = [["2.9957322735539909", "1", "0.05", "0.25"]]
    lg += [[b.logu(0.01, 100), b.logu(0.01, 100), b.beta(), b.u(0, 1)] for _ in range(21)]
    add("lemma19_good_event_failure", ["mu1", "tau1", "beta", "c_G"], lg)

    et = [["1", "1"], ["0.5", "2"], ["10", "0.1"]]
    et += [[b.logu(1e-3, 100), b.logu(1e-3, 100)] for _ in range(19)]
    add("theorem21_tau1", ["epsilon", "theta"], et)
    add("theorem21_tau2", ["epsilon", "theta"], et)
    etb = [e + ["0.05"] for e in et[:3]] + [e + [b.beta()] for e in et[3:]]
    add("theorem21_mu1", ["epsilon", "theta", "beta"], etb)

    nr = [["0.1", "1", "1", "0.05", "0.030580243608525678"],
          ["0.01", "1", "1", "0.05", "0.030580243608525678"], ["0", "1", "1", "0.05", "0.01"]]
    for _ in range(20):
        beta = b.beta()
        beta_t = _d(float(beta) * math.exp(b.r.uniform(math.log(1e-8), 0)))
        nr.append([b.logu(1e-4, 1), b.logu(0.1, 10), b.logu(0.05, 20), beta, beta_t])
    add("theorem21_noise_range", ["eps_t", "epsilon", "theta", "beta", "beta_t"], nr)

    rt = [["0.5", "1.5", "16.066183067642587"], ["0.95", "1.5", "1.3200527042206838"],
          ["0.5", "1.5", "1"], ["0.9", "2", "1"]]
    rt += [[b.p(), b.gamma(), b.logu(1, 1e3)] for _ in range(16)]
    rt += [[b.u(0.9, 0.999), b.gamma(), b.logu(1, 3)] for _ in range(6)]  # flipped branch
    add("rejection_threshold", ["p_star", "gamma", "Lambda"], rt)
    add("direction", ["p_star", "gamma", "Lambda"], rt)

    ps = [["1", "0.1", "1"]] + [[b.logu(0.01, 10), b.logu(1e-4, 1), b.logu(0.05, 20)]
                                for _ in range(21)]
    add("pareto_shape", ["epsilon", "eps_t", "theta"], ps)

    at = [[1, "1", "0.1", "1", "1.5", "0.05", "0.5", "2"]]
    at += [[b.logi(1, 10**6), b.logu(0.1, 10), b.logu(1e-4, 1), b.logu(0.1, 10), b.gamma(),
            b.logu(1e-9, 0.3), b.p(), b.logu(1, 20)] for _ in range(21)]
    add("theorem21_A_tilde",
        ["t", "epsilon", "eps_t", "theta", "gamma", "beta", "p_star", "C_A"], at)

    lb = [[1, "1.5", "0.05", "0.030580243608525678", "0.5", "16.066183067642587", "2"],
          [3, "2", "0.3", "0.1", "0.01", "1", "0.0001"]]  # the ln(4/beta_t) branch
    for _ in range(20):
        beta = b.logu(1e-9, 0.3)
        beta_t = _d(float(beta) * math.exp(b.r.uniform(math.log(1e-8), 0)))
        lb.append([b.logi(1, 10**6), b.gamma(), beta, beta_t, b.p(), b.logu(1, 1e3),
                   b.logu(1e-3, 20)])
    add("lemma22_lambda_bar",
        ["t", "gamma", "beta", "beta_t", "p_star", "Lambda", "C_A"], lb)

    ec = [["1"], ["0.1"], ["3"]] + [[b.logu(1e-3, 100)] for _ in range(19)]
    add("theorem23_tau1", ["epsilon_c"], ec)
    add("theorem23_mu1", ["epsilon_c", "beta"], [e + [b.beta()] for e in ec])
    t2 = [["0.1", "2", "0.030580243608525678"], ["0", "2", "0.01"]]
    t2 += [[b.logu(1e-5, 1), b.logu(0.1, 10), b.logu(1e-15, 0.5)] for _ in range(20)]
    add("theorem23_tau2", ["eps_t", "c_h", "beta_t"], t2, "eps_t = 0 gives +inf")
    n23 = [["0.1", "1", "2", "0.05"], ["0", "1", "2", "0.05"]]
    n23 += [[b.logu(1e-5, 1), b.logu(0.05, 10), b.logu(0.1, 10), b.beta()] for _ in range(20)]
    add("theorem23_noise_range", ["eps_t", "epsilon_c", "c_h", "beta"], n23,
        "eps_t = 0 gives 1")
    ex = [[True, "0.1", "1", "2", "0.030580243608525678"],
          [False, "0.1", "1", "2", "0.030580243608525678"]]
    ex += [[b.r.random() < 0.6, b.logu(1e-5, 1), b.logu(0.05, 10), b.logu(0.1, 10),
            b.logu(1e-15, 0.5)] for _ in range(20)]
    add("theorem23_expost_loss", ["halted", "eps_t", "epsilon_c", "c_h", "beta_t"], ex)

    pc = [["0.1", "1e-6", "1"], ["1", "0.5", "1"], ["0.01", "0.9", "2"]]
    pc += [[b.logu(1e-4, 5), b.logu(1e-12, 0.9), b.r.choice(["1", "1.5", "2", "3.25"])]
           for _ in range(19)]
    add("purification_crossover", ["eps_t", "delta_t", "c"], pc)
    pp = [["0.5", "0.1"], ["0", "0.25"], ["1", "0.5"]]
    pp += [[b.u(0, 1), b.u(0, 0.5)] for _ in range(19)]
    add("purified_probability", ["p", "phi"], pp)
    sb = [["0.1", "1e-6"]] + [[b.logu(1e-4, 5), b.logu(1e-12, 0.9)] for _ in range(21)]
    add("purification_slack_bound", ["eps_t", "delta_t"], sb)
    add("lower_bound_delta_prime", ["epsilon", "delta"],
        [["1", "0"], ["1", "1e-6"]] + [[b.logu(1e-3, 10), b.logu(1e-15, 0.1)] for _ in range(20)])

    t29 = []
    while len(t29) < 22:
        pt = [b.logu(0.01, 10), b.r.choice(["0", b.logu(1e-15, 1e-3)]), b.logu(1e-12, 0.3),
              b.logi(1, 10**9)]
        if _theorem29_well_conditioned(*pt):
            t29.append(pt)
    add("theorem29_alpha_sum", ["epsilon", "delta", "beta", "T"], t29,
        "restricted to |value| >= 1e-3 (|terms|): the bound crosses zero there")

    c30 = [["0.1", "1", "0", "0.05", 1000]]
    c30 += [[b.logu(1e-3, 1), b.logu(0.1, 10), b.r.choice(["0", b.logu(1e-15, 1e-3)]),
             b.logu(1e-12, 0.3), b.logi(1, 10**9)] for _ in range(21)]
    add("corollary30_Lambda0", ["eps_1", "epsilon", "delta", "beta", "T"], c30)

    odds = [["0.5", "0.020747512457060763"], ["0.95", "0.9009960471834486"]]
    for _ in range(20):
        p = b.p()
        odds.append([p, _d(float(p) * b.r.uniform(0.001, 1))])
    add("corollary30_odds_ratio", ["p_star", "p_bar"], odds)

    crt = [["0.5", "2"], ["0.25", "1.5"], ["0.9", "3"], ["0.75", "1.2"], ["0.6", "0.5"]]
    while len(crt) < 24:
        pt = [b.p(), b.logu(0.5, 1e3)]
        if _corollary30_away_from_boundaries(*pt):
            crt.append(pt)
    add("corollary30_rejection_threshold", ["p_star", "Lambda0"], crt,
        "points at least 1e-6 away from the case boundaries")

    t31 = [["0.5", "0.1", "1", "0", "0.0076450609021314194"]]
    t31 += [[b.u(0.001, 0.5), b.logu(1e-3, 1), b.logu(0.01, 10),
             b.r.choice(["0", b.logu(1e-15, 1e-3)]), b.logu(1e-12, 0.25)] for _ in range(21)]
    add("theorem31_expected_evaluations",
        ["p_star", "eps_1", "epsilon", "delta", "beta_II"], t31)

    pt_ = [["2", "1.5"], ["0.5", "3"], ["1", "2"]]
    pt_ += [[b.logu(1, 1e6), b.logu(0.05, 50)] for _ in range(19)]
    add("pareto_tail", ["u", "sigma"], pt_)
    pm = [["1", "3"], ["2", "2"], ["-1", "0.5"], ["0.5", "0.7"]]
    pm += [[b.u(-5, 5), b.logu(0.05, 50)] for _ in range(18)]
    add("pareto_moment", ["k", "sigma"], pm, "k >= sigma gives +inf")
    ptm = [["3", "100"], ["1", "100"], ["1.000001", "1e6"], ["0.999999", "1e6"], ["2", "1"]]
    ptm += [[b.logu(0.05, 50), b.logu(1, 1e8)] for _ in range(17)]
    add("pareto_truncated_mean", ["sigma", "W"], ptm)
    psm = [["2", "100"], ["1.999999", "1e6"], ["2.000001", "1e6"], ["3", "10"], ["1.5", "1"]]
    psm += [[b.logu(0.05, 50), b.logu(1, 1e8)] for _ in range(17)]
    add("pareto_truncated_second_moment", ["sigma", "W"], psm)
    # appended last so that the seeded draws of every earlier formula are unchanged
    el = [["1", "2", "0.1", "3", "2", "13"], ["-1", "2", "0.1", "3", "2", "13"], ["1", "1", "0", "3", "2", "1"],
          ["1", "1.5", "0.5", "1", "inf", "2"], ["-1", "1.5", "0.5", "1", "inf", "2"],
          ["1", "1", "0.5", "1", "2", "0"], ["-1", "1", "0.5", "3", "1", "0"]]
    el += [[b.r.choice(["1", "-1"]), b.logu(1e-3, 10), b.logu(1e-3, 1), b.logu(0.5, 50), b.logu(0.05, 50),
            b.logu(0.1, 30)] for _ in range(16)]
    add("expected_lambda", ["s", "rho", "eps_t", "tau1", "tau2", "mu1"], el,
        "+inf when the needed Pareto moment diverges (sigma <= 1); tau2 = inf means no eta_2")
    return P


# ---------------------------------------------------------------------------


def evaluate(name: str, args: list, dps: int):
    fn = getattr(F, name)
    if name == "zeta":
        return fn(dps=dps)
    return fn(*args, dps=dps)


def encode(value) -> str | int | bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value
    v = mpmath.mpf(value)
    if mpmath.isinf(v):
        return "inf" if v > 0 else "-inf"
    return mpmath.nstr(v, STORED_DIGITS, min_fixed=-5, max_fixed=5, strip_zeros=False)


def build() -> dict:
    table = {}
    for name, spec in points().items():
        rows = []
        for args in spec["points"]:
            with mpmath.workdps(DPS):
                value = evaluate(name, args, DPS)
                if not isinstance(value, (bool, int)) and mpmath.isfinite(value) and value != 0:
                    # every golden point must be representable in float64 (no overflow/underflow)
                    if not 1e-300 < abs(value) < 1e300:
                        raise SystemExit(f"{name}{tuple(args)} = {value} is outside float64 range")
                rows.append({"args": args, "value": encode(value)})
        table[name] = {k: v for k, v in spec.items() if k != "points"} | {"points": rows}
    missing = sorted(set(F.__all__) - set(table))
    if missing:
        raise SystemExit(f"no golden points for: {', '.join(missing)}")
    return {
        "about": "Golden values of gtm_core.formulas, generated by tests/golden/generate_golden.py",
        "dps": DPS,
        "stored_digits": STORED_DIGITS,
        "seed": SEED,
        "formulas": table,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if formulas.json is stale")
    ns = ap.parse_args(argv)
    text = json.dumps(build(), indent=1) + "\n"
    if ns.check:
        same = OUT.exists() and OUT.read_text() == text
        print("formulas.json is up to date" if same else "formulas.json is STALE")
        return 0 if same else 1
    OUT.write_text(text)
    n = sum(len(v["points"]) for v in json.loads(text)["formulas"].values())
    print(f"wrote {OUT} ({n} points)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
