"""Readable audit reports: one self-contained file, HTML (``.html``/``.htm``) or Markdown (``.md``).

Both show the verdict, the witness (the pre-registered pair, event and direction, with the
conditional test's numbers), the per-event plot and a table of the per-event loss estimates.
The plot (:func:`audits.plotting.draw_event_losses`, the same one the certificate report shows)
is embedded as a base64 PNG ``data:`` URI, so a report is a single file with no loose PNG next to
it. Every value taken from the result is escaped for its format (HTML entities; ``|`` in a
Markdown table cell), so an event name such as ``halt>=2|never`` cannot break the page.
"""

from __future__ import annotations

import html
import math
from pathlib import Path

from gtm_core.errors import InvalidParameter
from gtm_core.files import write_atomic

from .audit_results import AuditResult
from .plotting import draw_event_losses, event_loss_figsize, event_loss_rows, figure, png_base64

FORMATS = {".html": "html", ".htm": "html", ".md": "markdown"}
TABLE_EVENTS = 20  # rows of the per-event table (best lower bound first)

EVENT_LEGEND = (
    "count / count' = runs of the witness pair's streams p / p' in which the event happened (estimation "
    "phase, n / n' runs); loss estimate = ln((count/n) / (count'/n')); interval = simultaneous "
    "Clopper-Pearson interval on that loss (Bonferroni over every pre-registered event), at the audit's "
    "confidence. Only the witness event's own bound is the audit's result; the table shows what else "
    "was seen (events that happened in neither sample are left out)."
)
EVENT_NAMES = (
    "Events: `never` (continued through every step), `halt=t` (halted at step t), `halt<=t` (halted at "
    "step t or earlier), `halt>=t|never` (halted at step t or later, or never), `stop=t` / `stop` "
    "(stopped on the evaluation budget at step t / at any step, docs/protocol.md), "
    "`level-set(codes)` (the outcome codes listed, chosen by likelihood ratio on held-out samples)."
)


def report_format(path) -> str:
    """``"html"`` or ``"markdown"`` from the report path's suffix (checked before an audit starts)."""
    fmt = FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise InvalidParameter(f"report path {str(path)!r} must end in .html, .htm or .md")
    return fmt


def per_event_png(result: AuditResult, *, max_events: int = 60) -> str | None:
    """The per-event loss plot of the witness pair as a base64 PNG (None when no event was estimated)."""
    rows = event_loss_rows([e.to_dict() for e in result.per_event], max_events)
    if not rows:
        return None
    with figure(figsize=event_loss_figsize(len(rows))) as (fig, ax):
        draw_event_losses(ax, rows, epsilon_claimed=result.epsilon_claimed, lower_bound=result.epsilon_lower_bound)
        fig.tight_layout()
        return png_base64(fig, dpi=100)


def _top_events(result: AuditResult) -> list:
    """The table's events: those seen at least once, best lower bound first."""
    def lower(e):
        return e.loss_lower if math.isfinite(e.loss_lower) else -1e9

    seen = [e for e in result.per_event if e.count or e.count_prime]
    return sorted(seen, key=lambda e: -lower(e))[:TABLE_EVENTS]


def _fmt_stream(s) -> str:
    if isinstance(s, (list, tuple)) and len(s) > 12:
        return "[" + ", ".join(f"{x:.6g}" for x in s[:6]) + f", ... ({len(s)} steps)]"
    if isinstance(s, (list, tuple)):
        return "[" + ", ".join(f"{x:.6g}" if isinstance(x, float) else str(x) for x in s) + "]"
    return str(s)


def _summary(result: AuditResult) -> list[tuple[str, str]]:
    """(label, text) lines shared by both formats (plain text, escaped by the renderer)."""
    search = result.search
    return [
        ("verdict", result.verdict),
        ("claimed epsilon", f"{result.epsilon_claimed:g}"),
        (f"lower bound on epsilon (confidence {result.confidence:g})", f"{result.epsilon_lower_bound:.4f}"),
        ("target", str(result.target)),
        ("samples", f"{result.samples:,} runs in {result.seconds:.1f} s (seed {result.seed})"),
        *([("time to verdict", result.early_stop.describe())] if result.early_stop is not None else []),
        ("search", f"{search.rounds if search else None} selection rounds, "
                   f"{search.pairs_examined if search else None} pairs examined"),
        ("method", result.method),
    ]


def _witness_lines(result: AuditResult) -> list[tuple[str, str]]:
    w = result.witness
    if w is None:
        return []
    return [
        ("family; event", f"{w.family}; {w.event}"),
        ("p", _fmt_stream(w.input_a)),
        ("p'", _fmt_stream(w.input_b)),
        ("runs per input", f"Poisson with mean M = {w.runs_mean:,} (drawn {w.n_a:,} and {w.n_b:,})"),
        ("P[E]", f"{w.probability_a:.6g} ({w.count_a:,}/{w.n_a:,}), one-sided lower bound {w.probability_a_lower:.6g}"),
        ("P'[E]", f"{w.probability_b:.6g} ({w.count_b:,}/{w.n_b:,}), one-sided upper bound "
                  f"{w.probability_b_upper:.6g}"),
        ("bound", f"{w.loss_bound:.4f}: conditional test, {w.count_a:,} of the {w.count_a + w.count_b:,} event "
                  "runs are on p; Clopper-Pearson lower bound theta on P[E] / (P[E] + P'[E]), "
                  "bound = ln(theta / (1 - theta))"),
    ]


