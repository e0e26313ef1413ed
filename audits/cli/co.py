"""`gtm co run/bench/ledger/witness`: BatchToCO (Section 7) on insertion streams.

* ``run CONFIG --stream FILE [--json PATH] [--state PATH [--generation-check CMD]]`` releases Y_t per
  update as JSON lines; ``--state`` is locked, authenticated (``STATE.key``) and link-resolved like a
  ``gtm deploy`` state.
* ``bench [--quick] [--out DIR] [--json PATH] [--no-comparison]`` runs BatchToCO and the baselines on the
  bundled streams, and the certified variant against the baselines on the adaptive streams, for k-vertex
  coverage and for densest subgraph (Section 8.2, on the <= 15-vertex streams).
* ``ledger CONFIG --horizon T`` certifies the configuration's Lemma 38 budget in arb balls (exit 1 if not);
  a ``variant = "certified"`` configuration gets the certified split's ledger.
* ``witness`` prints the exact privacy loss of BatchToCO and its broken variants on a tiny stream.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click
import numpy as np

from gtm_core.batchtoco import persist
from gtm_core.batchtoco.driver import BatchToCO
from gtm_core.batchtoco.params import COConfig
from gtm_core.batchtoco.problems import make_problem
from gtm_core.batchtoco.streams import load_stream
from gtm_core.deployment import GenerationCheck
from gtm_core.errors import EvaluationBudgetExceeded, StateError

from .common import EXIT_CHECK_FAILED, UsageFailure, check_writable, guard, write_json


def solution_label(problem, stream, solution) -> list:
    names = stream.vertices
    if problem.name == "coverage":
        return [names[int(v)] for v in solution]
    mask = int(solution)
    return [names[i] for i in range(len(names)) if (mask >> i) & 1]


@click.group()
def command():
    """BatchToCO: run GTM inside the batch-to-continual-observation reduction (Algorithm 3)."""


@command.command("run")
@click.argument("config_path", metavar="CONFIG")
@click.option("--stream", "stream_path", required=True, help="stream file (JSON: vertices, edges)")
@click.option("--json", "json_path", default=None, help="write a summary here")
@click.option("--state", "state_path", default=None,
              help="persist the run here (crash-safe, resumable; locked, authenticated with STATE.key, 0600)")
@click.option("--generation-check", "generation_check", default=None, metavar="CMD",
              help="with --state: external rollback check, as for gtm deploy step: 'CMD check ID GEN' on resume, "
                   "'CMD record ID GEN+1' before and 'CMD record ID GEN' after every update")
@guard
def run_cmd(config_path, stream_path, json_path, state_path, generation_check):
    """Release Y_t after every update of the stream as JSON lines on stdout."""
    key_path = None if state_path is None else f"{state_path}.key"
    out = check_writable(json_path, protected=(config_path, stream_path, state_path, key_path,
                                               None if state_path is None else f"{state_path}.lock"),
                         protected_temporaries=(state_path, key_path))
    if generation_check is not None and state_path is None:
        raise UsageFailure("--generation-check goes with --state")
    check = None if generation_check is None else GenerationCheck.from_text(generation_check)
    config = COConfig.load(config_path)
    stream = load_stream(stream_path)
    problem = make_problem(config.problem, len(stream.vertices), config.k)
    if state_path is not None:
        check_writable(state_path, "--state", protected=(config_path, stream_path, json_path))
    run = None
    try:
        if state_path is not None and os.path.lexists(os.path.realpath(state_path)):
            run = persist.RunState.open(state_path)
            doc = run.body
            where = repr(str(run.path))
            if doc.get("config") != config.to_dict() or doc.get("vertices") != list(stream.vertices):
                raise StateError(f"state file {where} belongs to a different configuration or vertex set")
            released = doc.get("released")
            if not isinstance(released, list) or not isinstance(doc.get("entropy"), str):
                raise StateError(f"state file {where} is corrupted (missing released outputs or seed)")
            seen = [list(e) if e is not None else None for e in stream.edges[: len(released)]]
            if len(stream.edges) < len(released) or seen != doc.get("edges"):
                raise StateError("the stream file does not extend the stream the state has already processed")
            if check is not None:  # before any update: a rolled-back state is refused here
                check.run("check", run.run_id, run.generation)
            entropy = doc["entropy"]
            algo = _replay(config, problem, stream, entropy, released, run.path)
        else:
            entropy = str(config.seed) if config.seed is not None else str(np.random.SeedSequence().entropy)
            algo, released = BatchToCO(config, problem, _generator(entropy)), []
            if state_path is not None:
                run = persist.RunState.create(state_path, _doc(config, stream, entropy, released, pending=None))
                if check is not None:
                    check.run("record", run.run_id, run.generation)
        lines = _run_updates(run, check, algo, config, problem, stream, entropy, released)
    except BaseException:
        if check is not None and run is not None and run.generation:
            try:  # the log follows the state, also after a failure
                check.run("record", run.run_id, run.generation)
            except Exception:  # broad-except: the original error is re-raised below; a failed record must not mask it
                pass
        raise
    finally:
        if run is not None:
            run.close()
    write_json(out, {"config": config.to_dict(), "stream": stream.name, "updates": len(stream.edges),
                     "released_this_call": len(lines), "checkpoints": [r["t"] for r in released if r["checkpoint"]],
                     "final_solution": released[-1]["solution"] if released else None,
                     "seeded": config.seed is not None,
                     "note": ("seeded generator: not for deployment; " if config.seed is not None else "")
                     + "float64 samplers (benchmark-grade, not a hardened deployment)"})


def _run_updates(run, check, algo, config, problem, stream, entropy, released) -> list:
    """Process the updates after ``released`` under the write-ahead protocol (module docstring of
    :mod:`gtm_core.batchtoco.persist`); the lines released by this call."""
    lines = []
    try:
        for t in range(len(released) + 1, len(stream.edges) + 1):
            e = stream.edges[t - 1]
            if run is not None:
                if check is not None:  # write-ahead: the log refuses the pre-update state from now on
                    check.reserve(run.run_id, run.generation)
                run.save(_doc(config, stream, entropy, released, pending=t))
            rec = algo.step(e)
            line = {"t": rec.t, "solution": solution_label(problem, stream, rec.solution), "checkpoint": rec.checkpoint}
            released.append(line)
            if run is not None:
                run.save(_doc(config, stream, entropy, released, pending=None))
                if check is not None:
                    check.run("record", run.run_id, run.generation)
            click.echo(json.dumps(line))
            lines.append(line)
    except EvaluationBudgetExceeded as exc:
        if run is not None:  # a terminal failure, recorded; the update is never re-run
            doc = _doc(config, stream, entropy, released, pending=None)
            doc["failed"] = f"update {len(released) + 1}: evaluation budget exceeded"
            run.save(doc)
            if check is not None:
                check.run("record", run.run_id, run.generation)
        click.echo(f"gtm: run failed: {str(exc).splitlines()[0]}", err=True)
        sys.exit(EXIT_CHECK_FAILED)
    return lines


def _generator(entropy: str) -> np.random.Generator:
    """The run's generator from its stored seed entropy (a decimal integer)."""
    try:
        value = int(entropy)
    except ValueError:
        raise StateError(f"state seed entropy is not an integer: {entropy[:40]!r}") from None
    if value < 0:
        raise StateError("state seed entropy is negative")
    return np.random.default_rng(np.random.SeedSequence(value))


