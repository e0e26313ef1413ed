"""Readable certificate reports: Markdown and a single-file HTML page with embedded plots.

Both render the JSON certificate document (``Certificate.document()`` or a loaded file), so a
report can be regenerated from a stored certificate. Plots are PNGs drawn with matplotlib's
Agg canvas (no pyplot global state) and embedded as base64 ``data:`` URIs:

1. p*_t and the guaranteed rejection threshold p_bar_t against t (and the purified thresholds);
2. the range of the Poisson mean lambda_t on the good event;
3. evaluations per step: expected E[N_t], the bound lambda_max,t and the evaluation budget;
4. the audit's per-event privacy-loss estimates with their confidence intervals.
"""

from __future__ import annotations

import html
import math

from ..plotting import draw_event_losses, event_loss_figsize, event_loss_rows, figure, png_base64
from .model import privacy_summary
from .rows import step_checks_of, step_rows_of

_STATUS_WORD = {"pass": "PASS", "fail": "FAIL", "witness-unavailable": "WITNESS UNAVAILABLE",
                "not-applicable": "n/a", "info": "info", "recorded": "recorded"}
_VERDICT_TEXT = {
    "certified": "CERTIFIED - every claim holds and names its witness",
    "refused": "REFUSED - this configuration cannot be certified",
    "incomplete": "NOT CERTIFIED - at least one witness is unavailable",
}


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def _num(x) -> float:
    if isinstance(x, str):
        return {"inf": math.inf, "-inf": -math.inf}.get(x, math.nan)
    return float(x)


def _fmt(x) -> str:
    if isinstance(x, bool) or x is None:
        return str(x)
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        return f"{x:.6g}"
    if isinstance(x, str):
        return x
    return str(x)


def _sample_rows(steps: list[dict]) -> list[dict]:
    T = len(steps)
    ts, t = [], 1
    while t <= T:
        ts.append(t)
        t *= 10
    if T and ts[-1] != T:
        ts.append(T)
    return [steps[t - 1] for t in ts]


def _compact_values(values: dict, limit: int = 6) -> str:
    items = []
    for k, v in values.items():
        if isinstance(v, (dict, list)):
            continue
        items.append(f"{k}={_fmt(v)}")
        if len(items) >= limit:
            break
    return ", ".join(items)


def _check_counts(steps: list[dict]) -> list[tuple[str, int, int]]:
    """(check, applicable steps, passing steps) over the horizon."""
    rows = step_checks_of(steps)
    names = list(rows[0].checks) if rows else []
    out = []
    for n in names:
        app = [v.checks[n] for v in rows if v.result(n) is not None]
        if app:
            out.append((n, len(app), sum(1 for v in app if v)))
    return out


# ---------------------------------------------------------------------------
# plots
# ---------------------------------------------------------------------------


def _thin(steps: list[dict], points: int = 200) -> list[dict]:
    """At most ~`points` rows, log-spaced in t (the plots use a log axis), always with the last step."""
    n = len(steps)
    if n <= points:
        return steps
    idx = sorted({min(n - 1, int(round(math.exp(i * math.log(n) / points)) - 1)) for i in range(points + 1)}
                 | {n - 1})
    return [steps[i] for i in idx]


def exact_thresholds(body: dict) -> dict:
    """{t: (paper p_bar, exact p_bar)} from the exact engine's claim, if it ran."""
    for c in body.get("claims", []):
        if c.get("id") == "accuracy.exact-threshold" and c.get("status") != "witness-unavailable":
            return {int(t): (v["p_bar_paper"], v["p_bar_exact"])
                    for t, v in (c.get("values", {}).get("thresholds") or {}).items()}
    return {}


STEP_MARGINS = dict(left=0.11, right=0.98, bottom=0.27, top=0.92)  # fixed margins: layout engines are slow
STEP_FIGSIZE = (7.5, 4.4)  # the bottom strip holds the legend, outside the data


