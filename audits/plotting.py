"""One matplotlib setup for the three reports (audit, certificate, benchmark).

* One style (:data:`STYLE`), applied with ``matplotlib.rc_context`` around each figure - no global
  ``pyplot`` state is touched (figures are :class:`matplotlib.figure.Figure` objects on the Agg canvas).
* One colour-blind-safe palette (Okabe & Ito, "Color Universal Design", 2008) and a fixed colour,
  marker and line style per mechanism (:func:`colour_for`, :func:`style_for`), so GTM and each peer
  look the same in every report and coinciding curves stay distinguishable.
* Legends outside the data (:func:`legend_outside`, or anchored beside the axes).
* One per-event privacy-loss plot (:func:`event_loss_figure`), shared by the audit report and the
  certificate report.
"""

from __future__ import annotations

import base64
import io
import math
import zlib
from contextlib import contextmanager
from pathlib import Path

# Okabe-Ito: blue, orange, bluish green, vermillion, reddish purple, sky blue, yellow, black
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
CLAIM_COLOUR = PALETTE[3]  # claimed epsilon / reference lines
BOUND_COLOUR = PALETTE[2]  # reported lower bounds
NEUTRAL = "#555555"

# mechanism name (bench rows: "gtm-<parameterization>" or the peer's name) -> its fixed colour (yellow,
# PALETTE[6], is left out: too faint on white for a line)
MECHANISM_COLOURS = {
    "gtm-theorem21": PALETTE[0],
    "gtm-theorem23": PALETTE[5],
    "gtm-exact": PALETTE[2],
    "gtm-exact_noise": PALETTE[7],
    "liu-talwar": PALETTE[1],
    "cohen": PALETTE[3],
    "ghazi": PALETTE[4],
    "above-threshold": "#666666",
    "threshold-select": "#999999",
}

# a fixed marker and line style per mechanism as well, so curves that coincide (theorem21 and exact
# have the same p_bar; Cohen et al. and Ghazi et al. nearly so) stay distinguishable, also in grey
MECHANISM_MARKERS = {  # (marker, line style, line width): a wide solid line under a thin dashed one
    "gtm-theorem21": ("o", "-", 3.0),
    "gtm-theorem23": ("s", "-", 1.6),
    "gtm-exact": ("x", "--", 1.4),
    "gtm-exact_noise": ("D", "-.", 1.6),
    "liu-talwar": ("^", "-", 1.6),
    "cohen": ("v", "-", 3.0),
    "ghazi": ("+", "--", 1.4),
    "above-threshold": ("P", ":", 1.8),
    "threshold-select": ("*", "--", 1.6),
}

STYLE = {
    "axes.prop_cycle": "cycler('color', [%s])" % ", ".join(repr(c) for c in PALETTE),
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "font.size": 9,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "lines.linewidth": 1.6,
    "savefig.dpi": 110,
}


def colour_for(mechanism: str) -> str:
    """The fixed colour of a mechanism; an unknown name gets a stable colour from the palette."""
    if mechanism in MECHANISM_COLOURS:
        return MECHANISM_COLOURS[mechanism]
    return PALETTE[zlib.crc32(mechanism.encode()) % len(PALETTE)]


def style_for(mechanism: str) -> dict:
    """Keyword arguments for ``ax.plot`` of a mechanism's curve: its colour, marker and line style
    (open markers, so a curve drawn on top of another leaves the one below visible)."""
    marker, ls, lw = MECHANISM_MARKERS.get(mechanism, ("o", "-", 1.6))
    return dict(color=colour_for(mechanism), marker=marker, ls=ls, lw=lw, mfc="none", ms=6, mew=1.3)


def legend_outside(fig, axes, *, ncol: int = 4) -> None:
    """One legend for the figure, below the axes (never over the data): the handles of ``axes``,
    each label once."""
    seen: dict = {}
    for ax in list(axes):
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    if seen:
        fig.legend(list(seen.values()), list(seen), loc="lower center", ncol=ncol, bbox_to_anchor=(0.5, 0.0))


@contextmanager
def figure(nrows: int = 1, ncols: int = 1, *, figsize=(7.5, 3.8), squeeze: bool = True, margins: dict | None = None):
    """A new Agg figure and its axes in the shared style (``margins``: fixed subplot margins); build and
    save it inside the ``with``."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=figsize)
        FigureCanvasAgg(fig)
        axes = fig.subplots(nrows, ncols, squeeze=squeeze)
        if margins:
            fig.subplots_adjust(**margins)
        yield fig, axes


def save_png(fig, path: Path, *, dpi: int = 110) -> Path:
    """Write the figure as a PNG (call inside :func:`figure`)."""
    fig.savefig(path, dpi=dpi)
    return Path(path)


def png_base64(fig, *, dpi: int = 80) -> str:
    """The figure as a base64 PNG, for a ``data:`` URI (call inside :func:`figure`)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def event_loss_rows(events: list[dict], max_events: int = 60) -> list[dict]:
    """Per-event loss rows (keys ``event, loss, loss_lower, loss_upper``, as
    :class:`audits.statistics.EventEstimate` writes them) worth plotting, best lower bound first."""
    def lower(e):
        return e["loss_lower"] if math.isfinite(e["loss_lower"]) else -1e9

    rows = [e for e in events if math.isfinite(e["loss"]) or e.get("count") or e.get("count_prime")]
    return sorted(rows, key=lambda e: -lower(e))[:max_events]


def draw_event_losses(ax, events: list[dict], *, epsilon_claimed: float, lower_bound: float) -> None:
    """Estimate and simultaneous interval of ln(P[E] / P'[E]) for every event (one row each), the claimed
    epsilon (both signs) and the reported lower bound."""
    colour = PALETTE[0]
    for i, e in enumerate(events):
        lo = e["loss_lower"] if math.isfinite(e["loss_lower"]) else -5
        hi = e["loss_upper"] if math.isfinite(e["loss_upper"]) else 5
        ax.plot([lo, hi], [i, i], color=colour, lw=2, zorder=2,
                label="estimate and simultaneous interval" if i == 0 else None)
        if math.isfinite(e["loss"]):
            ax.plot([e["loss"]], [i], "o", color=colour, ms=3, zorder=2)
    # the claim wide and dashed underneath, the lower bound narrow and solid on top: where the two
    # (nearly) coincide the bound shows as a line inside the claim's dashes, both visible
    ax.axvline(epsilon_claimed, color=CLAIM_COLOUR, ls=(0, (4, 2)), lw=3.2, zorder=3,
               label=f"claimed eps = {epsilon_claimed:g}")
    ax.axvline(-epsilon_claimed, color=CLAIM_COLOUR, ls=(0, (4, 2)), lw=3.2, zorder=3)
    ax.axvline(lower_bound, color=BOUND_COLOUR, ls="-", lw=1.3, zorder=4,
               label=f"audit lower bound = {lower_bound:.3f}")
    ax.set_yticks(range(len(events)))
    ax.set_yticklabels([e["event"] for e in events], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("ln(P[E] / P'[E])")
    ax.set_title("Per-event privacy loss of the witness pair")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside the data


def event_loss_figsize(n_events: int) -> tuple[float, float]:
    return (9.5, max(3, 0.22 * n_events + 1.5))
