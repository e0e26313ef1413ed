"""`gtm exact CONFIG --p P1,.. --p-prime Q1,.. [--digits N] [--certified] [--json PATH]`.

Exact transcript probabilities of two neighbouring Bernoulli streams under the deployed mechanism and
the privacy loss ln(P/P') of every transcript, against Lemma 17's bounds (6)-(7) (or the plan's claimed
ex-post loss for theorem23).  Under evaluation_budget = "none" exit 1 if any transcript's loss exceeds its
bound (the comparison is certified by the error bound).  Under "refuse" the law includes the outcome
"refused at t", the claim is (eps, delta) and the verdict is the exact hockey-stick delta_eps of the pair
(the larger direction, an arb upper bound) against the claimed delta; the per-transcript pure losses are
reported beside it.
"""

from __future__ import annotations

import sys

import click
import mpmath

from gtm_core import GTMConfig, make_plan
from gtm_core.exact.privacy import approximate_dp_from, neighbouring_laws, ratio_report

from .common import EXIT_CHECK_FAILED, UsageFailure, check_writable, guard, write_json


def _parse_probs(text: str, option: str) -> list[str]:
    """Decimal strings, kept as strings so they are converted exactly (as tight balls)."""
    items = [v.strip() for v in text.split(",") if v.strip() != ""]
    if not items:
        raise UsageFailure(f"{option} must not be empty")
    for v in items:
        try:
            x = float(v)
        except ValueError:
            raise UsageFailure(f"{option} must be a comma-separated list of numbers, got {v!r}") from None
        if not (0.0 <= x <= 1.0):
            raise UsageFailure(f"{option} values must be probabilities in [0, 1], got {v}")
    return items


def exact_payload(config: GTMConfig, p: list[str], p_prime: list[str], digits: int, certified: bool) -> dict:
    """The laws of the deployed mechanism on the pair, every transcript's loss against its pure bound and,
    for a capped configuration (evaluation_budget = "refuse"), the hockey-stick delta at the claimed eps
    against the (eps, delta) claim, which is then the verdict (``ok``)."""
    plan = make_plan(config)
    if len(p) != len(p_prime):
        raise UsageFailure(f"--p and --p-prime must have the same length, got {len(p)} and {len(p_prime)}")
    if len(p) > config.stream.horizon:
        raise UsageFailure(f"stream length {len(p)} exceeds the configuration's horizon={config.stream.horizon}")
    d1, d2 = neighbouring_laws(plan, p, p_prime, dps=digits, certified=certified)
    report = ratio_report(plan, d1, d2, digits)
    rows = [r.to_dict(digits) for r in report.rows]
    worst = report.worst()
    largest = report.max_loss()
    payload = {
        "config_sha256": config.digest(),
        "parameterization": plan.parameterization,
        "evaluation_budget": plan.budget_policy,
        "p": p,
        "p_prime": p_prime,
        "digits": digits,
        "certified": certified,
        "transcripts": rows,
        "total": mpmath.nstr(report.dist.total().value, digits),
        "total_prime": mpmath.nstr(report.dist_prime.total().value, digits),
        "max_loss": mpmath.nstr(abs(largest.log_ratio), 15),
        "max_loss_transcript": {"transcript": largest.kind, "t": largest.t, "bound": largest.bound},
        "worst_transcript": {
            "transcript": worst.kind,
            "t": worst.t,
            "bound": worst.bound,
            "loss": mpmath.nstr(abs(worst.log_ratio), 15),
        },
        "violations": sum(1 for r in report.rows if not r.ok),
        "pure_ok": report.ok,
        "ok": report.ok,
        "seconds": report.dist.seconds + report.dist_prime.seconds,
    }
    if plan.pure:
        payload["claim"] = {"kind": "pure", "epsilon": plan.worst_claimed_loss()}
        return payload
    check = approximate_dp_from(plan, d1, d2)
    payload["claim"] = {"kind": "approximate", "epsilon": check.eps, "delta": check.delta_claimed}
    payload["approximate"] = {
        "epsilon": check.eps,
        "delta_found": mpmath.nstr(check.delta, 15),
        "delta_found_error": mpmath.nstr(check.delta_error, 3),
        "delta_found_upper": check.delta_upper,
        "direction": check.direction,
        "delta_claimed": check.delta_claimed,
        "ok": check.ok,
    }
    payload["ok"] = check.ok
    return payload


