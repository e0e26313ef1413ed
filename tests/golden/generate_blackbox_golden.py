"""Regenerate tests/golden/blackbox.json: Algorithm 4's parameter formulas at 50 digits (mpmath).

    python tests/golden/generate_blackbox_golden.py
"""

import json
from pathlib import Path

import mpmath

from gtm_core.blackbox import params as P

CASES = [
    {"epsilon": "1", "beta": "0.05", "M": 64, "d": 1},
    {"epsilon": "0.1", "beta": "0.01", "M": 1000, "d": 2},
    {"epsilon": "2", "beta": "0.1", "M": 5, "d": 1},
    {"epsilon": "10", "beta": "0.5", "M": 5, "d": 1},
    {"epsilon": "0.5", "beta": "0.2", "M": 105, "d": 2},
]
DPS = 50


def row(c):
    e, b, M, d = c["epsilon"], c["beta"], c["M"], c["d"]
    s = lambda x: mpmath.nstr(x, 45, min_fixed=-50, max_fixed=50)  # noqa: E731
    e0 = P.eps0(e, dps=DPS)
    d0 = P.delta0(e, b, M, dps=DPS)
    R = P.tlap_radius(e0, d0, dps=DPS)
    K = P.depth_margin(e, b, M, d, dps=DPS)
    return {**c, "eta": s(P.eta(b, dps=DPS)), "beta0": s(P.beta0(b, dps=DPS)), "eps0": s(e0), "delta0": s(d0),
            "Delta": s(P.utility_margin(e, b, M, dps=DPS)), "K": K, "R": s(R),
            "R_definition_a3": s(P.tlap_radius_definition_a3(e0, d0, dps=DPS)),
            "tlap_normaliser": s(P.tlap_normaliser(e0, R, dps=DPS)), "locality": P.locality(R, K, dps=DPS)}


if __name__ == "__main__":
    out = Path(__file__).with_name("blackbox.json")
    out.write_text(json.dumps({"dps": DPS, "cases": [row(c) for c in CASES]}, indent=2) + "\n")
    print(f"wrote {out}")
