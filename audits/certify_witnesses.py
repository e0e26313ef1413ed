"""The certificate's independent witnesses beyond rigorous arithmetic: the lemma checks of
:mod:`proofs`, the exact engine's worst-case search and exact thresholds, and a short audit of
the reference implementation.

Each witness is feature-checked (``importlib.util.find_spec``). A witness that is not available
in this installation is reported honestly as ``witness-unavailable`` - and the certificate then
does not pass. A witness is never faked.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import time
from pathlib import Path
from typing import Any

from .certify import Claim, Witness

# Paper results whose lemma checks back the privacy and accuracy claims of a certificate
# (registry names of proofs/registry.py; a prefix selects every sub-check, e.g. lemma10.3a ...).
BACKING_LEMMAS = ("lemma10", "lemma11", "lemma15", "lemma17", "lemma19", "lemma20", "theorem21", "lemma22",
                  "theorem23", "lemma24")


def _available(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def _unavailable(cid: str, category: str, statement: str, kind: str, reason: str) -> Claim:
    return Claim(cid, category, statement, {}, Witness(kind, {"unavailable": reason}), "witness-unavailable")


def external_claims(config, plan, rows, *, quick: bool, budgets: dict, seed: int, progress,
                    skip: bool = False) -> list[Claim]:
    if skip:
        reason = "skipped on request (certify(witnesses=False))"
        return [Claim(cid, cat, "External witness skipped on request.", {}, Witness(kind, {"unavailable": reason}),
                      "witness-unavailable")
                for cid, cat, kind in (("privacy.lemma-checks", "privacy", "solver-proof"),
                                       ("privacy.plan-identities", "privacy", "solver-proof"),
                                       ("privacy.exact-worst-case", "privacy", "exact-engine"),
                                       ("accuracy.exact-threshold", "accuracy", "exact-engine"),
                                       ("privacy.audit", "privacy", "audit"))]
    out = []
    progress.stage("lemmas", "lemma checks backing Lemma 17 / Theorem 21 / Theorem 23 (proofs/)")
    out.append(lemma_checks_claim(plan, quick=quick))
    progress.stage("identities", "instantiating the proved parameter identities with this plan")
    out.append(plan_identities_claim(plan, rows, progress=progress))
    progress.stage("exact_search", f"exact engine: worst-case search ({budgets['exact_search']:g} s)")
    out.append(exact_search_claim(plan, seconds=budgets["exact_search"], seed=seed, quick=quick))
    progress.stage("exact_threshold", f"exact engine: exact rejection thresholds ({budgets['exact_threshold']:g} s)")
    out.append(exact_threshold_claim(plan, rows, seconds=budgets["exact_threshold"]))
    progress.stage("audit", f"auditing the reference GTM under this configuration ({budgets['audit']:g} s)")
    out.append(audit_claim(plan, seconds=budgets["audit"], seed=seed))
    return out


# ---------------------------------------------------------------------------
# proofs/
# ---------------------------------------------------------------------------


def lemma_checks_claim(plan, *, quick: bool) -> Claim:
    cid = "privacy.lemma-checks"
    statement = ("The lemmas behind the privacy and accuracy claims (Lemmas 10, 11, 15, 17, 19, 20, 22, 24, "
                 "Theorems 21 and 23) are proved by Z3 and cvc5 or certified by interval arithmetic, and every "
                 "mutant is killed.")
    if not _available("proofs.registry"):
        return _unavailable(cid, "privacy", statement, "solver-proof",
                            "proofs.registry is not installed in this build (the proofs branch has not landed)")
    try:
        results, cached, key, seconds = _registry_results(BACKING_LEMMAS)
    except Exception as exc:  # a witness that crashes is not a witness
        return _unavailable(cid, "privacy", statement, "solver-proof", f"{type(exc).__name__}: {exc}")
    ok = bool(results) and all(r["ok"] for r in results.values())
    return Claim(cid, "privacy", statement,
                 {"lemmas": results, "cached": cached, "seconds": seconds,
                  "failing": sorted(k for k, r in results.items() if not r["ok"])},
                 Witness("solver-proof", {"registry": "proofs.registry", "cache_key": key,
                                          "cache": "reused when proofs/*.py and the solver versions are unchanged"}),
                 "pass" if ok else "fail")


def _cache_dir() -> Path:
    base = os.environ.get("GTM_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "gtm")
    return Path(base)


def _registry_results(names) -> tuple[dict, bool, str, float]:
    """Run the named lemma checks (or reuse a cached run with the same proofs/ sources and solver
    versions). Returns ({check: verdict}, cached, cache key, seconds of the run)."""
    registry = importlib.import_module("proofs.registry")
    src = Path(registry.__file__).parent
    h = hashlib.sha256()
    for f in sorted(src.glob("*.py")):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    h.update(json.dumps(registry.versions(), sort_keys=True).encode())
    h.update(json.dumps(sorted(names)).encode())
    key = h.hexdigest()
    path = _cache_dir() / f"prove-{key[:32]}.json"
    try:
        data = json.loads(path.read_text())
        if data.get("key") == key:
            return data["results"], True, key, data["seconds"]
    except (OSError, ValueError, KeyError):
        pass
    report = registry.run(registry.select(list(names)))
    results = {}
    for r in report.results:
        d = r.to_dict()
        results[d["lemma"]] = {"ref": d.get("ref"), "status": d["status"], "ok": bool(d["ok"]),
                               "method": d.get("method"), "mutants_killed": d.get("mutants_killed"),
                               "mutants_total": d.get("mutants_total"), "seconds": d.get("seconds")}
    seconds = round(report.seconds, 3)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"key": key, "results": results, "seconds": seconds}))
        os.replace(tmp, path)
    except OSError:
        pass  # an unwritable cache only costs time
    return results, False, key, seconds


def plan_identities_claim(plan, rows, *, progress) -> Claim:
    cid = "privacy.plan-identities"
    statement = ("The parameter identities proved in proofs/ (Theorem 21: 1/tau1 + 2/tau2 = eps and the Lambda_t "
                 "exponent bookkeeping; Theorem 23: the exact cancellation) hold for this plan's numbers, "
                 "checked rigorously.")
    if plan.parameterization == "horizon":
        return Claim(cid, "privacy", statement + " Not applicable to the horizon planner: its c_t, rho_t, Lambda_t "
                     "are not Theorem 21's (privacy rests on Lemma 17 alone, checked by privacy.pure-epsilon).",
                     {}, Witness("solver-proof", {"function": "proofs.instantiate.check_plan_identities"}),
                     "not-applicable")
    if not _available("proofs.instantiate"):
        return _unavailable(cid, "privacy", statement, "solver-proof",
                            "proofs.instantiate is not installed in this build (the proofs branch has not landed)")
    try:
        inst = importlib.import_module("proofs.instantiate")
        T = len(rows)
        failures, names, skipped = [], set(), set()
        for t in range(1, T + 1):  # every step: about 5 ms each
            res = inst.check_plan_identities(plan, t)
            failed = list(getattr(res, "failed", lambda: [])())
            if plan.parameterization in ("exact", "exact_noise"):
                # the exact planners pick c_t, rho_t from exact tails, not from the Chernoff thresholds
                # of Lemma 11 / Lemma 20: those identities do not apply (accuracy.poisson-tails, or for
                # exact_noise accuracy.noise-integrated-tails, certifies the exact probabilities instead)
                na = [c for c in failed if _chernoff_identity(c, plan.parameterization)]
                skipped.update(c.name for c in na)
                failed = [c for c in failed if not _chernoff_identity(c, plan.parameterization)]
                ok = not failed
            else:
                ok = _truthy(res)
            if not ok:
                failures.append(t)
                names.update(c.name for c in failed)
            if t == 1:
                first = res.to_dict() if hasattr(res, "to_dict") else {}
            progress.steps(t, T)
    except Exception as exc:
        return _unavailable(cid, "privacy", statement, "solver-proof", f"{type(exc).__name__}: {exc}")
    checked = [c.get("name") for c in first.get("claims", [])]
    values = {"steps_checked": T, "identities_per_step": checked, "failing_steps": failures[:20],
              "failing_identities": sorted(names)}
    if skipped:
        values["not_applicable_identities"] = sorted(skipped)
    return Claim(cid, "privacy", statement, values,
                 Witness("solver-proof", {"function": "proofs.instantiate.check_plan_identities",
                                          "method": "exact rationals and arb balls at the plan's numbers"}),
                 "pass" if not failures else "fail")


def _chernoff_identity(claim, parameterization: str = "exact") -> bool:
    """Lemma 11 / Lemma 20 identities that hold for the Chernoff-threshold planners only. For
    exact_noise also Lemma 10(3b)'s domain condition c + 1 >= 2 ln(1/beta): its c_t is far below
    Theorem 21's, and no Chernoff tail bound is used."""
    lemma = str(getattr(claim, "lemma", ""))
    name = str(getattr(claim, "name", ""))
    if parameterization == "exact_noise" and name.startswith("c + 1 >= 2 ln(1/beta)"):
        return True
    return lemma.startswith("Lemma 11") or name.startswith("rho = lambda^")