def format_report(payload: dict) -> str:
    d = min(payload["digits"], 20)
    mode = "certified enclosures" if payload["certified"] else "estimated quadrature error"
    lines = [f"exact transcript probabilities ({mode}, {payload['digits']} digits)"]
    lines.append(f"{'transcript':>12} {'t':>5} {'P':>{d + 8}} {'P_prime':>{d + 8}} {'ln(P/P_prime)':>22} {'bound':>10}  ok")
    for r in payload["transcripts"]:
        lines.append(
            f"{r['transcript']:>12} {r['t']:>5} {r['P']:>{d + 8}} {r['P_prime']:>{d + 8}} "
            f"{r['log_ratio']:>22} {r['bound']:>10.6g}  {'yes' if r['ok'] else 'NO'}"
        )
    lines.append(f"sum P = {payload['total']}   sum P' = {payload['total_prime']}")
    m, w = payload["max_loss_transcript"], payload["worst_transcript"]
    lines.append(f"max |ln(P/P')| = {payload['max_loss']} ({m['transcript']} at t={m['t']}, bound {m['bound']:.6g})")
    lines.append(
        f"closest to its bound: {w['transcript']} at t={w['t']} (|ln(P/P')| = {w['loss']}, bound {w['bound']:.6g}); "
        f"violations: {payload['violations']}"
    )
    c = payload["claim"]
    if c["kind"] == "pure":
        lines.append(f"claim: {c['epsilon']:g}-DP (pure; evaluation_budget = \"none\"): "
                     f"{'holds' if payload['ok'] else 'VIOLATED'} on this pair")
        return "\n".join(lines)
    a = payload["approximate"]
    lines.append(f"evaluation_budget = \"refuse\": the rows are the deployed (capped) law; their bounds are the "
                 f"pure claim, which a capped mechanism does not make (pure violations: {payload['violations']})")
    lines.append(f"claim: ({c['epsilon']:g}, {c['delta']:.6g})-DP; exact delta_eps ({a['direction']}) = "
                 f"{a['delta_found']} (+-{a['delta_found_error']}, upper {a['delta_found_upper']:.10g}): "
                 f"{'holds' if a['ok'] else 'VIOLATED'} on this pair")
    return "\n".join(lines)


@click.command()
@click.argument("config_path", metavar="CONFIG")
@click.option("--p", "p_text", required=True, help="comma-separated Pr[M_t=+1] of the first stream")
@click.option("--p-prime", "q_text", required=True, help="comma-separated Pr[M_t=+1] of the neighbouring stream")
@click.option("--digits", default=20, show_default=True, type=int, help="significant digits of every probability")
@click.option("--certified", is_flag=True, help="rigorous arb enclosures (Gauss-Legendre remainder bounds)")
@click.option("--json", "json_path", default=None, help="write the machine-readable result here")
@guard
def command(config_path, p_text, q_text, digits, certified, json_path):
    """Exact transcript probabilities on two neighbouring streams and the privacy loss of every transcript."""
    out = check_writable(json_path, protected=[config_path])
    if digits < 5 or digits > 200:
        raise UsageFailure(f"--digits must be in [5, 200], got {digits}")
    p = _parse_probs(p_text, "--p")
    q = _parse_probs(q_text, "--p-prime")
    config = GTMConfig.load(config_path)
    payload = exact_payload(config, p, q, digits, certified)
    click.echo(format_report(payload))
    write_json(out, payload)
    if not payload["ok"]:
        sys.exit(EXIT_CHECK_FAILED)  # a violation: exit 1 (after the report and the JSON)
