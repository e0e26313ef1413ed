"""Serve our GTM over the JSON-lines target protocol of docs/protocol.md (the example target for `gtm audit`).

    python -m audits.serve CONFIG [--broken VARIANT] [--seed-mode request|os]

Reads one request per line on stdin, ``{"p": [...], "n": N, "seed": S}``, answers
``{"halt": [...], "evaluations": [...]}`` (evaluations only when the request has
``"evaluations": true``; not under ``evaluation_budget = "refuse"``, whose correct deployment is
:func:`audits.capped_target.deployed_outcomes`, refusals answered as ``-t``). ``--seed-mode
request`` (default) seeds each request's generator with S so audits are reproducible;
``--seed-mode os`` ignores S and draws fresh operating-system entropy (a deployment's behaviour).
``--broken VARIANT`` serves one of the deliberately broken deployments of
:mod:`audits.power.broken` (the auditor's power suite). A bad request gets ``{"error": "..."}``;
the server keeps running.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from gtm_core.config import GTMConfig
from gtm_core.errors import GTMError
from gtm_core.inputs import parse_json
from gtm_core.planners import make_plan
from gtm_core.validation import is_integer, is_real

from .capped_target import deployed_outcomes
from .power.broken import VARIANTS, simulate_deployment, variant


def handle(plan, deployment, request: dict, seed_mode: str) -> dict:
    if not isinstance(request, dict):
        return {"error": "request must be a JSON object"}
    p, n, seed = request.get("p"), request.get("n"), request.get("seed", 0)
    if not isinstance(p, list) or not p or not all(is_real(x) for x in p):
        return {"error": "p must be a non-empty list of numbers"}
    if not is_integer(n) or n < 0:
        return {"error": f"n must be a non-negative integer, got {n!r}"}
    if not is_integer(seed) or seed < 0:
        return {"error": f"seed must be a non-negative integer, got {seed!r}"}
    want_evals = bool(request.get("evaluations", False))
    rng = np.random.default_rng(seed if seed_mode == "request" else None)
    if deployment.is_algorithm1 and not plan.pure:  # the capped deployment, refusals included (-t)
        if want_evals:
            return {"error": "evaluation counts are not served under evaluation_budget = \"refuse\""}
        try:
            return {"halt": deployed_outcomes(plan, p, n, rng).tolist()}
        except GTMError as exc:
            return {"error": str(exc)}
    try:
        res = simulate_deployment(plan, deployment, p, n, rng, evaluations=want_evals)
    except GTMError as exc:
        return {"error": str(exc)}
    out = {"halt": res.halt.tolist()}
    if want_evals:
        out["evaluations"] = res.evaluations.tolist()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m audits.serve", description=__doc__.splitlines()[0])
    ap.add_argument("config", help="GTM configuration (TOML)")
    ap.add_argument("--broken", default="correct", choices=sorted(VARIANTS), help="serve a broken deployment")
    ap.add_argument("--seed-mode", default="request", choices=["request", "os"])
    args = ap.parse_args(argv)
    try:
        plan = make_plan(GTMConfig.load(args.config))
        deployment = variant(args.broken)
    except GTMError as exc:
        print(f"audits.serve: error: {exc}", file=sys.stderr)
        return 2
    serve_json_lines(lambda request: handle(plan, deployment, request, args.seed_mode))
    return 0


def serve_json_lines(answer, stdin=None, stdout=None) -> None:
    """The JSON-lines loop shared by the example targets: one request per non-empty line of ``stdin``,
    ``answer(request)`` written as one compact JSON line (``{"error": ...}`` for a request that is not
    JSON, nests deeper than :data:`gtm_core.inputs.MAX_NESTING` or repeats a key; the loop goes on)."""
    stdin = sys.stdin if stdin is None else stdin
    out = sys.stdout if stdout is None else stdout
    for line in stdin:
        line = line.strip()
        if not line:
            continue
        try:
            request = parse_json(line, what="request")
        except GTMError as exc:  # malformed, nested too deep, duplicate keys, non-finite numbers
            response = {"error": f"malformed JSON request: {str(exc)[:200]}"}
        else:
            response = answer(request)
        out.write(json.dumps(response, separators=(",", ":")) + "\n")
        out.flush()

if __name__ == "__main__":
    sys.exit(main())