def _event_cells(e) -> list[str]:
    return [e.event, f"{e.count:,}", f"{e.count_prime:,}", f"{e.loss:.4f}", f"[{e.loss_lower:.4f}, {e.loss_upper:.4f}]"]


EVENT_HEADS = ["event", "count", "count'", "loss estimate", "interval"]


# ---------------------------------------------------------------------------
# Markdown
# ---------------------------------------------------------------------------


def md_cell(text) -> str:
    """A Markdown table cell: ``|`` escaped (also inside code spans, as GitHub tables need), one line."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def audit_markdown(result: AuditResult, png: str | None = None) -> str:
    """The audit report as Markdown; ``png`` (base64) is embedded as a ``data:`` URI."""
    lines = ["# GTM privacy audit", ""]
    lines += [f"- **{label}**: {md_cell(text)}" for label, text in _summary(result)] + [""]
    wl = _witness_lines(result)
    if wl:
        lines += ["## Witness", ""] + [f"- **{label}**: {md_cell(text)}" for label, text in wl] + [""]
    lines += ["## Per-event estimates", ""]
    if png:
        lines += [f"![per-event privacy loss](data:image/png;base64,{png})", ""]
    lines += ["| " + " | ".join(EVENT_HEADS) + " |", "|---|---:|---:|---:|---|"]
    for e in _top_events(result):
        cells = _event_cells(e)
        cells[0] = f"`{cells[0]}`"
        lines.append("| " + " | ".join(md_cell(c) for c in cells) + " |")
    lines += ["", EVENT_LEGEND, "", EVENT_NAMES, ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:0.9em}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top;overflow-wrap:anywhere}
td.num{text-align:right;font-variant-numeric:tabular-nums}
th{background:#f3f3f3}
.verdict{padding:0.8em 1em;border-radius:6px;font-weight:bold}
.violation{background:#fbe3e3;border:1px solid #c44}
.no-violation-found{background:#e3f6e3;border:1px solid #4a4}
code{background:#f6f6f6;padding:0 3px}
img{max-width:100%}
.legend{color:#444;font-size:0.9em}
"""

_VERDICT_TEXT = {
    "violation": "VIOLATION - the lower bound exceeds the claimed epsilon",
    "no-violation-found": "no violation found - the lower bound does not exceed the claimed epsilon",
}


def _e(x) -> str:
    return html.escape(str(x), quote=True)


def _code_markup(text: str) -> str:
    """Escaped text with `backticked` spans as <code> (for the fixed legends written here)."""
    parts = str(text).split("`")
    return "".join(f"<code>{_e(p)}</code>" if i % 2 else _e(p) for i, p in enumerate(parts))


def audit_html(result: AuditResult, png: str | None = None) -> str:
    """The audit report as one self-contained HTML5 page (the plot embedded as a ``data:`` URI)."""
    v = result.verdict
    p = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
         f"<title>GTM privacy audit: {_e(v)}</title>", f"<style>{_CSS}</style>", "</head>", "<body>",
         "<h1>GTM privacy audit</h1>",
         f'<p class="verdict {_e(v)}">{_e(_VERDICT_TEXT.get(v, v))}</p>',
         "<table><tbody>"]
    p += [f"<tr><th>{_e(label)}</th><td>{_e(text)}</td></tr>" for label, text in _summary(result)]
    p.append("</tbody></table>")
    wl = _witness_lines(result)
    if wl:
        p += ["<h2>Witness</h2>", "<table><tbody>"]
        p += [f"<tr><th>{_e(label)}</th><td>{_e(text)}</td></tr>" for label, text in wl]
        p.append("</tbody></table>")
    p.append("<h2>Per-event estimates</h2>")
    if png:
        p.append(f'<img alt="per-event privacy loss of the witness pair" src="data:image/png;base64,{png}">')
    p.append("<table><thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in EVENT_HEADS) + "</tr></thead><tbody>")
    for e in _top_events(result):
        cells = _event_cells(e)
        p.append(f"<tr><td><code>{_e(cells[0])}</code></td>" + "".join(f'<td class="num">{_e(c)}</td>'
                                                                          for c in cells[1:]) + "</tr>")
    p.append("</tbody></table>")
    p.append(f'<p class="legend">{_code_markup(EVENT_LEGEND)}</p>')
    p.append(f'<p class="legend">{_code_markup(EVENT_NAMES)}</p>')
    p += ["</body>", "</html>", ""]
    return "\n".join(p)


def render_report(result: AuditResult, fmt: str) -> str:
    """The report text in ``fmt`` (``"html"`` or ``"markdown"``), plot included."""
    render = {"html": audit_html, "markdown": audit_markdown}.get(fmt)
    if render is None:
        raise InvalidParameter(f"report format must be 'html' or 'markdown', got {fmt!r}")
    return render(result, per_event_png(result))


def write_report(result: AuditResult, path) -> Path:
    """Write the report as one file, HTML or Markdown by the suffix (:func:`report_format`)."""
    path = Path(path)
    write_atomic(path, render_report(result, report_format(path)))
    return path