def _finish_log_log(fig, ax, ylabel: str, title: str) -> str:
    """Log-log axes against the step t, labelled; the figure as base64 PNG."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("step t")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.17), ncol=2)
    return png_base64(fig)


def plot_thresholds(steps: list[dict], exact: dict | None = None) -> str:
    steps = step_rows_of(_thin(steps))
    with figure(figsize=STEP_FIGSIZE, margins=STEP_MARGINS) as (fig, ax):
        t = [r.t for r in steps]
        ax.plot(t, [r.p_star for r in steps], label="p*_t (halts at or above)")
        ax.plot(t, [r.p_bar for r in steps], label="p_bar_t (continues at or below)")
        if exact:
            ts = sorted(exact)
            ax.plot(ts, [exact[x][1] for x in ts], "o", ms=5, label="exact rejection threshold (exact engine)")
        if any(r.delta_t > 0 for r in steps):
            ax.plot(t, [max(r.continue_threshold, 1e-300) for r in steps], "--",
                    label="p_bar_t - phi_t (purified)")
            ax.plot(t, [min(r.halt_threshold, 1.0) for r in steps], "--", label="p*_t + phi_t (purified)")
        return _finish_log_log(fig, ax, "success probability p_t", "Target p*_t and guaranteed rejection threshold p_bar_t")


def plot_lambda_range(steps: list[dict]) -> str:
    steps = step_rows_of(_thin(steps))
    with figure(figsize=STEP_FIGSIZE, margins=STEP_MARGINS) as (fig, ax):
        t = [r.t for r in steps]
        lo = [_num(r.lambda_range[0]) for r in steps]
        hi = [_num(r.lambda_range[1]) for r in steps]
        ax.fill_between(t, lo, hi, alpha=0.35, label="lambda_t on the good event")
        ax.plot(t, [r.rho for r in steps], lw=1, label="base rate rho_t")
        return _finish_log_log(fig, ax, "Poisson mean lambda_t", "Range of lambda_t (Lemma 19(2))")


def plot_evaluations(steps: list[dict]) -> str:
    steps = step_rows_of(_thin(steps))
    with figure(figsize=STEP_FIGSIZE, margins=STEP_MARGINS) as (fig, ax):
        t = [r.t for r in steps]
        ev = [_num(r.expected_evaluations) for r in steps]
        if all(math.isfinite(e) for e in ev):
            ax.plot(t, ev, label="expected evaluations E[N_t]")
        ax.plot(t, [_num(r.lambda_max_upper) for r in steps], label="lambda_max,t (good event)")
        ax.plot(t, [r.evaluation_budget for r in steps], "--", label="evaluation budget")
        return _finish_log_log(fig, ax, "evaluations of M_t", "Evaluations per step (Lemma 12, Theorem 21(3), Lemma 22)")


def audit_events(body: dict) -> list[dict]:
    """Per-event loss estimates of the audit claim (rows of :class:`audits.statistics.EventEstimate`)."""
    for c in body.get("claims", []):
        if c.get("id") == "privacy.audit":
            return [{**e, "loss": _num(e["loss"]), "loss_lower": _num(e["loss_lower"]),
                     "loss_upper": _num(e["loss_upper"])} for e in c.get("values", {}).get("events", [])]
    return []


def plot_audit(body: dict) -> str | None:
    """The shared per-event loss plot (:func:`audits.plotting.draw_event_losses`) of the audit claim."""
    events = event_loss_rows(audit_events(body), max_events=30)
    if not events:
        return None
    claim = next(c for c in body["claims"] if c["id"] == "privacy.audit")
    with figure(figsize=event_loss_figsize(len(events))) as (fig, ax):
        draw_event_losses(ax, events, epsilon_claimed=_num(claim["values"]["epsilon_claimed"]),
                          lower_bound=_num(claim["values"]["epsilon_lower_bound"]))
        fig.tight_layout()
        return png_base64(fig)


def plots(body: dict) -> list[tuple[str, str | None]]:
    steps = body.get("steps") or []
    out: list[tuple[str, str | None]] = []
    if steps:
        out.append(("Thresholds p*_t and p_bar_t", plot_thresholds(steps, exact_thresholds(body))))
        out.append(("lambda_t range", plot_lambda_range(steps)))
        out.append(("Evaluations per step", plot_evaluations(steps)))
    out.append(("Audit per-event losses", plot_audit(body)))
    return out


# ---------------------------------------------------------------------------
# Markdown
# ---------------------------------------------------------------------------


def _md_escape(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def render_markdown(doc: dict) -> str:
    """The certificate as Markdown (tables, plus the plots as embedded PNG data URIs)."""
    body = doc["body"]
    steps = body.get("steps") or []
    cfg = body["config"]
    lines = [f"# GTM certificate: {_VERDICT_TEXT.get(body['verdict'], body['verdict'])}", ""]
    lines += [
        f"- parameterization: `{cfg['gtm'].get('parameterization')}`, horizon T = {body['horizon']}, "
        f"mode: {body['mode']}",
        f"- {privacy_summary(body['claims'])}",
        f"- configuration sha256: `{body['config_sha256']}`",
        f"- certificate sha256: `{doc.get('sha256', '')}` (check with `gtm certify --verify`)",
        "",
    ]
    if body.get("refusals"):
        lines += ["## Refused", ""]
        for r in body["refusals"]:
            lines += [f"- **{r['claim_id']}**: {r['reason']}", f"  - **fix**: {r['fix']}"]
        lines.append("")
    lines += ["## Claims", "", "| status | claim | witness | statement | values |", "|---|---|---|---|---|"]
    for c in body["claims"]:
        wit = c["witness"]["kind"]
        if c["status"] == "witness-unavailable":
            wit += f" ({c['witness']['details'].get('unavailable', '')})"
        elif "error" in c["witness"]["details"]:
            wit += f" (crashed: {c['witness']['details']['error']})"
        lines.append(f"| {_STATUS_WORD.get(c['status'], c['status'])} | `{c['id']}` | {_md_escape(wit)} | "
                     f"{_md_escape(c['statement'])} | {_md_escape(_compact_values(c['values']))} |")
    lines.append("")
    if steps:
        lines += ["## Per-step checks", ""]
        counts = _check_counts(steps)
        all_ok = all(a == p for _, a, p in counts)
        verdict_line = f"All {len(steps)} steps pass every applicable check." if all_ok else "Some steps fail:"
        lines.append(f"**{verdict_line}**")
        lines += ["", "| check | steps checked | passing |", "|---|---|---|"]
        lines += [f"| {n} | {a} | {p} |" for n, a, p in counts]
        lines += ["", "Sampled steps (full table in the JSON certificate):", "",
                  "| t | s | c | rho | Lambda | p* | p_bar | lambda range | E[N_t] | budget | Pr[exceed] |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in step_rows_of(_sample_rows(steps)):
            lr = r.lambda_range
            lines.append(
                f"| {r.t} | {r.s:+d} | {r.c} | {_fmt(r.rho)} | {_fmt(r.Lambda)} | {_fmt(r.p_star)} | "
                f"{_fmt(r.p_bar)} | [{_fmt(lr[0])}, {_fmt(lr[1])}] | {_fmt(r.expected_evaluations)} | "
                f"{r.evaluation_budget} | {_fmt(r.budget_exceed_upper)} |")
        lines.append("")
        ex = exact_thresholds(body)
        if ex:
            lines += ["Exact rejection thresholds (exact engine, where tighter than the paper's):", "",
                      "| t | p_bar (paper) | p_bar (exact) | gain |", "|---|---|---|---|"]
            lines += [f"| {t} | {_fmt(a)} | {_fmt(b)} | {_fmt(b / a if a else None)} |"
                      for t, (a, b) in sorted(ex.items())]
            lines.append("")
    lines += ["## Plots", ""]
    for title, png in plots(body):
        if png is None:
            lines += [f"*{title}: not available (the audit witness did not report per-event losses).*", ""]
        else:
            lines += [f"![{title}](data:image/png;base64,{png})", ""]
    prov = body.get("provenance", {})
    lines += ["## Provenance", "", "| item | value |", "|---|---|"]
    for k in ("gtm_version", "python", "platform", "seed", "seed_note", "mode", "created_utc"):
        if k in prov:
            lines.append(f"| {k} | {_md_escape(_fmt(prov[k]))} |")
    for k, v in (prov.get("libraries") or {}).items():
        lines.append(f"| {k} | {_fmt(v)} |")
    for k, v in (prov.get("timings_seconds") or {}).items():
        lines.append(f"| time: {k} | {_fmt(v)} s |")
    lines += ["", "## Configuration", "", "```json", _json_pretty(cfg), "```", ""]
    return "\n".join(lines)


def _json_pretty(obj) -> str:
    import json

    return json.dumps(obj, indent=2, sort_keys=True)


# ---------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:0.9em;width:100%}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top;overflow-wrap:anywhere}
td small{color:#555}
td:first-child{white-space:nowrap}
table.claims td:nth-child(2),table.claims td:nth-child(3){white-space:nowrap}
th{background:#f3f3f3}
.verdict{padding:0.8em 1em;border-radius:6px;font-weight:bold}
.certified{background:#e3f6e3;border:1px solid #4a4}
.refused{background:#fbe3e3;border:1px solid #c44}
.incomplete{background:#fff4d6;border:1px solid #c90}
.pass{color:#161}.fail{color:#b00;font-weight:bold}.witness-unavailable{color:#a60;font-weight:bold}
code{background:#f6f6f6;padding:0 3px}
img{max-width:100%}
"""


