"""The one matplotlib setup: fixed colour per mechanism from the colour-blind-safe palette, the shared
style applied without touching pyplot's global state, the shared per-event loss plot."""

import math

from matplotlib import image as mpimg
from matplotlib import rcParams

from audits.plotting import (
    MECHANISM_COLOURS,
    PALETTE,
    colour_for,
    draw_event_losses,
    event_loss_rows,
    figure,
    save_png,
)


def test_every_known_mechanism_has_its_own_fixed_colour():
    colours = [colour_for(m) for m in MECHANISM_COLOURS]
    assert len(set(colours)) == len(colours)
    assert colour_for("gtm-theorem21") == PALETTE[0] == colour_for("gtm-theorem21")
    assert colour_for("a-new-peer") == colour_for("a-new-peer") in PALETTE  # stable for unknown names


def test_style_is_scoped_to_the_figure(tmp_path):
    before = rcParams["axes.prop_cycle"]
    with figure(figsize=(3, 2)) as (fig, ax):
        line, = ax.plot([0, 1], [0, 1])
        assert line.get_color().lower() == PALETTE[0].lower()
        path = save_png(fig, tmp_path / "f.png")
    assert rcParams["axes.prop_cycle"] == before
    assert mpimg.imread(path).shape[:2] == (220, 330)


def test_event_loss_rows_order_and_plot(tmp_path):
    events = [{"event": "a", "loss": 0.1, "loss_lower": -0.2, "loss_upper": 0.3, "count": 5, "count_prime": 4},
              {"event": "b", "loss": 0.5, "loss_lower": 0.2, "loss_upper": 0.8, "count": 9, "count_prime": 3},
              {"event": "c", "loss": math.nan, "loss_lower": -math.inf, "loss_upper": math.inf,
               "count": 0, "count_prime": 0}]
    rows = event_loss_rows(events)
    assert [r["event"] for r in rows] == ["b", "a"]  # best lower bound first; empty events dropped
    with figure(figsize=(4, 3)) as (fig, ax):
        draw_event_losses(ax, rows, epsilon_claimed=1.0, lower_bound=0.2)
        assert [t.get_text() for t in ax.get_yticklabels()] == ["b", "a"]
        save_png(fig, tmp_path / "e.png")
