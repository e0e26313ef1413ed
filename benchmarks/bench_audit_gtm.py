"""The auditor on the project's own GTM: throughput, tightness, accuracy and cost.

    python -m benchmarks.bench_audit_gtm [--seconds 60] [--config examples/default.toml]

1. Throughput: GTM steps simulated per second (a run that halts at step h took h steps, one that
   never halts took T): the simulator alone (in-process target, and the subprocess protocol
   target with batched requests) on a 20-step stream and on a short 2-step stream like the
   audit's witnesses; then the whole audit - steps per second of sampling time and steps per
   second of wall time (selection, scoring, validation and estimation included). Machine load
   (os.getloadavg) is recorded next to every figure: the machine is shared.
2. Tightness: `audit` of the correct deployment with the time budget; its lower bound is compared
   with the numerical worst-case loss (audits.power.distribution on the witness pair and the canonical
   mixed pairs) and, when the exact engine is installed, with its worst-case search.
3. Accuracy and cost audits (audits.accuracy) for steps 1, 2, 5, 10.
Writes benchmarks/results/audit_gtm.json with machine information.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from audits.accuracy import accuracy_audit, cost_audit  # noqa: E402
from audits.gtm_audit import audit  # noqa: E402
from audits.power.broken import CORRECT  # noqa: E402
from audits.targets import SimulatorTarget, SubprocessTarget  # noqa: E402
from benchmarks.bench_audit_power import numerical_worst  # noqa: E402
from benchmarks.machine import machine_info  # noqa: E402
from gtm_core.config import GTMConfig  # noqa: E402
from gtm_core.exact import worst_case_search  # noqa: E402
from gtm_core.planners import make_plan  # noqa: E402


class CountingTarget:
    """Wraps a target and counts simulated GTM steps (a run that halts at h took h steps, else T)."""

    def __init__(self, inner):
        self.inner, self.steps, self.seconds = inner, 0, 0.0
        self.max_T, self.name = inner.max_T, inner.name

    def sample(self, p, n, seed, evaluations=False):
        t0 = time.perf_counter()
        s = self.inner.sample(p, n, seed, evaluations=evaluations)
        self.seconds += time.perf_counter() - t0
        self.steps += int(np.where(s.halt == 0, len(p), s.halt).sum())
        return s

    def describe(self):
        return self.inner.describe()


def throughput(target, stream, n, reps):
    c = CountingTarget(target)
    for i in range(reps):
        c.sample(stream, n, i)
    return c.steps / c.seconds


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--config", default="examples/default.toml")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "audit_gtm.json"))
    args = ap.parse_args(argv)
    cfg = GTMConfig.load(args.config)
    plan = make_plan(cfg)
    eps_t = plan.step(1).eps_t
    res = {"benchmark": "audit_gtm", "config": args.config, "machine": machine_info()}

    stream = [plan.step(t).continue_threshold * 0.5 for t in range(1, 21)]
    short = [0.12, 0.106]  # a 2-step stream like the audit's witnesses (most runs take 1-2 steps)
    sim = SimulatorTarget(plan)
    res["load_before_throughput"] = load()
    res["throughput_inprocess_steps_per_s"] = throughput(sim, stream, 1_000_000, 3)
    res["throughput_inprocess_short_stream_steps_per_s"] = throughput(sim, short, 1_000_000, 5)
    with SubprocessTarget(f"{sys.executable} -m audits.serve {args.config}", max_batch=1_000_000) as sub:
        sub.sample([0.1], 10, 0)
        res["throughput_subprocess_steps_per_s"] = throughput(sub, stream, 1_000_000, 3)
        res["throughput_subprocess_short_stream_steps_per_s"] = throughput(sub, short, 1_000_000, 5)
    res["load_after_throughput"] = load()
    print(f"simulator only (load {res['load_before_throughput'][0]:.2f}): 20-step stream in-process "
          f"{res['throughput_inprocess_steps_per_s'] / 1e6:.1f} M steps/s, subprocess "
          f"{res['throughput_subprocess_steps_per_s'] / 1e6:.1f} M steps/s; 2-step stream in-process "
          f"{res['throughput_inprocess_short_stream_steps_per_s'] / 1e6:.1f}, subprocess "
          f"{res['throughput_subprocess_short_stream_steps_per_s'] / 1e6:.1f} M steps/s (one request = 1e6 runs)")

    counting = CountingTarget(sim)
    load_before = load()
    r = audit(counting, epsilon=plan.epsilon, eps_t=eps_t, seconds=args.seconds, seed=args.seed, progress=False)
    res["whole_audit"] = {"steps": counting.steps, "sampling_seconds": counting.seconds, "wall_seconds": r.seconds,
                          "steps_per_s_sampling": counting.steps / counting.seconds,
                          "steps_per_s_wall": counting.steps / r.seconds,
                          "load_before": load_before, "load_after": load()}
    wa = res["whole_audit"]
    print(f"whole audit ({args.seconds:g} s budget, load {load_before[0]:.2f} -> {wa['load_after'][0]:.2f}): "
          f"{wa['steps'] / 1e6:.0f} M steps, {wa['steps_per_s_sampling'] / 1e6:.1f} M steps/s of sampling time, "
          f"{wa['steps_per_s_wall'] / 1e6:.1f} M steps/s of wall time ({r.seconds:.1f} s)")
    w = r.witness
    num = numerical_worst(plan, CORRECT, eps_t, [(tuple(w.input_a), tuple(w.input_b))])
    res["tightness"] = {"lower_bound": r.epsilon_lower_bound, "numerical_worst_case": num[0],
                        "ratio": r.epsilon_lower_bound / num[0], "witness": w.to_dict(), "seconds": r.seconds,
                        "samples": r.samples, "audit_steps_per_s": counting.steps / counting.seconds,
                        "exact_engine_available": True}
    ex = worst_case_search(plan, horizon=3, seconds=args.seconds, seed=args.seed)
    res["tightness"]["exact_worst_case"] = {"loss": ex.loss, "transcript": ex.transcript, "t": ex.t,
                                            "p": list(ex.p), "p_prime": list(ex.p_prime),
                                            "seconds": ex.seconds}
    res["tightness"]["ratio_to_exact"] = r.epsilon_lower_bound / ex.loss
    print(f"exact engine worst case (horizon 3, {ex.seconds:.0f} s): {ex.loss:.9f} ({ex.transcript} at t={ex.t}); "
          f"audit / exact = {r.epsilon_lower_bound / ex.loss:.4f}")
    print(f"tightness: audit lower bound {r.epsilon_lower_bound:.4f} in {r.seconds:.1f} s vs numerical worst case "
          f"{num[0]:.4f} ({num[1]}) -> ratio {r.epsilon_lower_bound / num[0]:.3f}")

    acc = accuracy_audit(sim, plan, steps=(1, 2, 5, 10), n=200_000, seed=args.seed)
    res["accuracy"] = [a.to_dict() for a in acc]
    for a in acc:
        print(f"accuracy t={a.t:3d}: Type I {a.type_I:.5f} [{a.type_I_interval[0]:.5f}, {a.type_I_interval[1]:.5f}]  "
              f"Type II {a.type_II:.5f} [{a.type_II_interval[0]:.5f}, {a.type_II_interval[1]:.5f}]  "
              f"beta_t {a.beta_t:.5f} beta {a.beta:g} ok={a.ok}")
    cost = cost_audit(sim, plan, T=10, n=100_000, seed=args.seed)
    res["cost"] = cost.to_dict()
    print(f"cost T=10: mean evaluations {cost.mean_evaluations:,.0f}, p99 {cost.p99_evaluations:,.0f}, "
          f"sum lambda_max {cost.sum_lambda_max:,.0f}, budget sum {cost.sum_budget:,}, above budget "
          f"{cost.fraction_above_budget:.2e} [{cost.fraction_above_budget_interval[0]:.1e}, "
          f"{cost.fraction_above_budget_interval[1]:.1e}]")
    Path(args.out).write_text(json.dumps(res, indent=2, default=float) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
