"""Hostile-input campaign, part 2: deep nesting, special files, huge and tiny floats,
forged certificate shapes, process trees and path aliasing.

Property for every case: ``gtm`` exits 0, 1 or 2, never with a traceback; exit 2 prints exactly
one line ``gtm: error: ...``; nothing blocks (special files are refused, not read); no process
of a target survives its audit (process-group accounting through ``/proc``); a refused command
changes no file it must not touch.

Bounded and seeded (Hypothesis, derandomized). The default run uses a few dozen examples per
test; ``-m slow`` runs the same properties with ``GTM_HOSTILE_SCALE`` times as many (default 90:
25+60+40 = 125 examples per unit: about 1.1e4 cases in all).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audits.cli import cli
from gtm_core import GTMConfig
from gtm_core.process_supervisor import group_members

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = GTMConfig.load(ROOT / "examples" / "default.toml")
RUNNER = CliRunner()
SCALE = int(os.environ.get("GTM_HOSTILE_SCALE", "90"))


def cases(n: int):
    return settings(max_examples=n, derandomize=True, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


def cli_case(args, *, allowed=(0, 1, 2)):
    r = RUNNER.invoke(cli, [str(a) for a in args], prog_name="gtm")
    assert r.exception is None or isinstance(r.exception, SystemExit), (args, repr(r.exception))
    assert "Traceback" not in r.output
    assert r.exit_code in allowed, (args, r.exit_code, r.output)
    if r.exit_code == 2:
        err = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert len(err) == 1 and err[0].startswith("gtm: error:"), (args, r.stderr)
    return r


def nested(depth: int, kind: str) -> str:
    if kind == "list":
        return "[" * depth + "1" + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


# --- deep nesting -------------------------------------------------------------------------------

@st.composite
def deep_documents(draw):
    depth = draw(st.one_of(st.integers(1, 80), st.integers(80, 20000)))
    kind = draw(st.sampled_from(["list", "dict"]))
    where = draw(st.sampled_from(["toml-value", "json-config", "json-certificate"]))
    return depth, kind, where


def run_deep(case):
    depth, kind, where = case
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        if where == "toml-value":
            f = d / "c.toml"
            f.write_text(DEFAULT.to_toml() + "\n[extra]\nx = " + nested(depth, "list") + "\n")
            cli_case(["plan", f])
        elif where == "json-config":
            f = d / "c.json"
            doc = DEFAULT.to_dict()
            text = json.dumps(doc)[:-1] + ', "extra": ' + nested(depth, kind) + "}"
            f.write_text(text)
            cli_case(["plan", f])
        else:
            f = d / "cert.json"
            f.write_text('{"format": "gtm-certificate/1", "sha256": "0", "body": ' + nested(depth, kind) + "}")
            r = cli_case(["certify", "--verify", f, "--no-progress"])
            assert r.exit_code in (1, 2)


@cases(25)
@given(case=deep_documents())
def test_deep_nesting(case):
    run_deep(case)


@pytest.mark.slow
@cases(25 * SCALE)
@given(case=deep_documents())
def test_deep_nesting_slow(case):
    run_deep(case)


# --- special files ------------------------------------------------------------------------------

SPECIAL = ["fifo", "/dev/zero", "/dev/null", "/dev/urandom", "directory", "symlink-loop", "dangling-link",
           "symlink-to-fifo"]


def special_path(kind: str, d: Path) -> Path:
    if kind.startswith("/dev/"):
        return Path(kind)
    if kind == "fifo":
        p = d / "fifo.toml"
        os.mkfifo(p)
        return p
    if kind == "directory":
        return d
    if kind == "symlink-loop":
        p = d / "loop.toml"
        os.symlink(p, p)
        return p
    if kind == "dangling-link":
        p = d / "dangling.toml"
        os.symlink(d / "missing", p)
        return p
    fifo = d / "fifo2"
    os.mkfifo(fifo)
    p = d / "to-fifo.toml"
    os.symlink(fifo, p)
    return p


@pytest.mark.parametrize("kind", SPECIAL)
@pytest.mark.parametrize("use", ["plan", "exact", "audit --config", "certify --verify", "deploy init --config",
                                 "certify --public-key", "certify --sign"])
def test_special_files_are_refused_without_blocking(kind, use, tmp_path):
    p = special_path(kind, tmp_path)
    argv = {
        "plan": ["plan", p],
        "exact": ["exact", p, "--p", "0.1", "--p-prime", "0.1"],
        "audit --config": ["audit", "--target", "true", "--config", p],
        "certify --verify": ["certify", "--verify", p, "--no-progress"],
        "deploy init --config": ["deploy", "init", tmp_path / "s", "--config", p],
        "certify --public-key": ["certify", "--verify", ROOT / "examples" / "default.toml", "--public-key", p],
        "certify --sign": ["certify", ROOT / "examples" / "default.toml", "--horizon", "2", "--sign", p,
                           "--no-progress"],
    }[use]
    start = time.monotonic()
    r = cli_case(argv, allowed=(2,))
    assert time.monotonic() - start < 30
    assert not (tmp_path / "s").exists()
    del r


# --- huge and tiny floats -----------------------------------------------------------------------

FLOATS = st.one_of(
    st.sampled_from([5e-324, 1e-320, 2.2250738585072014e-308, 1e-300, 1e-30, 1e-9, 1 - 1e-16, 1e300, 1.7e308]),
    st.floats(min_value=5e-324, max_value=1e308, allow_nan=False, allow_infinity=False),
)
FIELDS = [("gtm", "epsilon"), ("gtm", "theta"), ("gtm", "gamma"), ("gtm", "beta"), ("stream", "eps_t"),
          ("stream", "p_star")]


def run_floats(field, value, verb):
    table, key = field
    doc = DEFAULT.to_dict()
    doc[table][key] = value
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "c.json"
        f.write_text(json.dumps(doc))
        if verb == "plan":
            cli_case(["plan", f, "--steps", "1,2"])
        elif verb == "exact":
            cli_case(["exact", f, "--p", "1e-320,0.5", "--p-prime", "1e-320,0.5", "--digits", "10"])
        else:
            state = Path(d) / "s"
            r = cli_case(["deploy", "init", state, "--config", f, "--seed", "1"])
            assert r.exit_code == 0 or not state.exists()


@cases(30)
@given(field=st.sampled_from(FIELDS), value=FLOATS, verb=st.sampled_from(["plan", "exact", "deploy"]))
def test_huge_and_tiny_floats(field, value, verb):
    run_floats(field, value, verb)


@pytest.mark.slow
@cases(60 * SCALE)
@given(field=st.sampled_from(FIELDS), value=FLOATS, verb=st.sampled_from(["plan", "exact", "deploy"]))
def test_huge_and_tiny_floats_slow(field, value, verb):
    run_floats(field, value, verb)


def test_subnormal_neighbours_work():
    r = cli_case(["exact", ROOT / "examples" / "default.toml", "--p", "1e-320", "--p-prime", "1e-320"],
                 allowed=(0,))
    assert "violations: 0" in r.output


@pytest.mark.parametrize("value", ["inf", "1e300", "nan", "0", "-1"])
def test_absurd_audit_timeouts_are_usage_errors(value):
    cli_case(["audit", "--target", "true", "--epsilon", "1", "--eps-t", "0.1", "--timeout", value], allowed=(2,))


# --- certificate shapes -------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30), st.floats(allow_nan=False),
              st.text(max_size=8)),
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(st.text(max_size=6), children, max_size=4)),
    max_leaves=20)
BODY_KEYS = ["config", "config_sha256", "claims", "steps", "globals", "refusals", "verdict", "provenance",
             "format", "mode", "horizon"]


def run_certificate_shape(body):
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "c.json"
        f.write_text(json.dumps({"format": "gtm-certificate/1", "sha256": "0" * 64, "body": body}))
        r = cli_case(["certify", "--verify", f, "--no-progress"])
        assert r.exit_code in (1, 2)  # never "valid" for a made-up body


@cases(40)
@given(body=st.fixed_dictionaries({k: JSON_VALUES for k in BODY_KEYS}))
def test_made_up_certificate_bodies(body):
    run_certificate_shape(body)


@pytest.mark.slow
@cases(40 * SCALE)
@given(body=st.fixed_dictionaries({k: JSON_VALUES for k in BODY_KEYS}))
def test_made_up_certificate_bodies_slow(body):
    run_certificate_shape(body)


# --- process trees ------------------------------------------------------------------------------

HOSTILE_TARGETS = {
    "hangs": "sleep 300",
    "hangs behind sh with a background child": "sh -c 'sleep 301 & sleep 302'",
    "closes stdout, keeps running": "sh -c 'exec 1>&-; sleep 303'",
    "exits at once": "sh -c 'exit 3'",
    "chatty stderr then hangs": f"{sys.executable} -c \"import sys,time; sys.stderr.write('x'*200000); time.sleep(30)\"",
    "deeply nested answer": f"{sys.executable} -c \"import sys; sys.stdin.readline(); print('['*100000); "
                            f"sys.stdout.flush(); sys.stdin.readline()\"",
    "missing program": "/nonexistent/target",
}


def supervisors_of_this_process() -> set[int]:
    """Process groups led by our supervisor processes that are still alive (children of this process)."""
    out = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read()
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        if b"process_supervisor" in cmd:
            fields = stat[stat.rfind(b")") + 2:].split()
            if fields[0] != b"Z" and int(fields[1]) == os.getpid():
                out.add(int(entry))
    return out


@pytest.mark.parametrize("name", sorted(HOSTILE_TARGETS))
def test_hostile_targets_leave_no_process_behind(name):
    before = supervisors_of_this_process()
    start = time.monotonic()
    r = cli_case(["audit", "--target", HOSTILE_TARGETS[name], "--epsilon", "1", "--eps-t", "0.1",
                  "--seconds", "5", "--timeout", "2", "--quiet"], allowed=(2,))
    assert time.monotonic() - start < 15, r.output
    leaked = supervisors_of_this_process() - before
    for pid in leaked:
        assert group_members(pid) == [], (name, pid)


# --- path aliasing ------------------------------------------------------------------------------

def digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_json_output_onto_the_configuration_is_refused_or_harmless(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text(DEFAULT.to_toml())
    before = digest(cfg)
    link = tmp_path / "alias.json"
    os.symlink(cfg, link)
    r = cli_case(["plan", cfg, "--json", link])
    if r.exit_code == 2:
        assert digest(cfg) == before