def _truthy(res: Any) -> bool:
    for attr in ("ok", "passed", "holds"):
        if hasattr(res, attr):
            return bool(getattr(res, attr))
    if isinstance(res, dict):
        for key in ("ok", "passed", "holds"):
            if key in res:
                return bool(res[key])
        if "status" in res:
            return res["status"] in ("pass", "proved", "certified", "holds")
    if hasattr(res, "status"):
        return res.status in ("pass", "proved", "certified", "holds")
    return bool(res)


# ---------------------------------------------------------------------------
# exact engine
# ---------------------------------------------------------------------------


def exact_search_claim(plan, *, seconds: float, seed: int, quick: bool = True) -> Claim:
    cid = "privacy.exact-worst-case"
    statement = ("The exact engine's worst-case search over neighbouring Bernoulli streams finds no transcript "
                 "whose exact privacy loss exceeds its claimed bound (Lemma 17 (6)-(7)).")
    if not _available("gtm_core.exact_search"):
        return _unavailable(cid, "privacy", statement, "exact-engine",
                            "gtm_core.exact_search is not installed in this build (the exact branch has not landed)")
    try:
        mod = importlib.import_module("gtm_core.exact_search")
        horizon = min(3 if quick else 5, plan.horizon)
        res = mod.worst_case_search(plan, horizon=horizon, seconds=seconds, seed=seed % (2**32))
        d = res.to_dict() if hasattr(res, "to_dict") else dict(res)
        found = float(d["loss"])
        error = float(d.get("loss_error", 0.0))
        claimed = float(d["claimed"])
    except Exception as exc:
        return _unavailable(cid, "privacy", statement, "exact-engine", f"{type(exc).__name__}: {exc}")
    values = {"loss_found": found, "loss_error": error, "loss_claimed": claimed,
              "ratio": found / claimed if claimed else None, "search_horizon": horizon,
              "evaluations": d.get("evaluations"), "seconds": d.get("seconds"),
              "witness": {"p": list(d.get("p", ())), "p_prime": list(d.get("p_prime", ())),
                          "transcript": d.get("transcript"), "t": d.get("t")}}
    exceeds = found - error > claimed
    return Claim(cid, "privacy", statement, values,
                 Witness("exact-engine", {"function": "gtm_core.exact_search.worst_case_search",
                                          "seed": seed % (2**32)}),
                 "fail" if exceeds else "pass")


