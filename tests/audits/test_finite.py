"""The finite-output audit engine: protocol validation, subprocess targets, power and no false alarm.

Statistical tests here use confidence 0.999 with fixed seeds (a false alarm has probability <= 1e-3
per test); each "never flags" test has a companion that flags a broken variant (power).
"""

import math
import sys
import textwrap
from collections import Counter

import numpy as np
import pytest

from audits.finite import (OTHER, CallableFiniteTarget, CodeBook, SubprocessFiniteTarget, audit_finite,
                           audit_finite_delta, canonical, validate_response)
from gtm_core.errors import InvalidParameter, TargetError


def randomized_response(eps):
    """Input {"bit": b}: output b with probability e^eps / (1 + e^eps), as a string code."""
    keep = math.exp(eps) / (1 + math.exp(eps))

    def fn(inp, n, seed):
        rng = np.random.default_rng(seed)
        flips = rng.random(n) >= keep
        b = int(inp["bit"])
        return {"1": int(np.sum((b == 1) ^ flips)), "0": int(np.sum((b == 0) ^ flips))}

    return fn


PAIRS = [({"bit": 0}, {"bit": 1})]


def test_validate_response_shapes_and_errors():
    assert validate_response({"counts": {"a": 2, "3": 1}}, 3) == Counter({"a": 2, "3": 1})
    assert validate_response({"outputs": [3, "3", "x"]}, 3) == Counter({"3": 2, "x": 1})
    for bad, msg in [([], "expected an object"), ({"counts": {"a": -1}}, "integers >= 0"),
                     ({"counts": {"a": 1}}, "expected 2"), ({"outputs": [1.5, 2]}, "not a string or integer"),
                     ({"error": "boom"}, "boom"), ({}, "neither")]:
        with pytest.raises(TargetError, match=msg):
            validate_response(bad, 2)


def test_codebook_other_bucket():
    book = CodeBook.of(["a", 1])
    assert book.codes == ("a", "1", OTHER)
    assert book.histogram(Counter({"a": 2, "zz": 5})).tolist() == [2, 0, 5]
    assert len(book.events()) == 6


def test_canonical_rejects_non_json():
    assert canonical({"b": 1, "a": [1, 2]}) == '{"a":[1,2],"b":1}'
    with pytest.raises(InvalidParameter):
        canonical({"x": float("nan")})


def test_correct_randomized_response_not_flagged():
    t = CallableFiniteTarget(randomized_response(1.0))
    r = audit_finite(t, PAIRS, epsilon=1.0, seconds=None, max_samples=200_000, seed=0, confidence=0.999)
    assert r.verdict == "no-violation-found"
    d = r.to_dict()
    assert d["output_kind"] == "finite" and d["witness"]["input"] in ({"bit": 0}, {"bit": 1})


def test_power_randomized_response_at_1_3_eps_flagged():
    t = CallableFiniteTarget(randomized_response(1.3))
    r = audit_finite(t, PAIRS, epsilon=1.0, seconds=None, max_samples=400_000, seed=0, confidence=0.999)
    assert r.violation and 1.0 < r.epsilon_lower_bound <= 1.3 + 1e-9


def test_reproducible_with_sample_budget():
    t = CallableFiniteTarget(randomized_response(1.0))
    kw = dict(epsilon=1.0, seconds=None, max_samples=100_000, seed=5)
    assert audit_finite(t, PAIRS, **kw).to_dict()["witness"] == audit_finite(t, PAIRS, **kw).to_dict()["witness"]


def test_delta_audit_power_and_no_false_alarm():
    # RR at eps 1 is (1, 0)-DP; at eps 2 it has delta(1) = (e^2 - e^1) / (1 + e^2) = 0.544
    ok = audit_finite_delta(CallableFiniteTarget(randomized_response(1.0)), PAIRS, epsilon=1.0, delta=0.01,
                            seed=1, confidence=0.999)
    assert not ok.violation
    bad = audit_finite_delta(CallableFiniteTarget(randomized_response(2.0)), PAIRS, epsilon=1.0, delta=0.01,
                             seed=1, confidence=0.999)
    true = (math.exp(2) - math.exp(1)) / (1 + math.exp(2))
    assert bad.violation and 0.01 < bad.delta_lower_bound <= true


SERVER = textwrap.dedent("""
    import json, sys, math, random
    for line in sys.stdin:
        req = json.loads(line)
        rng = random.Random(req["seed"])
        b = req["input"]["bit"]
        keep = math.e / (1 + math.e)
        out = [b if rng.random() < keep else 1 - b for _ in range(req["n"])]
        print(json.dumps({"outputs": out}), flush=True)
""")


def test_subprocess_target_roundtrip_and_audit(tmp_path):
    script = tmp_path / "rr.py"
    script.write_text(SERVER)
    with SubprocessFiniteTarget([sys.executable, str(script)], timeout=20) as t:
        c = t.sample({"bit": 1}, 1000, 3)
        assert sum(c.values()) == 1000 and set(c) <= {"0", "1"}
        r = audit_finite(t, PAIRS, epsilon=1.0, seconds=None, max_samples=40_000, seed=0, confidence=0.999,
                         alphabet=["0", "1"])
        assert r.verdict == "no-violation-found"