def _replay(config, problem, stream, entropy: str, released: list, state) -> BatchToCO:
    """Rebuild the run by replaying its processed updates from the stored seed (the same noise, drawn
    again deterministically); the replay must release exactly the stored outputs."""
    algo = BatchToCO(config, problem, _generator(entropy))
    for t, stored in enumerate(released, start=1):
        rec = algo.step(stream.edges[t - 1])
        line = {"t": rec.t, "solution": solution_label(problem, stream, rec.solution), "checkpoint": rec.checkpoint}
        if line != stored:
            raise StateError(f"state file {str(state)!r}: replaying update {t} from the stored seed does not "
                             "reproduce the released output (tampered state or a different implementation)")
    return algo


def _doc(config, stream, entropy: str, released, *, pending):
    """The JSON state body: what determines the run (config, vertices, updates, seed entropy) and its outputs."""
    return {"config": config.to_dict(), "vertices": list(stream.vertices),
            "edges": [list(e) if e is not None else None for e in stream.edges[: len(released)]],
            "entropy": entropy, "released": released, "pending": pending}


@command.command("bench")
@click.option("--quick", is_flag=True, help="bundled streams only, fewer seeds (<= 3 min)")
@click.option("--long", "long_stream", is_flag=True, help="add the 1e5-update synthetic coverage stream")
@click.option("--out", "out_dir", default="co_bench", help="output folder (JSON, Markdown, plots)")
@click.option("--seeds", type=int, default=None, help="runs per stream (default: per-stream preset)")
@click.option("--config", "config_path", default=None, help="a [co] configuration (default: the built-in one)")
@click.option("--json", "json_path", default=None, help="also write the results (the co_bench.json payload) here")
@click.option("--no-comparison", is_flag=True,
              help="skip the certified variant's comparisons on the adaptive streams (coverage and densest subgraph)")
