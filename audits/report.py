"""Readable audit reports: Markdown with a plot of the per-event privacy-loss estimates.

The plot (matplotlib, PNG next to the report) shows, for every event of the witness pair, the
estimated loss ln(P[E] / P'[E]) from the estimation-phase samples with simultaneous intervals
(Bonferroni over the events), the claimed epsilon and the reported lower bound.
"""

from __future__ import annotations

import math
from pathlib import Path

from gtm_core.files import write_atomic

from .auditor import AuditResult
from .plotting import draw_event_losses, event_loss_figsize, event_loss_rows, figure, save_png


def plot_per_event(result: AuditResult, path: Path, *, max_events: int = 60) -> Path:
    """PNG of the per-event loss estimates of the witness pair (:func:`audits.plotting.draw_event_losses`)."""
    rows = event_loss_rows([e.to_dict() for e in result.per_event], max_events)
    with figure(figsize=event_loss_figsize(len(rows))) as (fig, ax):
        draw_event_losses(ax, rows, epsilon_claimed=result.epsilon_claimed, lower_bound=result.epsilon_lower_bound)
        fig.tight_layout()
        return save_png(fig, path)


def audit_markdown(result: AuditResult, plot_name: str | None) -> str:
    """The readable audit report (Markdown), linking the per-event plot ``plot_name`` when given."""
    w = result.witness
    lines = [
        "# GTM privacy audit",
        "",
        f"- **verdict**: `{result.verdict}`",
        f"- claimed epsilon: {result.epsilon_claimed:g}",
        f"- lower bound on epsilon (confidence {result.confidence:g}): **{result.epsilon_lower_bound:.4f}**",
        f"- target: `{result.target}`",
        f"- samples: {result.samples:,} runs in {result.seconds:.1f} s (seed {result.seed})",
        f"- search: {result.search.get('rounds')} selection rounds, {result.search.get('pairs_examined')} pairs examined",
        f"- method: {result.method}",
        "",
    ]
    if w is not None:
        lines += [
            "## Witness",
            "",
            f"- family: `{w.family}`; event: `{w.event}`",
            f"- p  = {_fmt_stream(w.input_a)}",
            f"- p' = {_fmt_stream(w.input_b)}",
            f"- runs per input: Poisson with mean M = {w.runs_mean:,} (drawn {w.n_a:,} and {w.n_b:,})",
            f"- P[E]  = {w.probability_a:.6g} ({w.count_a:,}/{w.n_a:,}), one-sided lower bound {w.probability_a_lower:.6g}",
            f"- P'[E] = {w.probability_b:.6g} ({w.count_b:,}/{w.n_b:,}), one-sided upper bound {w.probability_b_upper:.6g}",
            f"- bound (conditional test: {w.count_a:,} of the {w.count_a + w.count_b:,} event runs are on p; "
            f"Clopper-Pearson lower bound theta on P[E] / (P[E] + P'[E]), bound = ln(theta / (1 - theta))) "
            f"= {w.loss_bound:.4f}",
            "",
        ]
    if plot_name:
        lines += ["## Per-event estimates", "", f"![per-event privacy loss]({plot_name})", ""]
    lines += ["| event | count | count' | loss estimate | interval |", "|---|---:|---:|---:|---|"]
    top = sorted(result.per_event, key=lambda e: -(e.loss_lower if math.isfinite(e.loss_lower) else -1e9))[:20]
    for e in top:
        lines.append(f"| {e.event} | {e.count} | {e.count_prime} | {e.loss:.4f} | [{e.loss_lower:.4f}, {e.loss_upper:.4f}] |")
    lines.append("")
    return "\n".join(lines)


def _fmt_stream(s) -> str:
    if isinstance(s, (list, tuple)) and len(s) > 12:
        return "[" + ", ".join(f"{x:.6g}" for x in s[:6]) + f", ... ({len(s)} steps)]"
    if isinstance(s, (list, tuple)):
        return "[" + ", ".join(f"{x:.6g}" if isinstance(x, float) else str(x) for x in s) + "]"
    return str(s)


def write_report(result: AuditResult, path: Path) -> Path:
    """Write the Markdown report and its PNG plot (same stem, ``.png``); returns the report path."""
    path = Path(path)
    png = path.with_suffix(".png")
    plot_per_event(result, png)
    write_atomic(path, audit_markdown(result, png.name))
    return path