def _e(x) -> str:
    return html.escape(_fmt(x), quote=True)


def render_html(doc: dict) -> str:
    """The certificate as one self-contained HTML5 page (plots embedded as base64 PNG)."""
    body = doc["body"]
    verdict = body["verdict"]
    p = ['<!DOCTYPE html>', '<html lang="en">', "<head>", '<meta charset="utf-8">',
         f"<title>GTM certificate: {_e(verdict)}</title>", f"<style>{_CSS}</style>", "</head>", "<body>"]
    p += _html_summary(doc)
    p += _html_refusals(body.get("refusals") or [])
    p += _html_claims(body["claims"])
    p += _html_steps(body)
    p += _html_plots(body)
    p += _html_provenance(body.get("provenance", {}))
    p.append("<h2>Configuration</h2>")
    p.append(f"<pre>{html.escape(_json_pretty(body['config']))}</pre>")
    p += ["</body>", "</html>", ""]
    return "\n".join(p)


def _html_summary(doc: dict) -> list[str]:
    """Title, verdict and the identities the certificate vouches for."""
    body = doc["body"]
    verdict = body["verdict"]
    return ["<h1>GTM certificate</h1>",
            f'<p class="verdict {_e(verdict)}">{_e(_VERDICT_TEXT.get(verdict, verdict))}</p>',
            "<ul>",
            f"<li>parameterization <code>{_e(body['config']['gtm'].get('parameterization'))}</code>, horizon T = "
            f"{_e(body['horizon'])}, mode {_e(body['mode'])}</li>",
            f"<li>{_e(privacy_summary(body['claims']))}</li>",
            f"<li>configuration sha256 <code>{_e(body['config_sha256'])}</code></li>",
            f"<li>certificate sha256 <code>{_e(doc.get('sha256', ''))}</code> (check with "
            f"<code>gtm certify --verify</code>)</li>",
            "</ul>"]


