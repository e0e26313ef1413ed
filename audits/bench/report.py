"""Readable output of ``gtm bench``: the Markdown report and the p_bar / evaluations plots
(shared style and fixed mechanism colours of :mod:`audits.plotting`)."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

from ..plotting import NEUTRAL, figure, legend_outside, save_png, style_for
from .run import cell_key, row_of


def _fmt(x, digits=3) -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and math.isinf(x):
        return "never"
    if x == 0:
        return "0"
    return f"{x:.{digits}g}"


def bench_markdown(result: dict) -> str:
    """The readable benchmark report (Markdown): settings, done-when checks and one table per cell."""
    lines = _header_lines(result) + _checks_lines(result["checks"])
    lines.append("")
    for e in result.get("errors", []):
        lines.append(f"* **cell failed**: {e['cell']}: {e['error']}")
    lines.append("")
    for cell in result["cells"]:
        if "error" not in cell:
            lines += _cell_lines(cell)
    return "\n".join(lines) + "\n"


def _header_lines(result: dict) -> list[str]:
    """Title, settings and the column legend."""
    s = result["settings"]
    lines = ["# gtm bench: GTM and its peers on the same workload", "",
             f"beta = {s['beta']}, GTM theta = {s['theta']}, gamma = {s['gamma']}; seed {s['seed']}; "
             f"{len(result['cells'])}/{result['cells_total']} cells in {result['seconds']:.0f} s"
             + ("" if result["complete"] else " (stopped by the time budget)") + ".", "",
             "Columns: *claimed p_bar* = the mechanism's own accuracy statement at step T; *p_bar* = measured "
             "rejection threshold (largest constant p whose false-halt rate over T steps is <= beta; method column), "
             "with its 95% interval in brackets for simulated thresholds, or, for the peers solved by quadrature, "
             "*(sim r [lo, hi])* = the false-halt rate r measured by simulating the peer at that p_bar (its 95% "
             "Clopper-Pearson interval [lo, hi]), an independent re-check that should cover the target rate "
             "(beta; beta/2 for Cohen and Ghazi); "
             "*halt@p\\** = Pr[halt at step 1 | p_1 = p*] (Type II check); *p_halt* = smallest p halting at step 1 "
             "w.p. >= 1 - beta; evaluations per step on the null stream (mean / 99th percentile across runs); "
             "*/Thm31* = mean evaluations over the Theorem 31 floor. GTM theorem23 is an ex-post guarantee tuned so "
             "that halting at the horizon costs exactly eps (so it is eps-DP on streams of length <= T). "
             "Liu-Talwar is (eps, 1e-6)-DP and halts reliably only well above p*; AboveThreshold is an oracle "
             "baseline (reads f_t); ThresholdSelect spends eps per step. Peers whose accuracy holds w.p. 1 - 2 beta "
             "(Cohen, Ghazi) are run with beta/2.", ""]
    return lines


def _checks_lines(ck: dict) -> list[str]:
    """The done-when checks: Table 1, the exact-vs-theorem21 median cell, Theorem 31 ratios, claims."""
    t1 = ck["table1"]
    lines = ["## Done-when checks", "",
             f"* Table 1 (GTM p_bar >= every comparable peer's, equal eps and beta): theorem21 wins "
             f"{t1['theorem21_wins']}/{t1['comparisons']}, best GTM variant wins {t1['best_gtm_wins']}/{t1['comparisons']}."]
    lines.append(f"* Claimed thresholds (each mechanism's own statement): theorem21's claimed p_bar >= the peer's claimed "
                 f"p_bar in {t1['theorem21_claim_wins']}/{t1['comparisons']} comparisons.")
    for c in t1["losses"]:
        lines.append(f"  * not held at {c['cell']} vs {c['peer']}: best GTM ({c['best_gtm']}) p_bar "
                     f"{_fmt(c['best_gtm_p_bar'], 4)} < {_fmt(c['peer_p_bar'], 4)} "
                     f"(peer halts at step 1 w.p. >= 1-beta only from p = {_fmt(c['peer_p_halt'], 4)})")
    m = ck["median_cell_exact_vs_theorem21"]
    if m is None:
        lines.append("* Exact vs theorem21 on the median cell: the median cell (eps=1, eps1/eps=0.1, p*=0.5, T=100) "
                     "is not in this run's grid.")
    else:
        parts = []
        for name, v in m["variants"].items():
            if v["available"]:
                parts.append(f"gtm-{name} {_fmt(v['evals'])} (ratio {v['ratio']:.3f}"
                             + ("" if v["same_claimed_p_bar"] else ", claimed p_bar differs: not eligible") + ")")
            else:
                parts.append(f"gtm-{name}: {v['note']}")
        if m["best_variant"] is None:
            verdict = m["note"]
        else:
            verdict = (f"best certified ratio gtm-{m['best_variant']} {m['ratio']:.3f} "
                       f"({'<=' if m['passed'] else '>'} {m['target']:g})")
        lines.append(f"* Exact-calibrated vs theorem21 on the median cell (equal eps, beta and claimed p_bar; "
                     f"mean evaluations/step): theorem21 {_fmt(m['theorem21_evals'])}; " + "; ".join(parts)
                     + f". Target judged on the best: {verdict}.")
    for variant in sorted({r["mechanism"] for r in ck["theorem31_ratios"]}):
        rs = [r["ratio"] for r in ck["theorem31_ratios"] if r["mechanism"] == variant and not r["infinite_mean"]]
        inf = sum(r["infinite_mean"] for r in ck["theorem31_ratios"] if r["mechanism"] == variant)
        if rs:
            lines.append(f"* {variant}: measured evaluations per step / Theorem 31 floor: min {_fmt(min(rs))}, "
                         f"median {_fmt(statistics.median(rs))}, max {_fmt(max(rs))} over {len(rs)} cells"
                         + (f"; {inf} cells have E[N_t] = inf (Pareto shape <= 1)" if inf else "")
                         + " (every cell in the tables, column /Thm31).")
    v = ck["claims_hold"]["violations"]
    lines.append(f"* Claimed p_bar <= measured p_bar (each mechanism's own accuracy statement): "
                 f"{len(ck['claims_hold']['rows']) - len(v)}/{len(ck['claims_hold']['rows'])} hold"
                 + ("" if not v else "; violations: " + "; ".join(f"{c['mechanism']} at {c['cell']}" for c in v)))
    return lines


def _cell_lines(cell: dict) -> list[str]:
    """One cell's floors and its table of mechanisms."""
    lines = [f"## {cell_key(cell)}", "",
             f"Floors: Corollary 30 p_bar <= {_fmt(cell['corollary30_p_bar_ceiling'], 4)} "
             f"(Lambda_0 = {_fmt(cell['corollary30_Lambda0'], 4)}); Theorem 31 E[N_t] >= "
             f"{_fmt(cell['theorem31_evals_floor'], 4)}.", "",
             "| mechanism | guarantee | claimed p_bar | p_bar (95% CI) | method | halt@p* | p_halt | "
             "evals/step mean | p99 | /Thm31 |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in cell["rows"]:
        ci = r.get("p_bar_ci")
        if ci is None and "sim_check" in r:
            sc = r["sim_check"]
            pb = f"{_fmt(r['p_bar'], 4)} (sim {sc['rate']:.4f} [{sc['ci'][0]:.4f}, {sc['ci'][1]:.4f}])"
        else:
            pb = f"{_fmt(r['p_bar'], 4)} [{_fmt(ci[0], 3)}, {_fmt(ci[1], 3)}]"
        lines.append(f"| {r['mechanism']} | {r['guarantee']} | {_fmt(r['claimed_p_bar'], 4)} | {pb} | {r['method']} | "
                     f"{r['halt_rate_at_p_star']:.4f} | {_fmt(r['p_halt'], 4)} | {_fmt(r['evals_mean'], 4)} | "
                     f"{_fmt(r['evals_p99'], 4)}{' (E=inf)' if r.get('evals_note') else ''} | "
                     f"{_fmt(r['evals_over_theorem31'], 3)} |")
    lines.append("")
    return lines


def write_plots(result: dict, out_dir) -> list[str]:
    """p_bar and evaluations per step against T (log scale), one panel per p*, on the median (eps, ratio) slice."""
    cells = [c for c in result["cells"] if "error" not in c]
    if not cells:
        return []
    eps_vals = sorted({c["epsilon"] for c in cells})
    rat_vals = sorted({c["ratio"] for c in cells})
    eps = eps_vals[len(eps_vals) // 2]
    ratio = rat_vals[len(rat_vals) // 2]
    sl = [c for c in cells if c["epsilon"] == eps and c["ratio"] == ratio]
    pstars = sorted({c["p_star"] for c in sl})
    names = [r["mechanism"] for r in sl[0]["rows"]]
    paths = []
    for key, floor_key, ylabel, fname in (
        ("p_bar", "corollary30_p_bar_ceiling", "measured rejection threshold p_bar", "pbar_vs_T.png"),
        ("evals_mean", "theorem31_evals_floor", "evaluations per step (mean)", "evaluations_vs_T.png"),
    ):
        with figure(1, len(pstars), figsize=(5 * len(pstars), 4.8), squeeze=False) as (fig, axes):
            draw_slice(axes[0], sl, pstars, names, key, floor_key, ylabel, eps, ratio)
            fig.tight_layout(rect=(0, 0.14, 1, 1))  # the bottom strip holds the legend
            paths.append(str(save_png(fig, Path(out_dir) / fname)))
    return paths


def draw_slice(axes, sl, pstars, names, key, floor_key, ylabel, eps, ratio) -> None:
    """One panel per p*: every mechanism's ``key`` against T (fixed colours), and the paper's floor."""
    for ax, ps in zip(axes, pstars):
        cs = sorted((c for c in sl if c["p_star"] == ps), key=lambda c: c["T"])
        Ts = [c["T"] for c in cs]
        for name in names:
            ys = [row_of(c, name)[key] for c in cs]
            if all(y > 0 for y in ys):
                ax.plot(Ts, ys, label=name, **style_for(name))
        label = "Corollary 30 ceiling" if key == "p_bar" else "Theorem 31 floor"
        ax.plot(Ts, [c[floor_key] for c in cs], color=NEUTRAL, ls=(0, (1, 1)), lw=2.2, label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("T")
        ax.set_ylabel(ylabel)
        ax.set_title(f"p*={ps:g}, eps={eps:g}, eps1/eps={ratio:g}")
        ax.grid(True, which="both", alpha=0.3)
    legend_outside(axes[0].figure, axes, ncol=min(6, len(names) + 1))