def test_subprocess_hang_and_crash_are_target_errors(tmp_path):
    hang = tmp_path / "hang.py"
    hang.write_text("import sys, time\nsys.stdin.readline()\ntime.sleep(60)\n")
    t = SubprocessFiniteTarget([sys.executable, str(hang)], timeout=1)
    with pytest.raises(TargetError, match="did not answer"):
        t.sample({"bit": 0}, 5, 0)
    crash = tmp_path / "crash.py"
    crash.write_text("import sys\nsys.stdin.readline()\nsys.exit(3)\n")
    with SubprocessFiniteTarget([sys.executable, str(crash)], timeout=5) as t2:
        with pytest.raises(TargetError, match="code 3"):
            t2.sample({"bit": 0}, 5, 0)


def test_hung_target_behind_sh_is_killed_with_its_whole_tree():
    from gtm_core.process_supervisor import group_members

    t = SubprocessFiniteTarget(["sh", "-c", "sleep 301 & sleep 302"], timeout=0.5)
    group = t.process_group_id()
    with pytest.raises(TargetError, match="did not answer within 0.5 s"):
        t.sample({"bit": 0}, 1, 0)
    t.close()
    assert group_members(group) == []


def test_the_audit_budget_bounds_a_slow_answer(tmp_path):
    import time

    slow = tmp_path / "slow.py"
    slow.write_text("import sys, time\nsys.stdin.readline()\ntime.sleep(30)\n")
    with SubprocessFiniteTarget([sys.executable, str(slow)], timeout=60) as t:
        start = time.monotonic()
        with pytest.raises(TargetError, match="time budget"):
            audit_finite(t, PAIRS, epsilon=1.0, seconds=0.5, seed=0, alphabet=["0", "1"])
        assert time.monotonic() - start < 6


def test_missing_program_is_refused_before_anything_runs():
    with pytest.raises(TargetError, match="not found"):
        SubprocessFiniteTarget(["/nonexistent/gtm-target"])


def test_bad_arguments():
    t = CallableFiniteTarget(randomized_response(1.0))
    with pytest.raises(InvalidParameter, match="pairs"):
        audit_finite(t, [], epsilon=1.0)
    with pytest.raises(InvalidParameter, match="delta"):
        audit_finite_delta(t, PAIRS, epsilon=1.0, delta=1.5)


def test_penalised_selection_score_subtracts_one_standard_error():
    from audits.finite import selection_score

    assert selection_score(0.01, 0.002, math.e, 10_000, False) == pytest.approx(0.01 - math.e * 0.002)
    pen = selection_score(0.01, 0.002, math.e, 10_000, True)
    assert pen == pytest.approx(0.01 - math.e * 0.002 - math.sqrt((0.01 + math.e ** 2 * 0.002) / 10_000))
    # a rare event's real gap (3 hits vs 0) outranks a frequent event's noise of the same raw score
    assert selection_score(3e-4, 0.0, math.e, 10_000, True) > selection_score(0.05 + 3e-4, 0.05 / math.e, math.e,
                                                                              10_000, True)
    with pytest.raises(InvalidParameter, match="penalised"):
        audit_finite_delta(CallableFiniteTarget(randomized_response(1.0)), PAIRS, epsilon=1.0, delta=0.01,
                           penalised="yes")


def test_delta_audit_deadline_stops_the_final_phase_between_chunks():
    """With a deadline the final phase draws in chunks and stops between them (the same runs for both
    inputs); a draw that would pass it is refused (BudgetStop) and its chunk discarded. RR at eps 2 against
    delta(1) = 0.01 (true 0.544): still flagged on the runs drawn, alpha = 0.001, seed 1."""
    import time

    from audits.finite import DELTA_FINAL_CHUNKS, final_draws
    from gtm_core.errors import BudgetStop

    slow = randomized_response(2.0)
    calls = []

    def fn(inp, n, seed):
        calls.append(n)
        if len(calls) > 4:  # the third final chunk and later: past the deadline
            raise BudgetStop("deadline")
        return slow(inp, n, seed)

    t = CallableFiniteTarget(fn)
    fx, fy, n = final_draws(lambda v, m: t.sample(v, m, 0), {"bit": 0}, {"bit": 1}, 8000, time.monotonic() + 60)
    assert n == 2 * 8000 // DELTA_FINAL_CHUNKS and sum(fx.values()) == sum(fy.values()) == n
    fx, fy, n = final_draws(lambda v, m: t.sample(v, m, 0), {"bit": 0}, {"bit": 1}, 8000, time.monotonic() - 1)
    assert n == 0 and not fx and not fy  # the deadline passed: no chunk starts (timed from none drawn: 0 s each)
    res = audit_finite_delta(CallableFiniteTarget(slow), PAIRS, epsilon=1.0, delta=0.01, seed=1, confidence=0.999,
                             deadline=time.monotonic() + 30)
    assert res.violation and res.witness["n"] == (res.samples - 2 * 20_000) // 2  # the runs drawn, both inputs