def _html_refusals(refusals: list[dict]) -> list[str]:
    """Each refused claim with its reason and computed fix (nothing when none)."""
    if not refusals:
        return []
    p = ["<h2>Refused</h2>", "<ul>"]
    for r in refusals:
        p.append(f"<li><strong>{_e(r['claim_id'])}</strong>: {_e(r['reason'])}<br>"
                 f"<strong>fix</strong>: {_e(r['fix'])}</li>")
    return p + ["</ul>"]


def _html_claims(claims: list[dict]) -> list[str]:
    """The claims table: status, claim, witness (with why it is unavailable or crashed), statement."""
    p = ["<h2>Claims</h2>",
         '<table class="claims"><thead><tr><th>status</th><th>claim</th><th>witness</th>'
         "<th>statement and values</th></tr></thead><tbody>"]
    for c in claims:
        wit = _e(c["witness"]["kind"])
        if c["status"] == "witness-unavailable":
            wit += "<br><small>" + _e(c["witness"]["details"].get("unavailable", "")) + "</small>"
        elif "error" in c["witness"]["details"]:
            wit += "<br><small>crashed: " + _e(c["witness"]["details"]["error"]) + "</small>"
        vals = _compact_values(c["values"])
        p.append(f'<tr><td class="{_e(c["status"])}">{_e(_STATUS_WORD.get(c["status"], c["status"]))}</td>'
                 f"<td><code>{_e(c['id'])}</code><br><small>{_e(c['category'])}</small></td><td>{wit}</td>"
                 f"<td>{_e(c['statement'])}" + (f"<br><small>{_e(vals)}</small>" if vals else "") + "</td></tr>")
    return p + ["</tbody></table>"]


