"""audits.co_target speaks the finite-output JSON-lines protocol."""

import io
import json
import sys

from audits.co_target import handle, main, neighbouring_inputs, stream_from_input
from gtm_core.batchtoco.params import COConfig
from gtm_core.batchtoco.streams import EdgeStream

CONFIG = COConfig(epsilon=0.9, k=1, kappa=0.2)
STREAM = EdgeStream("tiny", ("a", "b", "c"), ((0, 1), (0, 2), (1, 2)))


def test_handle_answers_counts_and_errors():
    a, b = neighbouring_inputs(STREAM, [2])[0]
    assert b["edges"][1] is None and stream_from_input(b).edges[1] is None
    r = handle(CONFIG, {"input": a, "n": 4, "seed": 1}, "correct", "sequence")
    assert sum(r["counts"].values()) == 4
    assert "error" in handle(CONFIG, {"input": a, "n": -1}, "correct", "sequence")
    assert "error" in handle(CONFIG, {"input": {"vertices": ["a"], "edges": [["a", "q"]]}, "n": 1}, "correct", "final")
    assert "error" in handle(CONFIG, [], "correct", "final")


def test_main_loop(tmp_path, monkeypatch):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[co]\nepsilon = 0.9\nk = 1\nkappa = 0.2\n")
    req = json.dumps({"input": STREAM.to_dict(), "n": 2, "seed": 0}) + "\nnot json\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO(req))
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    assert main([str(cfg), "--summary", "final"]) == 0
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert sum(lines[0]["counts"].values()) == 2 and "error" in lines[1]


def test_serves_the_certified_warmup_option_and_its_mutant():
    """The statistical witness's target covers warmup_after_checkpoint: the option is read from the
    configuration, and the warmup_at_checkpoints mutant is served (its extra calls change the output law)."""
    cfg = COConfig(variant="certified", epsilon=0.9, k=1, kappa=0.2, horizon=3, first_level=2, levels=2,
                   warmup_after_checkpoint=True)
    a, _ = neighbouring_inputs(STREAM, [2])[0]
    good = handle(cfg, {"input": a, "n": 200, "seed": 3}, "correct", "sequence")["counts"]
    bad = handle(cfg, {"input": a, "n": 200, "seed": 3}, "warmup_at_checkpoints", "sequence")["counts"]
    assert sum(good.values()) == sum(bad.values()) == 200
    assert good != bad
