"""OpenDP's Liu-Talwar private selection as a peer and as a target.

    python -m benchmarks.bench_opendp_selection [--n 4000] [--alpha 0.01] [--audit-seconds 60]
        [--out benchmarks/results/opendp_selection.json]

1. **Peer** (the rows ``gtm bench`` now carries, :func:`audits.bench.run.run_cell`): on the quick grid
   (eps = 1, eps_1/eps = 0.1, p* in {0.1, 0.5, 0.9}, T in {10, 100, 1000}, beta = 0.05) the GTM
   planners, our Liu-Talwar baseline (ExtendedAboveThreshold), Liu-Talwar private selection calibrated
   exactly (``liu-talwar-selection``) and OpenDP 0.16's ``make_select_private_candidate`` called with
   that design's gamma (``opendp-select-private-candidate``): measured rejection threshold p_bar,
   halting rate at p*, evaluations per step, at equal total eps and beta.
2. **G-tests** (alpha ``--alpha``, seeds 1, 2, 3, ``--n`` runs each; OpenDP's stopping coins cannot be
   seeded): our selection's output law vs OpenDP's on the same scorer (k = 5 evaluations, tau = 4,
   gamma = 0.3, p = 0.5) - (a) OpenDP called with stop_probability = gamma (as documented),
   (b) OpenDP called with the stop probability that makes it stop with gamma (compensated),
   (c) power companion: a perturbed baseline (stopping with 0.25 instead of 0.3) against (b).
3. **Target**: the 2 eps claim of OpenDP's selection audited
   (:func:`audits.integrations.opendp_audit.audit_measurement`, alpha = 0.05) on the catalogue's
   scorer (a count plus Laplace(1) noise), as documented and compensated.

Writes the JSON (machine information, load average) and a markdown table (same stem, ``.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from audits.bench.run import BenchSettings, run_cell  # noqa: E402
from audits.integrations.opendp_audit import audit_measurement  # noqa: E402
from audits.integrations.opendp_catalogue import FEATURES, private_candidate_scorer  # noqa: E402
from audits.integrations.opendp_selection import compare_output_laws, compensated_stop_probability  # noqa: E402
from benchmarks.machine import machine_info  # noqa: E402
from gtm_core.baselines.liu_talwar_selection import LiuTalwarSelection  # noqa: E402

RESULTS = Path(__file__).parent / "results"
CELLS = [(1.0, 0.1, ps, T) for ps in (0.1, 0.5, 0.9) for T in (10, 100, 1000)]
KEEP = ("gtm-theorem21", "gtm-theorem23", "gtm-exact", "gtm-exact_noise", "liu-talwar", "liu-talwar-selection",
        "opendp-select-private-candidate")


def peer_table(seed: int) -> list[dict]:
    settings = BenchSettings.quick(exact_max_T=0, seed=seed)
    out = []
    for i, (e, r, ps, T) in enumerate(CELLS):
        cell = run_cell(e, r, ps, T, settings, np.random.default_rng(np.random.SeedSequence([seed, i])))
        for row in cell["rows"]:
            if row["mechanism"] in KEEP:
                out.append({"epsilon": e, "eps_1": e * r, "beta": settings.beta, "p_star": ps, "T": T,
                            "mechanism": row["mechanism"], "guarantee": row["guarantee"],
                            "p_bar": row["p_bar"], "claimed_p_bar": row["claimed_p_bar"],
                            "halt_rate_at_p_star": row["halt_rate_at_p_star"], "evals_mean": row["evals_mean"],
                            "method": row["method"], "note": row.get("note", "")})
    return out


def g_tests(n: int, alpha: float) -> dict:
    design = dict(epsilon=1.0, eps_1=0.1, p_star=0.5, beta=0.05, tau=4, gamma=0.3)
    ours = LiuTalwarSelection(**design)
    perturbed = LiuTalwarSelection(**design, stop_rate=0.25)
    comp = compensated_stop_probability(0.3)
    runs = {
        "as_documented": ("ours (gamma 0.3) vs OpenDP(stop_probability=0.3)", ours, None, 1),
        "compensated": (f"ours (gamma 0.3) vs OpenDP(stop_probability={comp:.6g}), which stops with 0.3", ours, comp, 2),
        "power_companion": ("perturbed baseline (stops with 0.25) vs OpenDP(compensated, stops with 0.3)", perturbed,
                            comp, 3),
    }
    out = {"scorer": "k = 5 evaluations of a Bernoulli(0.5) mechanism, score = number of +1s, tau = 4", "p": 0.5,
           "n": n, "alpha": alpha, "tests": {}}
    for key, (what, sel, stop, seed) in runs.items():
        t0 = time.monotonic()
        g = compare_output_laws(sel, 0.5, n, seed=seed, alpha=alpha, stop_probability=stop)
        out["tests"][key] = {"what": what, "seed": seed, **g.to_dict(), "seconds": time.monotonic() - t0}
        print(f"G-test {key}: G = {g.statistic:.2f}, p = {g.p_value:.3g}, rejected = {g.rejected}", flush=True)
    out["expected"] = {"as_documented": True, "compensated": False, "power_companion": True}
    out["as_expected"] = all(out["tests"][k]["rejected"] == v for k, v in out["expected"].items())
    return out


def audits(seconds: float) -> list[dict]:
    import opendp.prelude as dp

    rows = []
    for label, stop in (("as documented: stop_probability 0.3", 0.3),
                        ("compensated: stops with 0.05", compensated_stop_probability(0.05))):
        m = dp.c.make_select_private_candidate(private_candidate_scorer(), stop_probability=stop, threshold=2.0)
        t0 = time.monotonic()
        r = audit_measurement(m, seconds=seconds, seed=1, confidence=0.95)
        rows.append({"what": label, "stop_probability": stop, "claim": m.map(1), "verdict": r.verdict,
                     "epsilon_lower_bound": r.epsilon_lower_bound, "samples": r.to_dict()["samples"],
                     "wall_seconds": time.monotonic() - t0, "poisson_entropy": r.poisson_entropy})
        print(f"audit {label}: {r.verdict}, bound {r.epsilon_lower_bound:.3f} (claim {m.map(1):g})", flush=True)
    return rows


def markdown(out: dict) -> str:
    m = out["machine"]
    lines = ["# OpenDP's Liu-Talwar private selection: peer and target", "", f"Command: `{out['command']}`", "",
             f"Machine: {m.get('platform')}, {m.get('cpu_count')} cores, OpenDP {out['opendp']}; load average "
             f"{' '.join(out['loadavg_before'])} before, {' '.join(out['loadavg_after'])} after; {m.get('utc')}.", "",
             "## On the testing task (eps = 1, eps_1 = 0.1, beta = 0.05; constant streams)", "",
             "p_bar = largest p whose false-halt rate (within T) stays <= beta; halt@p* = Pr[halt at step 1 | p*] "
             "(Type II needs >= 0.95); evaluations per step on the null stream. The selection rows repeat one fixed "
             "mechanism (no horizon, total evaluations / T per step): not a stream monitor, shown for scale.", "",
             "| p* | T | mechanism | p_bar | halt@p* | evals/step |", "|---|---|---|---|---|---|"]
    for r in out["peer"]:
        lines.append(f"| {r['p_star']:g} | {r['T']} | {r['mechanism']} | {r['p_bar']:.4g} | "
                     f"{r['halt_rate_at_p_star']:.4g} | {r['evals_mean']:.4g} |")
    g = out["g_tests"]
    lines += ["", "## G-tests: our selection's output law vs OpenDP's on the same scorer", "",
              f"{g['scorer']}, p = {g['p']}, n = {g['n']} runs per side, alpha = {g['alpha']}.", "",
              "| test | G | dof | p-value | rejected | expected |", "|---|---|---|---|---|---|"]
    for k, t in g["tests"].items():
        lines.append(f"| {t['what']} (seed {t['seed']}) | {t['statistic']:.2f} | {t['dof']} | {t['p_value']:.3g} | "
                     f"{t['rejected']} | {g['expected'][k]} |")
    lines += ["", "## The 2 eps claim audited (alpha = 0.05)", "",
              "| selection | claim | lower bound | verdict | samples | wall s |", "|---|---|---|---|---|---|"]
    for a in out["audits"]:
        lines.append(f"| {a['what']} | {a['claim']:g} | {a['epsilon_lower_bound']:.3f} | {a['verdict']} | "
                     f"{a['samples']} | {a['wall_seconds']:.1f} |")
    lines += ["", "OpenDP 0.16 stops with probability 1 - exp(1/ln(1 - stop_probability)), not stop_probability: "
              "`python benchmarks/results/opendp_select_stop_probability_reproducer.py`."]
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4000)
    ap.add_argument("--alpha", type=float, default=0.01)
    ap.add_argument("--audit-seconds", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=20261130)
    ap.add_argument("--out", default=str(RESULTS / "opendp_selection.json"))
    args = ap.parse_args(argv)
    import opendp.prelude as dp
    from importlib.metadata import version

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    dp.enable_features(*FEATURES)  # the benchmark is the user: it enables what its measurements need
    before = machine_info().get("loadavg", [])
    out = {"benchmark": "opendp_selection", "opendp": version("opendp"),
           "command": "python -m benchmarks.bench_opendp_selection " + " ".join(sys.argv[1:] if argv is None else argv),
           "peer": peer_table(args.seed), "g_tests": g_tests(args.n, args.alpha), "audits": audits(args.audit_seconds)}
    out.update(machine=machine_info(), loadavg_before=before, loadavg_after=machine_info().get("loadavg", []))
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2, default=str) + "\n")
    path.with_suffix(".md").write_text(markdown(out))
    print(f"wrote {path} and {path.with_suffix('.md')}")


if __name__ == "__main__":
    main()