def _html_steps(body: dict) -> list[str]:
    """Per-step check counts, sampled step rows and the exact rejection thresholds (nothing when the
    certificate has no steps)."""
    steps = body.get("steps") or []
    if not steps:
        return []
    counts = _check_counts(steps)
    all_ok = all(a == q for _, a, q in counts)
    verdict_line = f"All {len(steps)} steps pass every applicable check." if all_ok else "Some steps fail."
    p = ["<h2>Per-step checks</h2>", f"<p><strong>{verdict_line}</strong></p>",
         "<table><thead><tr><th>check</th><th>steps checked</th><th>passing</th></tr></thead><tbody>"]
    p += [f"<tr><td>{_e(n)}</td><td>{a}</td><td>{q}</td></tr>" for n, a, q in counts]
    p.append("</tbody></table>")
    p.append("<p>Sampled steps (the full table is in the JSON certificate):</p>")
    heads = ["t", "s", "c", "rho", "Lambda", "p*", "p_bar", "lambda range", "E[N_t]", "budget", "Pr[exceed]"]
    p.append("<table><thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in heads) + "</tr></thead><tbody>")
    for r in step_rows_of(_sample_rows(steps)):
        lr = r.lambda_range
        cells = [r.t, f"{r.s:+d}", r.c, r.rho, r.Lambda, r.p_star, r.p_bar,
                 f"[{_fmt(lr[0])}, {_fmt(lr[1])}]", r.expected_evaluations, r.evaluation_budget,
                 r.budget_exceed_upper]
        p.append("<tr>" + "".join(f"<td>{_e(x)}</td>" for x in cells) + "</tr>")
    p.append("</tbody></table>")
    ex = exact_thresholds(body)
    if ex:
        p.append("<p>Exact rejection thresholds (exact engine, where tighter than the paper's):</p>")
        p.append("<table><thead><tr><th>t</th><th>p_bar (paper)</th><th>p_bar (exact)</th><th>gain</th>"
                 "</tr></thead><tbody>")
        for t, (a, b) in sorted(ex.items()):
            p.append(f"<tr><td>{t}</td><td>{_e(a)}</td><td>{_e(b)}</td><td>{_e(b / a if a else None)}</td></tr>")
        p.append("</tbody></table>")
    return p


def _html_plots(body: dict) -> list[str]:
    """The certificate's plots, embedded as base64 PNG (or why one is missing)."""
    p = ["<h2>Plots</h2>"]
    for title, png in plots(body):
        p.append(f"<h3>{_e(title)}</h3>")
        if png is None:
            p.append("<p><em>Not available: the audit witness did not report per-event losses.</em></p>")
        else:
            p.append(f'<img alt="{_e(title)}" src="data:image/png;base64,{png}">')
    return p


def _html_provenance(prov: dict) -> list[str]:
    """Versions, platform, seed, mode, creation time, libraries and witness timings."""
    p = ["<h2>Provenance</h2>", "<table><tbody>"]
    for k in ("gtm_version", "python", "platform", "seed", "seed_note", "mode", "created_utc"):
        if k in prov:
            p.append(f"<tr><th>{_e(k)}</th><td>{_e(prov[k])}</td></tr>")
    for k, v in (prov.get("libraries") or {}).items():
        p.append(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>")
    for k, v in (prov.get("timings_seconds") or {}).items():
        p.append(f"<tr><th>time: {_e(k)}</th><td>{_e(v)} s</td></tr>")
    return p + ["</tbody></table>"]
