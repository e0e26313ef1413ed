"""One matplotlib setup for the three reports (audit, certificate, benchmark).

* One style (:data:`STYLE`), applied with ``matplotlib.rc_context`` around each figure - no global
  ``pyplot`` state is touched (figures are :class:`matplotlib.figure.Figure` objects on the Agg canvas).
* One colour-blind-safe palette (Okabe & Ito, "Color Universal Design", 2008) and a fixed colour per
  mechanism (:func:`colour_for`), so GTM and each peer look the same in every report.
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

# mechanism name (bench rows: "gtm-<parameterization>" or the peer's name) -> its fixed colour
MECHANISM_COLOURS = {
    "gtm-theorem21": PALETTE[0],
    "gtm-theorem23": PALETTE[5],
    "gtm-exact": PALETTE[2],
    "gtm-exact_noise": PALETTE[4],
    "liu-talwar": PALETTE[1],
    "cohen": PALETTE[3],
    "ghazi": PALETTE[6],
    "above-threshold": PALETTE[7],
    "threshold-select": "#999999",
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
        ax.plot([lo, hi], [i, i], color=colour, lw=2)
        if math.isfinite(e["loss"]):
            ax.plot([e["loss"]], [i], "o", color=colour, ms=3)
    ax.axvline(epsilon_claimed, color=CLAIM_COLOUR, ls="--", label=f"claimed eps = {epsilon_claimed:g}")
    ax.axvline(-epsilon_claimed, color=CLAIM_COLOUR, ls="--")
    ax.axvline(lower_bound, color=BOUND_COLOUR, ls=":", label=f"lower bound = {lower_bound:.3f}")
    ax.set_yticks(range(len(events)))
    ax.set_yticklabels([e["event"] for e in events], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("ln(P[E] / P'[E])  (estimate and simultaneous interval)")
    ax.set_title("Per-event privacy loss of the witness pair")
    ax.legend(loc="lower right")


def event_loss_figsize(n_events: int) -> tuple[float, float]:
    return (8, max(3, 0.22 * n_events + 1.5))
