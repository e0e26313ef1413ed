"""Serve BatchToCO over the finite-output target protocol (docs/finite_outputs.md of the
finite-output auditor): one JSON request per line on stdin, one answer per line on stdout.

    python -m audits.co_target CONFIG [--variant correct|unnoised_score|batch_eps_level] [--summary sequence|final]

request : {"input": <stream object: {"vertices": [...], "edges": [[u, v] or null, ...]}>, "n": N, "seed": S}
response: {"counts": {"<code>": count, ...}}   (codes: gtm_core.batchtoco.codes)
          {"error": "..."} on a bad request (the server keeps running).

A ``null`` edge is the empty update, so a neighbouring pair of inputs is a stream and the same
stream with one edge replaced by ``null`` (:func:`neighbouring_inputs`).
"""

from __future__ import annotations

import argparse
import sys

from gtm_core.batchtoco.codes import SUMMARIES, batchtoco_counts
from gtm_core.batchtoco.params import COConfig
from gtm_core.batchtoco.streams import EdgeStream
from gtm_core.errors import GTMError
from gtm_core.validation import check_nonnegative_int

from .power.batchtoco import SAMPLED_VARIANTS, variant
from .serve import serve_json_lines


def stream_from_input(doc) -> EdgeStream:
    if not isinstance(doc, dict) or "vertices" not in doc or "edges" not in doc:
        raise ValueError("input must be a stream object with 'vertices' and 'edges'")
    names = [str(v) for v in doc["vertices"]]
    index = {v: i for i, v in enumerate(names)}
    edges = []
    for e in doc["edges"]:
        if e is None:
            edges.append(None)
        elif isinstance(e, list) and len(e) == 2 and all(str(x) in index for x in e):
            edges.append((index[str(e[0])], index[str(e[1])]))
        else:
            raise ValueError(f"bad edge {e!r}")
    return EdgeStream(str(doc.get("name", "input")), tuple(names), tuple(edges), bool(doc.get("multigraph", False)))


def neighbouring_inputs(stream: EdgeStream, positions) -> list[tuple[dict, dict]]:
    """[(stream, stream with edge i absent)] as protocol inputs, for audits.finite's ``pairs``."""
    return [(stream.to_dict(), stream.neighbour(i).to_dict()) for i in positions]


def handle(config: COConfig, request, name: str, summary: str) -> dict:
    if not isinstance(request, dict):
        return {"error": "request must be a JSON object"}
    try:
        n = check_nonnegative_int("n", request.get("n"))
        seed = check_nonnegative_int("seed", request.get("seed", 0))
        stream = stream_from_input(request.get("input"))
        counts = batchtoco_counts(config, stream, n, seed, implementation=variant(name), summary=summary)
    except (GTMError, ValueError) as exc:
        return {"error": str(exc).splitlines()[0]}
    return {"counts": dict(counts)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m audits.co_target", description=__doc__.splitlines()[0])
    ap.add_argument("config", help="a [co] configuration (TOML)")
    ap.add_argument("--variant", default="correct", choices=list(SAMPLED_VARIANTS))
    ap.add_argument("--summary", default="sequence", choices=list(SUMMARIES))
    args = ap.parse_args(argv)
    try:
        config = COConfig.load(args.config)
    except GTMError as exc:
        print(f"co_target: error: {exc}", file=sys.stderr)
        return 2
    serve_json_lines(lambda request: handle(config, request, args.variant, args.summary))
    return 0

if __name__ == "__main__":
    sys.exit(main())