def exact_threshold_claim(plan, rows, *, seconds: float) -> Claim:
    cid = "accuracy.exact-threshold"
    statement = ("The exact engine's rejection threshold at sampled steps: the largest p whose exact halting "
                 "probability (eta_1 and eta_2,t integrated, no union or Chernoff bound) stays within beta^I_t, "
                 "next to the paper's p_bar_t; the gain is how much tighter the exact analysis is.")
    if not _available("gtm_core.exact"):
        return _unavailable(cid, "accuracy", statement, "exact-engine",
                            "gtm_core.exact is not installed in this build (the exact branch has not landed)")
    try:
        mod = importlib.import_module("gtm_core.exact")
        fn = getattr(mod, "exact_rejection_threshold")
        T = len(rows)
        ts = sorted({t for t in (1, 10, 100, 1000, T) if t <= T})
        table = {}
        t0 = time.monotonic()
        for t in ts:
            if time.monotonic() - t0 > seconds and table:
                break
            d = fn(plan, t)
            pe = float(d["p_exact"] if isinstance(d, dict) else d)
            pb = rows[t - 1]["p_bar"]
            table[str(t)] = {"p_bar_paper": pb, "p_bar_exact": pe, "gain": pe / pb if pb > 0 else None,
                             "bracket": list(d.get("bracket", ())) if isinstance(d, dict) else None}
    except Exception as exc:
        return _unavailable(cid, "accuracy", statement, "exact-engine", f"{type(exc).__name__}: {exc}")
    return Claim(cid, "accuracy", statement,
                 {"thresholds": table, "steps": [int(t) for t in table],
                  "tighter_at": [int(t) for t, v in table.items() if v["p_bar_exact"] > v["p_bar_paper"]]},
                 Witness("exact-engine", {"function": "gtm_core.exact.exact_rejection_threshold"}), "info")