@guard
def bench_cmd(quick, long_stream, out_dir, seeds, config_path, json_path, no_comparison):
    """BatchToCO against recompute-every-step (basic / advanced composition) and a doubling schedule."""
    from ..bench.co import markdown, run_bench, stderr_progress

    out_json = check_writable(json_path, protected=(config_path,))
    config = COConfig.load(config_path) if config_path else COConfig()
    if seeds is not None and seeds < 1:
        raise UsageFailure(f"--seeds must be >= 1, got {seeds}")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise UsageFailure(f"--out is not a directory: {out_dir!r}")
    payload = run_bench(config, quick=quick, out_dir=out, progress=stderr_progress, long_stream=long_stream,
                        seeds_override=seeds, comparison=not no_comparison)
    write_json(out_json, payload)
    click.echo(markdown(payload))


@command.command("ledger")
@click.argument("config_path", metavar="CONFIG")
@click.option("--horizon", type=int, required=True, help="number of updates to certify")
@click.option("--json", "json_path", default=None)
@guard
def ledger_cmd(config_path, horizon, json_path):
    """Certify Lemma 38's budget for CONFIG with arb balls (exit 1 if it cannot be certified)."""
    from proofs.co_ledger import ledger

    out = check_writable(json_path, protected=(config_path,))
    config = COConfig.load(config_path)
    if config.variant == "certified":
        from proofs.co_certified_ledger import ledger as certified_ledger

        if horizon > config.horizon:
            raise UsageFailure(f"--horizon {horizon} exceeds the configuration's planned horizon {config.horizon}")
        c = certified_ledger(config)
        click.echo(f"eps = {c.epsilon} (certified variant, {c.levels} levels from l_0 = {c.first_level}): total <= "
                   f"{c.total_upper:.9g}; shares " + ", ".join(f"{k} {v:.4f}" for k, v in c.shares.items())
                   + f"; {'CERTIFIED' if c.certified else 'NOT certified'}")
        write_json(out, c.to_dict())
        if not c.certified:
            sys.exit(EXIT_CHECK_FAILED)
        return
    r = ledger(config, horizon)
    click.echo(f"eps = {r.epsilon}: levels <= min(T, 40) sum to <= {r.total_upper:.6g}; all levels <= "
               f"{r.total_with_tail_upper:.6g}; failure <= {r.failure_upper:.4g}; "
               f"{'CERTIFIED' if r.certified else 'NOT certified'}")
    write_json(out, r.to_dict())
    if not r.certified:
        sys.exit(EXIT_CHECK_FAILED)


@command.command("witness")
@click.option("--json", "json_path", default=None)
@guard
def witness_cmd(json_path):
    """Exact privacy loss on a 3-edge coverage stream (k = 1, 3 candidates) for every variant."""
    from gtm_core.batchtoco.problems import CoverageProblem
    from gtm_core.batchtoco.witness import witness

    from ..power.batchtoco import VARIANTS, variant

    out = check_writable(json_path)
    config = COConfig(epsilon=0.9, k=1, kappa=0.2)
    edges = [(0, 1), (0, 2), (1, 2)]
    rows = []
    for v in (name for name in VARIANTS if name != "selection_up"):  # selection_up: certified variant only
        r = witness(config, CoverageProblem(3, 1), edges, 2, implementation=variant(v), name=v, dps=20)
        rows.append(r.to_dict())
        click.echo(f"{v:16s} loss = {r.loss:.6g}  (eps = {r.epsilon})  delta(eps) = {r.delta_at_epsilon:.3g}  "
                   f"{'EXCEEDS eps' if r.exceeds else 'within eps'}")
    from gtm_core.batchtoco.witness import instance_input_witness

    inst = [instance_input_witness(COConfig(), 2, implementation=variant(v)).to_dict() for v in ("correct", "batch_eps_level")]
    for row, v in zip(inst, ("correct", "batch_eps_level")):
        click.echo(f"GTM_2 alone, input privacy of {v}: loss = {row['loss']:.4g} vs Lemma 38 share {row['share']:.4g}  "
                   f"{'EXCEEDS the share' if row['exceeds'] else 'within the share'}")
    write_json(out, {"config": config.to_dict(), "edges": edges, "absent": 2, "variants": rows,
                     "gtm_instance_worst_case_inputs": inst})
    if rows[0]["exceeds"]:
        sys.exit(EXIT_CHECK_FAILED)
