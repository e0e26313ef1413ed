"""The protocol server: answers, error answers, seed modes."""

import json
import subprocess
import sys

from audits.serve import handle
from gtm_core import GTMConfig, make_plan
from audits.power.broken import CORRECT


def test_handle_answers_and_errors():
    plan = make_plan(GTMConfig.load("examples/default.toml"))
    ok = handle(plan, CORRECT, {"p": [0.1, 0.2], "n": 5, "seed": 1}, "request")
    assert len(ok["halt"]) == 5 and all(0 <= h <= 2 for h in ok["halt"])
    ev = handle(plan, CORRECT, {"p": [0.1], "n": 3, "seed": 1, "evaluations": True}, "request")
    assert len(ev["evaluations"]) == 3
    assert "error" in handle(plan, CORRECT, {"p": [], "n": 5}, "request")
    assert "error" in handle(plan, CORRECT, {"p": [0.1], "n": -1}, "request")
    assert "error" in handle(plan, CORRECT, {"p": [2.0], "n": 1}, "request")
    assert "error" in handle(plan, CORRECT, [1, 2], "request")


def test_server_over_a_pipe_keeps_running_after_bad_requests():
    lines = "\n".join(['{"p": [0.1], "n": 3, "seed": 2}', "not json", '{"p": [0.1], "n": 2, "seed": 2}']) + "\n"
    out = subprocess.run([sys.executable, "-m", "audits.serve", "examples/default.toml", "--broken", "no-step-noise"],
                         input=lines, capture_output=True, text=True, timeout=120, start_new_session=True)
    answers = [json.loads(x) for x in out.stdout.splitlines()]
    assert len(answers[0]["halt"]) == 3 and "error" in answers[1] and len(answers[2]["halt"]) == 2


def test_server_rejects_unknown_variant():
    out = subprocess.run([sys.executable, "-m", "audits.serve", "examples/default.toml", "--broken", "nope"],
                         input="", capture_output=True, text=True, timeout=120, start_new_session=True)
    assert out.returncode == 2


def test_a_deeply_nested_line_is_an_error_answer_and_the_server_keeps_serving():
    """The attack: a line of 100 000 '[' crashed the server with a RecursionError traceback."""
    lines = "\n".join(["[" * 100_000, '{"p": [0.1], "n": 2, "seed": 1, "n": 3}', '{"p": [0.1], "n": 3, "seed": 2}']) + "\n"
    out = subprocess.run([sys.executable, "-m", "audits.serve", "examples/default.toml"], input=lines,
                         capture_output=True, text=True, timeout=120, start_new_session=True)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-400:]
    answers = [json.loads(x) for x in out.stdout.splitlines()]
    assert len(answers) == 3
    assert "nests deeper" in answers[0]["error"]
    assert "duplicate key 'n'" in answers[1]["error"]  # which "n" wins is not left to the JSON reader
    assert len(answers[2]["halt"]) == 3


def test_a_capped_configuration_is_served_with_its_refusals():
    # the correct deployment of evaluation_budget = "refuse": refusals answered as -t (unsafe_budget's
    # factor-1 budget refuses a sizeable share of the steps), evaluation counts not served
    plan = make_plan(GTMConfig.load("examples/unsafe_budget.toml"))
    halt = handle(plan, CORRECT, {"p": [0.9, 0.9], "n": 2000, "seed": 1}, "request")["halt"]
    assert min(halt) == -1 and max(halt) == 1
    assert "not served" in handle(plan, CORRECT, {"p": [0.9], "n": 3, "evaluations": True}, "request")["error"]
    assert "error" in handle(plan, CORRECT, {"p": [2.0], "n": 1}, "request")