_MISSING = object()


def _get(obj, *names, default=_MISSING):
    for n in names:
        if isinstance(obj, dict) and n in obj:
            return obj[n]
        if not isinstance(obj, dict) and hasattr(obj, n):
            return getattr(obj, n)
    if default is not _MISSING:
        return default
    raise AttributeError(f"result has none of {names}")


def _claimed_max(plan) -> float:
    if plan.parameterization != "theorem23":
        return float(plan.epsilon)
    return max(plan.claimed_loss(t, True) for t in range(1, plan.horizon + 1))


# ---------------------------------------------------------------------------
# auditor
# ---------------------------------------------------------------------------


def audit_claim(plan, *, seconds: float, seed: int, confidence: float = 0.95) -> Claim:
    cid = "privacy.audit"
    statement = ("A statistical audit of the reference GTM under this configuration finds no privacy violation: "
                 f"the {confidence:g}-confidence lower bound on the privacy loss stays at or below the claim.")
    if not (_available("audits.auditor") and _available("audits.targets")):
        return _unavailable(cid, "privacy", statement, "audit",
                            "audits.auditor / audits.targets are not installed in this build "
                            "(the auditor branch has not landed)")
    try:
        auditor = importlib.import_module("audits.auditor")
        targets = importlib.import_module("audits.targets")
        target = targets.SimulatorTarget(plan)
        eps_t = plan.config.stream.eps_t
        claimed = _claimed_max(plan)
        res = auditor.audit(target, epsilon=claimed, eps_t=eps_t if not isinstance(eps_t, tuple) else list(eps_t),
                            seconds=seconds, seed=seed % (2**32), confidence=confidence, progress=False)
        d = res.to_dict() if hasattr(res, "to_dict") else dict(res)
    except Exception as exc:
        return _unavailable(cid, "privacy", statement, "audit", f"{type(exc).__name__}: {exc}")
    lb = float(d["epsilon_lower_bound"])
    verdict = d.get("verdict")
    values = {"verdict": verdict, "epsilon_claimed": claimed, "epsilon_lower_bound": lb,
              "confidence": d.get("confidence", confidence), "samples": d.get("samples"),
              "seconds": d.get("seconds")}
    if d.get("per_event"):
        values["events"] = d["per_event"]
    if "witness" in d:
        values["witness"] = d["witness"]
    ok = verdict == "no-violation-found" and lb <= claimed
    return Claim(cid, "privacy", statement, values,
                 Witness("audit", {"target": "in-process simulator of the reference GTM (audits.targets)",
                                   "seed": seed}), "pass" if ok else "fail")


# ---------------------------------------------------------------------------
# --verify: digest-protected witnesses must be self-consistent
# ---------------------------------------------------------------------------


def consistency_problems(body: dict) -> list[str]:
    problems = []
    for c in body.get("claims", []):
        if not isinstance(c, dict):
            problems.append("a claim is not an object")
            continue
        st, v = c.get("status"), c.get("values") or {}
        if not c.get("witness", {}).get("kind"):
            problems.append(f"claim {c.get('id')} names no witness")
        if st != "pass":
            continue
        try:
            if c["id"] == "privacy.audit" and not (float(v["epsilon_lower_bound"]) <= float(v["epsilon_claimed"])):
                problems.append("privacy.audit passes although its lower bound exceeds the claim")
            if c["id"] == "privacy.exact-worst-case" and \
                    float(v["loss_found"]) - float(v.get("loss_error", 0.0)) > float(v["loss_claimed"]):
                problems.append("privacy.exact-worst-case passes although the loss found exceeds the claim")
            if c["id"] == "privacy.lemma-checks" and not all(
                    x.get("status") in ("proved", "certified") for x in v.get("lemmas", {}).values()):
                problems.append("privacy.lemma-checks passes with a lemma that is not proved")
        except (KeyError, TypeError, ValueError):
            problems.append(f"claim {c.get('id')} has malformed values")
    return problems


__all__ = ["external_claims", "consistency_problems", "BACKING_LEMMAS"]
