"""Hostile-input campaign: every public function of gtm_core and every CLI verb, fed malformed input.

Property, for every case: the call either succeeds (a hostile mutation can still be valid input)
or ends in a typed :class:`GTMError` (API) / exit 2 with exactly one line ``gtm: error: ...`` and
no traceback (CLI); never a bare Python exception, a NaN or complex result, a partial ``--json``
output file, a state file left behind by a refused ``deploy init`` or a half-written state
(every state left behind opens cleanly or is refused with StateError).

Hostile values: NaN, +-inf, negative, zero, subnormal, huge (1e308, 10**30, 10**400), wrong
types (strings, None, bools, lists, dicts, bytes, complex, objects); configurations with bad
TOML, wrong types, unknown keys and tables, missing keys, per-step lists of the wrong length or
with hostile entries; paths that do not exist, are directories, sit under a regular file, are
not writable (/proc) or contain NUL bytes.

Bounded and seeded: Hypothesis runs derandomized with fixed example counts; the number of cases
is counted and printed by the last test (run with ``-s`` to see it).
"""

from __future__ import annotations

import collections
import copy
import inspect
import json
import math
from fractions import Fraction
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import mpmath
import numpy as np
import pytest
import tomli_w
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audits.cli import cli
from gtm_core import GTMConfig, GTMParameters, StepSpec, StreamParameters, make_plan
from gtm_core.planners import budget as B
from gtm_core import formulas as F
from gtm_core import numeric, validation
from gtm_core import evaluation as E
from gtm_core import reference as R
from gtm_core import simulator as S
from gtm_core.deployment import CommandMechanism, Deployment, check_time_limit
from gtm_core.errors import GTMError, MechanismError

ROOT = Path(__file__).resolve().parents[1]
CASES: collections.Counter = collections.Counter()
_SCRATCH = Path(tempfile.mkdtemp(prefix="gtm-hostile-"))


@pytest.fixture(autouse=True, scope="module")
def _in_scratch_directory():
    """Hostile relative paths (a state or --json path "x", "-1", ...) must land in a scratch
    directory, never in the repository; everything is removed afterwards."""
    old = os.getcwd()
    cwd = _SCRATCH / "cwd"
    cwd.mkdir(exist_ok=True)
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(old)
        shutil.rmtree(_SCRATCH, ignore_errors=True)


def _settings(n):
    return settings(max_examples=n, derandomize=True, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


class _Opaque:
    def __repr__(self):
        return "<opaque>"


HOSTILE_NUMBERS = [math.nan, math.inf, -math.inf, -1.0, -1e-300, 0, 0.0, -0.0, 5e-324, 1e308, 10**30,
                   10**400, -(10**30), 1.0, 2.0, 2.5, 0.5, 1e-12, np.float64("nan"), np.int64(-3)]
HOSTILE_OTHER = ["x", "", "nan", "1e999", None, True, False, [], [1.0], {}, {"a": 1}, b"1", 1 + 2j,
                 _Opaque(), mpmath.mpf("nan"), mpmath.mpf("-inf")]
hostile_value = st.one_of(
    st.sampled_from(HOSTILE_NUMBERS + HOSTILE_OTHER),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.text(max_size=4),
)


def typed(fn, *args, **kwargs):
    """Call; a GTMError is an acceptable outcome (returned as the sentinel TYPED)."""
    CASES["api"] += 1
    try:
        return fn(*args, **kwargs)
    except GTMError:
        return TYPED


TYPED = object()


def real_or_typed(result):
    if result is TYPED:
        return
    if isinstance(result, (complex, mpmath.mpc)):
        raise AssertionError(f"complex result {result!r}")
    if isinstance(result, float):
        assert not math.isnan(result), "NaN result"
    if isinstance(result, mpmath.mpf):
        assert not mpmath.isnan(result), "NaN result"


# ---------------------------------------------------------------------------------------------
# formulas, validation helpers, numeric backends
# ---------------------------------------------------------------------------------------------

GOOD_ARGS = {
    "t": 3, "beta": 0.05, "alpha": 0.05, "gamma": 1.5, "x": 10, "c": 10, "epsilon": 1.0,
    "theta": 1.0, "eps_t": 0.1, "p_star": 0.5, "beta_II": 0.01, "beta_t": 0.001, "Lambda": 5.0,
    "C_A": 1.0, "epsilon_c": 1.0, "c_h": 2.0, "halted": True, "delta_t": 1e-6, "p": 0.3,
    "phi": 0.1, "delta": 1e-6, "T": 100, "eps_1": 0.1, "Lambda0": 5.0, "p_bar": 0.1, "mu1": 13.0,
    "tau1": 3.0, "tau2": 2.0, "s": 1, "rho": 1.0, "c_G": "0.25", "u": 2.0, "sigma": 3.0, "k": 1.0, "W": 10.0,
}
FORMULAS = [n for n in F.__all__]


def _formula_params(name):
    sig = inspect.signature(getattr(F, name))
    return [p.name for p in sig.parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY)]


@_settings(200)
@given(name=st.sampled_from(FORMULAS), data=st.data())
def test_formulas_with_hostile_arguments(name, data):
    params = _formula_params(name)
    args = {p: GOOD_ARGS[p] for p in params}
    dps = data.draw(st.sampled_from([None, None, 30, 0, -5, "x", 10**9, True]), label="dps")
    if params:
        for p in data.draw(st.lists(st.sampled_from(params), min_size=1, max_size=2, unique=True)):
            args[p] = data.draw(hostile_value, label=p)
    real_or_typed(typed(getattr(F, name), **args, dps=dps))


@_settings(300)
@given(helper=st.sampled_from([n for n in dir(validation) if n.startswith("check_")]), value=hostile_value)
def test_validation_helpers(helper, value):
    """Every check_* helper either returns a value of its documented kind or raises a typed error."""
    extra = {"check_choice": (("a", 1, None),)}.get(helper, ())
    result = typed(getattr(validation, helper), "field", value, *extra)
    if result is TYPED:
        return
    if helper == "check_stream":
        assert isinstance(result, np.ndarray) and result.ndim == 1 and np.all((result >= 0) & (result <= 1))
    elif helper == "check_bool":
        assert isinstance(result, (bool, np.bool_))
    elif helper == "check_choice":
        assert result in extra[0]
    elif helper == "check_formula_real":
        assert result is None
    elif helper == "check_exact_real":
        assert isinstance(result, (int, float, Fraction)) and not isinstance(result, bool)
    else:
        assert isinstance(result, (int, float)) and not isinstance(result, bool)
        assert isinstance(result, int) or math.isfinite(result)


@_settings(40)
@given(dps=hostile_value)
def test_numeric_backend(dps):
    typed(numeric.backend, dps)


# ---------------------------------------------------------------------------------------------
# configurations -> plan -> deployment
# ---------------------------------------------------------------------------------------------

VALID21 = {"gtm": {"epsilon": 1.0, "parameterization": "theorem21", "theta": 1.0, "gamma": 1.5, "beta": 0.05},
           "stream": {"eps_t": 0.1, "delta_t": 0.0, "p_star": 0.5, "horizon": 20}}
VALID23 = {"gtm": {"parameterization": "theorem23", "epsilon_c": 1.0, "c_h": 2.0, "gamma": 1.5, "beta": 0.05},
           "stream": {"eps_t": 0.1, "p_star": 0.5, "horizon": 20}}
KEYS = {"gtm": ["epsilon", "parameterization", "theta", "gamma", "beta", "epsilon_c", "c_h",
                "evaluation_budget_factor"],
        "stream": ["eps_t", "delta_t", "p_star", "horizon"]}


@st.composite
def hostile_config_dict(draw):
    d = copy.deepcopy(draw(st.sampled_from([VALID21, VALID23])))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["set", "set", "set", "delete", "unknown_key", "unknown_table",
                                     "list_wrong_length", "list_hostile", "table_type", "param_name"]))
        table = draw(st.sampled_from(["gtm", "stream"]))
        for name in ("gtm", "stream"):
            if not isinstance(d.get(name), dict):
                d[name] = {}
        key = draw(st.sampled_from(KEYS[table]))
        if kind == "set":
            d[table][key] = draw(hostile_value)
        elif kind == "delete":
            d[table].pop(key, None)
        elif kind == "unknown_key":
            d[table][draw(st.sampled_from(["epsilon_t", "Horizon", "", "gtm", "x y"]))] = 1.0
        elif kind == "unknown_table":
            d[draw(st.sampled_from(["extra", "GTM", ""]))] = {"a": 1}
        elif kind == "list_wrong_length":
            h = d["stream"].get("horizon", 20)
            h = h if isinstance(h, int) and 0 < h < 100 else 20
            n = draw(st.sampled_from([0, 1, h - 1, h + 1]))
            d["stream"][draw(st.sampled_from(["eps_t", "p_star", "delta_t"]))] = [0.1] * max(n, 0)
        elif kind == "list_hostile":
            h = d["stream"].get("horizon", 20)
            h = h if isinstance(h, int) and 0 < h < 100 else 20
            values = [0.1] * h
            values[draw(st.integers(0, h - 1))] = draw(hostile_value)
            d["stream"][draw(st.sampled_from(["eps_t", "p_star", "delta_t"]))] = values
        elif kind == "table_type":
            d[table] = draw(st.sampled_from([5, "x", [1, 2], None]))
        elif kind == "param_name":
            d["gtm"]["parameterization"] = draw(st.sampled_from(["theorem22", "", "exact", 21, None, "THEOREM21"]))
    return d


def _pipeline(config: GTMConfig) -> None:
    """A configuration that was accepted must plan, or fail typed, at its first and last step."""
    plan = typed(make_plan, config)
    if plan is TYPED:
        return
    for t in {1, min(config.stream.horizon, 10**6)}:
        sp = typed(plan.step, t)
        if sp is not TYPED:
            for v in (sp.rho, sp.Lambda, sp.p_bar, sp.lambda_max, sp.budget_exceed_probability):
                assert not math.isnan(v), sp
    real_or_typed(typed(plan.claimed_loss, 1, True))


@_settings(200)
@given(d=hostile_config_dict())
def test_config_from_dict_and_plan(d):
    config = typed(GTMConfig.from_dict, d)
    if config is not TYPED:
        _pipeline(config)
        again = typed(GTMConfig.from_toml, config.to_toml())
        assert again is TYPED or again == config


@_settings(150)
@given(table=st.sampled_from(["gtm", "stream", "step"]), data=st.data())
def test_config_constructors_directly(table, data):
    if table == "gtm":
        kw = dict(VALID21["gtm"])
        kw[data.draw(st.sampled_from(KEYS["gtm"]))] = data.draw(hostile_value)
        typed(GTMParameters, **kw)
    elif table == "stream":
        kw = dict(VALID21["stream"])
        kw[data.draw(st.sampled_from(KEYS["stream"]))] = data.draw(hostile_value)
        typed(StreamParameters, **kw)
    else:
        kw = {"t": 1, "eps_t": 0.1, "p_star": 0.5, "delta_t": 0.0}
        kw[data.draw(st.sampled_from(list(kw)))] = data.draw(hostile_value)
        typed(StepSpec, **kw)


@_settings(60)
@given(field=st.sampled_from(KEYS["gtm"] + KEYS["stream"] + ["bogus"]), value=hostile_value)
def test_config_with_changes(field, value):
    typed(GTMConfig.from_dict(VALID21).with_changes, **{field: value})


def _toml_text(d) -> str | None:
    try:
        return tomli_w.dumps(d)
    except Exception:
        return None


@st.composite
def hostile_config_file(draw):
    """(suffix, bytes) of a configuration file: mutated TOML/JSON, broken TOML, binary junk."""
    kind = draw(st.sampled_from(["toml", "toml", "json", "truncated", "garbage_line", "text", "binary", "empty"]))
    d = draw(hostile_config_dict())
    valid_text = tomli_w.dumps(VALID21)
    if kind == "toml":
        text = _toml_text(d)
        if text is not None:
            return ".toml", text.encode()
        kind = "truncated"
    if kind == "json":
        try:
            return ".json", json.dumps(d, default=str).encode()
        except (TypeError, ValueError):
            kind = "truncated"
    if kind == "truncated":
        return ".toml", valid_text[: draw(st.integers(0, len(valid_text) - 1))].encode()
    if kind == "garbage_line":
        lines = valid_text.splitlines()
        lines[draw(st.integers(0, len(lines) - 1))] = draw(st.sampled_from(
            ["[gtm", "epsilon = ", "= 1", "horizon = 1e999", "eps_t = [0.1,", "[[stream]]", "\x00", "p_star = 'a"]))
        return ".toml", "\n".join(lines).encode()
    if kind == "text":
        return draw(st.sampled_from([".toml", ".json", ".txt"])), draw(st.text(max_size=40)).encode("utf-8", "replace")
    if kind == "binary":
        return ".toml", draw(st.binary(min_size=1, max_size=40)) + b"\xff\xfe"
    return draw(st.sampled_from([".toml", ".json"])), b""


@_settings(80)
@given(f=hostile_config_file())
def test_config_load(f):
    suffix, raw = f
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / f"c{suffix}"
        p.write_bytes(raw)
        config = typed(GTMConfig.load, p)
        if config is not TYPED:
            _pipeline(config)


BAD_PATHS = ["/nonexistent/dir/x", "", "a\x00b", "/proc/gtm-hostile/x", "/proc/version/x", "x" * 300, "/"]


@_settings(20)
@given(path=st.sampled_from(BAD_PATHS + [Path("/nonexistent"), 3, None, b"x"]))
def test_config_load_bad_paths(path):
    typed(GTMConfig.load, path)


# ---------------------------------------------------------------------------------------------
# planners, budget, reference GTM, simulator
# ---------------------------------------------------------------------------------------------

PLAN = make_plan(GTMConfig.from_dict(VALID21))
PLAN23 = make_plan(GTMConfig.from_dict(VALID23))


@_settings(120)
@given(which=st.sampled_from(["make_plan", "step", "steps", "claimed_loss"]), v=hostile_value, w=hostile_value)
def test_planners(which, v, w):
    if which == "make_plan":
        typed(make_plan, v)
    elif which == "step":
        sp = typed(PLAN.step, v)
        assert sp is TYPED or (isinstance(v, int) and 1 <= v)
    elif which == "steps":
        typed(PLAN.steps, v if not isinstance(v, (int, float)) else [v])
    else:
        real_or_typed(typed(PLAN.claimed_loss, v, w))
        real_or_typed(typed(PLAN23.claimed_loss, v, w))


BUDGET_KW = {"s": 1, "rho": 100.0, "eps_t": 0.1, "tau1": 3.0, "mu1": 13.0, "tau2": 3.0}


@_settings(120)
@given(which=st.sampled_from(["ratio", "lambda_tail", "exceed"]), key=st.sampled_from(list(BUDGET_KW) + ["first"]),
       v=hostile_value)
def test_budget(which, key, v):
    if which == "ratio":
        real_or_typed(typed(B.pareto_ratio_tail, v if key == "first" else 2.0, v if key == "s" else 1.0, 2.0))
        return
    kw = dict(BUDGET_KW)
    first = 1000
    if key == "first":
        first = v
    else:
        kw[key] = v
    if which == "lambda_tail":
        out = typed(B.lambda_tail, first, **kw)
        if out is not TYPED:
            assert not np.any(np.isnan(np.asarray(out, dtype=float)))
    else:
        real_or_typed(typed(B.budget_exceed_probability, first, **kw))


def _rng():
    return np.random.default_rng(0)


@_settings(150)
@given(which=st.sampled_from(["GTM", "init", "step", "as_sign", "bernoulli", "purified", "negated",
                              "run", "run_reference", "default_rng"]),
       pos=st.integers(0, 7), v=hostile_value)
def test_reference(which, pos, v):
    if which == "GTM":
        typed(R.GTM, v)
    elif which == "init":
        g = R.GTM(_rng())
        typed(g.init, *([v, 13.0] if pos % 2 else [3.0, v]))
    elif which == "step":
        g = R.GTM(_rng())
        g.init(3.0, 13.0)
        args = [lambda x: -1, None, 0.1, 3.0, 5, 100.0, 1]
        kw = {"evaluation_budget": 10**6}
        if pos == 7:
            kw["evaluation_budget"] = v
        elif pos != 1:
            args[pos] = v
        out = typed(g.step, *args, **kw)
        assert out is TYPED or out in (-1, 1)
    elif which == "as_sign":
        assert typed(E.as_sign, v) in (TYPED, 1, -1)
    elif which == "bernoulli":
        typed(E.BernoulliMechanism, v, _rng())
    elif which == "purified":
        typed(E.Purified, lambda x: 1, v, _rng())
    elif which == "negated":
        m = typed(E.Negated, v)
        if m is not TYPED:
            assert typed(m, None) in (TYPED, 1, -1)
    elif which == "run":
        run = typed(R.GTMRun, v) if pos % 2 else typed(R.GTMRun, PLAN, v)
        if run is not TYPED and pos % 2 == 0 and v is not None:
            assert run.seeded
    elif which == "run_reference":
        typed(R.run_reference, PLAN, v if pos % 2 else [v], _rng())
    else:
        typed(R.default_rng, v)


@_settings(60)
@given(arg=st.sampled_from(["plan", "p", "p_item", "n", "rng", "T", "evaluations", "chunk", "fed"]), v=hostile_value)
def test_simulator(arg, v):
    kw = {"plan": PLAN, "p": [0.1, 0.2], "n": 10, "rng": _rng(), "T": None, "evaluations": False, "chunk": 1 << 10}
    if arg == "fed":
        real_or_typed(typed(S.fed_success_probability, PLAN.step(1), v))
        return
    if arg == "p_item":
        kw["p"] = [0.1, v]
    else:
        kw[arg] = v
    typed(S.simulate, kw.pop("plan"), kw.pop("p"), kw.pop("n"), kw.pop("rng"), **kw)


# ---------------------------------------------------------------------------------------------
# deployment
# ---------------------------------------------------------------------------------------------


def _assert_no_half_written_state(directory: Path):
    """Every state left in the directory opens cleanly or is refused with StateError."""
    names = os.listdir(directory)
    assert not [n for n in names if n.endswith(".tmp")], names
    for n in names:
        if n.endswith(".state"):
            opened = typed(Deployment.open, directory / n)
            if opened is not TYPED:
                opened.close()


@_settings(60)
@given(arg=st.sampled_from(["path", "config", "key_path", "rng", "seed"]),
       v=st.one_of(hostile_value, st.sampled_from(BAD_PATHS)))
def test_deployment_create_and_open(arg, v):
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        kw = {"path": d / "s.state", "config": GTMConfig.from_dict(VALID21), "key_path": None, "rng": None, "seed": None}
        kw[arg] = v
        dep = typed(Deployment.create, kw.pop("path"), kw.pop("config"), **kw)
        if dep is TYPED:
            assert not (d / "s.state").exists() or arg != "path"
        else:
            dep.close()
        _assert_no_half_written_state(d)
        if arg in ("path", "key_path"):
            o = typed(Deployment.open, v) if arg == "path" else typed(Deployment.open, d / "s.state", key_path=v)
            if o is not TYPED:
                o.close()


_STEP_DIR = str(_SCRATCH / "step")
os.makedirs(_STEP_DIR, exist_ok=True)


@_settings(60)
@given(arg=st.sampled_from(["mechanism", "output", "time_limit", "command", "command_step", "command_limit"]),
       v=hostile_value)
def test_deployment_step_and_mechanisms(arg, v):
    if arg == "command":
        typed(CommandMechanism, v)
        return
    if arg == "command_step":
        typed(CommandMechanism, ["true"], step=v)
        return
    if arg == "command_limit":
        typed(CommandMechanism, ["true"], time_limit=v)
        typed(check_time_limit, v)
        return
    path = Path(_STEP_DIR) / f"d{CASES['deploy_step']}.state"
    CASES["deploy_step"] += 1
    with Deployment.create(path, GTMConfig.from_dict(VALID21)) as dep:
        if arg == "mechanism":
            out = typed(dep.step, v)
        elif arg == "output":
            out = typed(dep.step, lambda x: v)
        else:
            out = typed(dep.step, R.BernoulliMechanism(0.0, _rng()), time_limit=v)
        assert out in (TYPED, True, False)
        if out is TYPED:
            assert dep.status in ("running", "failed")
    _assert_no_half_written_state(Path(_STEP_DIR))


# ---------------------------------------------------------------------------------------------
# every CLI verb
# ---------------------------------------------------------------------------------------------

RUNNER = CliRunner()


def cli_case(args, *, json_path: Path | None = None, state_dir: Path | None = None):
    CASES["cli"] += 1
    r = RUNNER.invoke(cli, [str(a) for a in args], prog_name="gtm")
    assert r.exception is None or isinstance(r.exception, SystemExit), (args, repr(r.exception))
    assert "Traceback" not in r.output
    assert r.exit_code in (0, 1, 2), (args, r.exit_code, r.output)
    if r.exit_code == 2:
        err = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert len(err) == 1 and err[0].startswith("gtm: error:"), (args, r.stderr)
        if json_path is not None:
            assert not json_path.exists(), ("partial output", args)
    if state_dir is not None:
        _assert_no_half_written_state(state_dir)
    return r


def _verbs():
    return sorted(cli.commands)


def test_every_verb_is_in_the_campaign():
    known = {"plan", "deploy", "prove"}
    for verb in _verbs():
        r = cli_case([verb, "--help"])
        assert r.exit_code == 0
        cli_case([verb, "--no-such-option"])
    assert {"plan", "deploy"} <= set(_verbs())
    CASES["verbs"] = len(_verbs())
    CASES["verbs_with_config_fuzzing"] = len(known & set(_verbs()))


@_settings(100)
@given(f=hostile_config_file(), steps=st.sampled_from([None, "1", "0", "-1", "1,x", "", "1e3", "99999999999", "1,,2"]),
       json_to=st.sampled_from(["ok", "ok", "missing_dir", "is_dir", "under_file", "proc"]))
def test_cli_plan(f, steps, json_to):
    suffix, raw = f
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        cfg = d / f"c{suffix}"
        cfg.write_bytes(raw)
        (d / "file").write_text("x")
        out = {"ok": d / "o.json", "missing_dir": d / "no" / "o.json", "is_dir": d,
               "under_file": d / "file" / "o.json", "proc": Path("/proc/gtm-o.json")}[json_to]
        args = ["plan", cfg, "--json", out] + ([] if steps is None else ["--steps", steps])
        r = cli_case(args, json_path=out if json_to != "is_dir" else None)
        if r.exit_code == 0:
            assert json_to == "ok" and out.exists()


@_settings(90)
@given(f=hostile_config_file(), seed=st.sampled_from([None, "1", "-1", "x", "1e3"]),
       state_to=st.sampled_from(["ok", "ok", "missing_dir", "under_file", "proc", "nul", "long", "dir"]))
def test_cli_deploy_init(f, seed, state_to):
    suffix, raw = f
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        cfg = d / f"c{suffix}"
        cfg.write_bytes(raw)
        (d / "file").write_text("x")
        state = {"ok": d / "s.state", "missing_dir": d / "no" / "s.state", "under_file": d / "file" / "s.state",
                 "proc": "/proc/gtm-s.state", "nul": str(d / "s\x00.state"), "long": d / ("s" * 300),
                 "dir": d}[state_to]
        out = d / "o.json"
        args = ["deploy", "init", state, "--config", cfg, "--json", out] + ([] if seed is None else ["--seed", seed])
        r = cli_case(args, json_path=out, state_dir=d)
        if r.exit_code != 0:
            assert not (d / "s.state").exists() and not (d / "s.state.key").exists()
        else:
            assert state_to == "ok" and out.exists()


_CLI_STATE_DIR = _SCRATCH / "cli"
_CLI_STATE_DIR.mkdir(exist_ok=True)


def _cli_state() -> Path:
    p = _CLI_STATE_DIR / "s.state"
    if not p.exists():
        Deployment.create(p, GTMConfig.from_dict({**VALID21, "stream": {**VALID21["stream"], "horizon": 10**6}})).close()
    return p


@_settings(80)
@given(sub=st.sampled_from(["status", "step"]),
       opt=st.sampled_from(["--bernoulli", "--mechanism-cmd", "--steps", "--timeout", "--seed", "--key", "--json", "STATE"]),
       v=st.one_of(st.sampled_from(["nan", "inf", "-inf", "-1", "0", "1e308", "2", "x", "", "0.5",
                                    "/nonexistent/x", "/proc/x", "'unbalanced", "false"]), st.text(max_size=6)))
def test_cli_deploy_status_and_step(sub, opt, v):
    state = _cli_state()
    out = _CLI_STATE_DIR / "o.json"
    if out.exists():
        out.unlink()
    if opt == "STATE":
        args = ["deploy", sub, v]
    elif sub == "status":
        args = ["deploy", "status", state, opt, v]
    else:
        base = ["deploy", "step", state]
        if opt not in ("--bernoulli", "--mechanism-cmd"):
            base += ["--bernoulli", "0"]
        args = base + [opt, v]
    if opt != "--json":
        args += ["--json", out]
    r = cli_case(args, json_path=out if opt != "--json" else None, state_dir=_CLI_STATE_DIR)
    with Deployment.open(state) as dep:  # never corrupted; a bad mechanism may fail it, then recreate
        if dep.status != "running":
            failed = True
        else:
            failed = False
    if failed:
        for n in os.listdir(_CLI_STATE_DIR):
            os.unlink(_CLI_STATE_DIR / n)
    assert r.exit_code in (0, 2)


@_settings(40)
@given(lemma=st.sampled_from(["zz-no-such-lemma", "lemma99", "", "--", "lemma11.999", "\x00"]),
       opt=st.sampled_from([None, "--seconds", "--json"]),
       v=st.sampled_from(["nan", "-1", "0", "inf", "x", "", "/nonexistent/dir/o.json", "/proc/o.json", "."]))
def test_cli_prove(lemma, opt, v):
    """`gtm prove` with hostile lemma names and options (never a real lemma: those run solvers)."""
    if "prove" not in cli.commands:
        return
    out = _SCRATCH / "prove.json"
    args = ["prove", lemma] + ([] if opt is None else [opt, v])
    if opt != "--json":
        args += ["--json", out]
    r = cli_case(args, json_path=out if opt != "--json" else None)
    assert r.exit_code == 2, (args, r.exit_code, r.output)


def test_real_subprocess_runs():
    """A handful of hostile cases through a real interpreter: exit 2, one line, no traceback."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        cases = [
            ("bad.toml", b"[gtm\nepsilon = 1", ["plan", "{cfg}"]),
            ("nan.toml", tomli_w.dumps({**VALID21, "gtm": {**VALID21["gtm"], "epsilon": math.nan}}).encode(), ["plan", "{cfg}"]),
            ("len.toml", tomli_w.dumps({**VALID21, "stream": {**VALID21["stream"], "eps_t": [0.1, 0.2]}}).encode(),
             ["deploy", "init", "{d}/s.state", "--config", "{cfg}", "--json", "{d}/o.json"]),
        ]
        procs = []
        for name, raw, args in cases:  # started together: the interpreter start-up dominates
            cfg = d / name
            cfg.write_bytes(raw)
            argv = [a.replace("{cfg}", str(cfg)).replace("{d}", str(d)) for a in args]
            procs.append((argv, subprocess.Popen([sys.executable, "-m", "audits.cli", *argv], stdout=subprocess.PIPE,
                                                 stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)))
        for argv, proc in procs:
            out, err = proc.communicate(timeout=300)
            CASES["cli_subprocess"] += 1
            assert proc.returncode == 2, (argv, proc.returncode, err)
            assert err.count("\n") == 1 and err.startswith("gtm: error:"), err
            assert "Traceback" not in err + out
        assert sorted(os.listdir(d)) == sorted(n for n, _, _ in cases)


# ---------------------------------------------------------------------------------------------
# the release path and mechanism faults: wrong-shaped Python mechanisms, commands that cannot
# start, unsigned / edited / mismatched certificates, symlinked and rolled-back co states
# ---------------------------------------------------------------------------------------------
#
# Property for every case, counted in RELEASE (printed by the slow test; every count but "cases"
# must stay 0): no traceback, no process of ours left behind ("orphans"), and a refused command
# (exit 2 / a typed error) changes no existing state or key file ("changed_by_refused") and
# leaves no new state behind. Classes: one per attack on the release path that an input can mount (see
# RELEASE_CLASSES; duplicate JSON keys are drawn in the --verify and serve classes).

RELEASE: collections.Counter = collections.Counter()
SCALE = int(os.environ.get("GTM_HOSTILE_SCALE", "90"))
SMALL = GTMConfig.from_dict({**VALID21, "stream": {**VALID21["stream"], "horizon": 50}})
WRONG_SHAPES = [[1], (1, -1), {}, {"a": 1}, "1", "+1", "", None, 2, 0, -2, 1.5, math.nan, b"1", 1 + 0j,
                np.array([1, 1]), np.array([[1]]), np.float64("nan"), _Opaque(), [[1, -1]], np.array(["1"])]
BATCH_SHAPES = ["short", "long", "2d", "strings", "zeros", "ragged", "scalar", "none", "objects"]
NOT_STARTABLE = ["missing interpreter", "interpreter is a directory", "interpreter not executable",
                 "empty file", "not executable", "interpreter missing behind env", "shebang only",
                 "binary junk"]
CERT_MUTATIONS = ["unsigned", "unsigned, resealed", "edited", "edited, resealed", "edited, resigned by another key",
                  "signature of another key", "mismatched config", "mismatched horizon", "key id edited",
                  "verdict edited", "truncated", "reformatted"]
CO_KINDS = ["symlink", "symlink to a rolled-back copy", "rolled back", "rolled back, no check", "symlink loop",
            "symlink to a directory", "dangling symlink", "key symlinked to another run"]


def _our_live_children() -> set[int]:
    """Live (non-zombie) processes whose parent is this process, from /proc."""
    out = set()
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if fields[0] != b"Z" and int(fields[1]) == me:
            out.add(int(entry))
    return out


def _digests(directory: Path) -> dict:
    """sha256 of every regular file under ``directory`` (links not followed; a link is its target text)."""
    out = {}
    for root, _dirs, files in os.walk(directory):
        for n in files:
            p = Path(root) / n
            if p.is_symlink():
                out[str(p)] = "link:" + os.readlink(p)
            elif p.is_file():
                out[str(p)] = hashlib_sha256(p.read_bytes())
    return out


def hashlib_sha256(raw: bytes) -> str:
    import hashlib

    return hashlib.sha256(raw).hexdigest()


def _release_cli(args, *, env=None):
    """One CLI invocation, counted: exit 0/1/2, never a traceback, exit 2 is one line."""
    RELEASE["cases"] += 1
    r = RUNNER.invoke(cli, [str(a) for a in args], prog_name="gtm", env=env)
    # an "internal error" line is gtm's last guard catching an unexpected exception: counted as a traceback
    if "Traceback" in r.output or "internal error" in r.stderr or (
            r.exception is not None and not isinstance(r.exception, SystemExit)):
        RELEASE["tracebacks"] += 1
    assert r.exception is None or isinstance(r.exception, SystemExit), (args, repr(r.exception))
    assert "internal error" not in r.stderr, (args, r.stderr)
    assert r.exit_code in (0, 1, 2), (args, r.exit_code, r.output)
    if r.exit_code == 2:
        err = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert len(err) == 1 and err[0].startswith("gtm: error:"), (args, r.stderr)
    return r


def _check_refusal_kept(before: dict, after: dict, refused: bool, what) -> None:
    """A refused command changed no file that existed before it and created no state or key."""
    if not refused:
        return
    changed = [p for p in before if after.get(p) != before[p]]
    created = [p for p in after if p not in before and (p.endswith(".state") or p.endswith(".key"))]
    if changed or created:
        RELEASE["changed_by_refused"] += 1
    assert not changed and not created, (what, changed, created)


_RELEASE_FIXTURE: dict = {}


def _release_fixture() -> dict:
    """Built once: a certified, signed certificate (horizon 5, short budgets, as in
    tests/audits/cli/test_deploy_certificate.py), two key pairs, and a co run at update 9 and 20
    with its generation log."""
    if _RELEASE_FIXTURE:
        return _RELEASE_FIXTURE
    from audits.certify import certify
    from audits.certify import witnesses as W
    from audits.certify.signing import generate_keypair, load_private_key, sign
    from gtm_core.batchtoco.streams import bundled_stream

    d = _SCRATCH / "release"
    d.mkdir(exist_ok=True)
    old_cache = os.environ.get("GTM_CACHE_DIR")
    os.environ["GTM_CACHE_DIR"] = str(d / "cache")
    backing, W.BACKING_LEMMAS = W.BACKING_LEMMAS, ("lemma17", "theorem21")
    try:
        cert = certify(GTMConfig.load(ROOT / "examples" / "default.toml"), horizon=5, quick=True, seconds=1,
                       seed=3, progress=False)
    finally:
        W.BACKING_LEMMAS = backing
        if old_cache is None:
            os.environ.pop("GTM_CACHE_DIR", None)
        else:
            os.environ["GTM_CACHE_DIR"] = old_cache
    assert cert.verdict == "certified"
    private, public = generate_keypair(d / "release.key")
    other_private, other_public = generate_keypair(d / "other.key")
    key, other_key = load_private_key(private), load_private_key(other_private)
    signed = d / "cert.json"
    signed.write_text(cert.to_json(lambda raw: sign(raw, key)))
    doc = json.loads(signed.read_text())
    config = d / "cfg.json"
    config.write_text(json.dumps(doc["body"]["config"]))
    # a co run with a generation log: state at update 9 (the backup) and at update 20
    co = d / "co"
    co.mkdir()
    (co / "co.toml").write_text("[co]\nepsilon = 0.9\nk = 2\nseed = 7\n")
    full = bundled_stream("florentine_families").to_dict()
    half = {**full, "edges": full["edges"][:9]}
    other = {**full, "edges": full["edges"][:9] + list(reversed(full["edges"][9:]))}
    for name, stream in (("half.json", half), ("full.json", full), ("other.json", other)):
        (co / name).write_text(json.dumps(stream))
    check = str(ROOT / "examples" / "generation_check.sh")
    env = {"GTM_GENERATION_LOG": str(co / "generations.log")}
    state = co / "run.state"
    args = ["co", "run", co / "co.toml", "--state", state, "--generation-check", check]
    assert RUNNER.invoke(cli, [str(a) for a in args[:3]] + ["--stream", str(co / "half.json")]
                         + [str(a) for a in args[3:]], env=env).exit_code == 0
    shutil.copy2(state, co / "backup.state")
    shutil.copy2(f"{state}.key", co / "backup.state.key")
    assert RUNNER.invoke(cli, [str(a) for a in args[:3]] + ["--stream", str(co / "full.json")]
                         + [str(a) for a in args[3:]], env=env).exit_code == 0
    _RELEASE_FIXTURE.update(dir=d, cert=signed, doc=doc, pub=public, other_pub=other_public, key=key,
                            other_key=other_key, config=config, co=co, check=check)
    return _RELEASE_FIXTURE


def _python_wrong_shape(draw) -> None:
    """A Python mechanism (call or batch) returning a wrong shape: a typed MechanismError whose
    text is the same for two deployments with different noise (so it carries no secret), never
    eta_1's bits, and the deployment is failed durably (or the output was valid)."""
    from gtm_core.deployment.state import read_state_body_unchecked

    use_batch = draw(st.booleans())
    shape = draw(st.sampled_from(BATCH_SHAPES if use_batch else WRONG_SHAPES))
    seeds = draw(st.tuples(st.integers(0, 2**31), st.integers(0, 2**31)))

    class Wrong:
        def __call__(self, data=None):
            return shape

    class WrongBatch:
        def batch(self, data, n):
            return {"short": np.ones(max(n - 1, 0)), "long": np.ones(n + 1), "2d": np.ones((n, 1)),
                    "strings": np.array(["+1"] * n), "zeros": np.zeros(n), "ragged": [[1], [1, 1]] * n,
                    "scalar": 1, "none": None, "objects": [_Opaque()] * n}[shape]

        def __call__(self, data=None):
            return 1

    texts = []
    for seed in seeds:
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "s.state"
            with Deployment.create(path, SMALL, seed=seed) as dep:
                RELEASE["cases"] += 1
                mech = WrongBatch() if use_batch else Wrong()
                try:
                    out = dep.step(mech)
                except MechanismError as exc:
                    assert dep.failed and dep.failure["kind"] == "mechanism_error"
                    body = read_state_body_unchecked(path)
                    text = f"{exc} | {dep.failure['reason']} | {json.dumps(dep.status_dict())}"
                    assert body["secret"]["eta1_bits"] not in text
                    texts.append(str(exc) + " | " + dep.failure["reason"])
                else:
                    assert out in (True, False)
                    texts.append(None)
    if None not in texts:
        assert texts[0] == texts[1], texts  # a function of the fault, not of the noise


def _not_startable(draw) -> None:
    """``gtm deploy step --mechanism-cmd`` (or Deployment.step) on a command that cannot start:
    refused, exit 2 / InvalidParameter, the deployment unchanged."""
    kind = draw(st.sampled_from(NOT_STARTABLE))
    via_cli = draw(st.booleans())
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        state = d / "s.state"
        Deployment.create(state, SMALL, seed=draw(st.integers(0, 2**31))).close()
        script = d / "mech.sh"
        (d / "subdir").mkdir()
        (d / "plain").write_text("#!/bin/sh\necho 1\n")
        body = {"missing interpreter": f"#!{d}/no-such-interpreter\necho 1\n",
                "interpreter is a directory": f"#!{d}/subdir\necho 1\n",
                "interpreter not executable": f"#!{d}/plain\necho 1\n",
                "empty file": "",
                "not executable": "#!/bin/sh\necho 1\n",
                "interpreter missing behind env": "#!/usr/bin/env gtm-no-such-interpreter-xyz\necho 1\n",
                "shebang only": "#!\n",
                "binary junk": "\x7fELF\x00\x01junk"}[kind]
        script.write_text(body)
        os.chmod(script, 0o600 if kind == "not executable" else 0o700)
        before = _digests(d)
        if kind == "interpreter missing behind env":
            # /usr/bin/env itself starts: the missing program is found only after the write-ahead
            # record, so the step fails durably (mechanism_error), it is not refused
            r = _release_cli(["deploy", "step", state, "--mechanism-cmd", script, "--timeout", "5"])
            assert r.exit_code == 2 and "now failed" in r.stderr, (kind, r.exit_code, r.output)
            with Deployment.open(state) as dep:
                assert dep.failed and dep.failure["kind"] == "mechanism_error"
            return
        if via_cli:
            r = _release_cli(["deploy", "step", state, "--mechanism-cmd", script, "--timeout", "5"])
            refused = r.exit_code == 2
            assert refused, (kind, r.exit_code, r.output)
        else:
            RELEASE["cases"] += 1
            with Deployment.open(state) as dep:
                before = _digests(d)
                try:
                    dep.step(CommandMechanism([str(script)], step=1, time_limit=5))
                except GTMError as exc:
                    assert not isinstance(exc, MechanismError), (kind, exc)
                    refused = True
                else:
                    refused = False
                assert refused, kind
                assert dep.status == "running" and dep.steps_done == 0
        _check_refusal_kept(before, _digests(d), refused, kind)


def _resealed(doc: dict, key=None, *, drop_signature: bool = True) -> dict:
    from audits.certify.model import body_digest, canonical
    from audits.certify.signing import sign

    doc = copy.deepcopy(doc)
    doc["sha256"] = body_digest(doc["body"])
    if drop_signature:
        doc.pop("signature", None)
    if key is not None:
        doc["signature"] = sign(canonical(doc["body"]).encode("utf-8"), key)
    return doc


def _edit_body(body: dict, draw) -> bool:
    """Change one value somewhere in the certificate body (a step's number, a claim's field, the config).
    True if the edit is of an external witness's record (the statement, values or witness of an
    externally witnessed claim or of the provenance record): without a signature or --rerun, those
    are checked for shape and self-consistency only (docs/deployment.md), so the edit may read as
    consistent."""
    from audits.certify.model import EXTERNAL_CLAIMS

    where = draw(st.sampled_from(["steps", "claims", "globals", "config", "verdict", "horizon"]))
    if where in ("steps", "claims") and body[where]:
        item = body[where][draw(st.integers(0, len(body[where]) - 1))]
        k = draw(st.sampled_from(sorted(item)))
        item[k] = draw(st.sampled_from([None, 0, -1, 1.5, "x", [], item[k] * 2 if isinstance(item[k], (int, float))
                                        and not isinstance(item[k], bool) else "changed"]))
        return where == "claims" and isinstance(item.get("id"), str) and item["id"] in EXTERNAL_CLAIMS | {"provenance"} and k in (
            "statement", "values", "witness")
    elif where == "globals" and body["globals"]:
        k = draw(st.sampled_from(sorted(body["globals"])))
        body["globals"][k] = draw(st.sampled_from([None, 0, "x", 1e9]))
    elif where == "config":
        body["config"]["stream"]["horizon"] = draw(st.sampled_from([4, 6, 1000]))
    elif where == "verdict":
        body["verdict"] = draw(st.sampled_from(["refused", "incomplete", "", None]))
    else:
        body["horizon"] = draw(st.sampled_from([4, 6, 0, None]))
    return False


def _certificate_init(draw) -> None:
    """``gtm deploy init --certificate --public-key`` with an unsigned, edited, re-signed,
    mismatched or reformatted certificate: exit 0 only if the signed body is the original one
    and the configuration is the one it certifies; otherwise exit 2 with no state or key left."""
    fx = _release_fixture()
    kind = draw(st.sampled_from(CERT_MUTATIONS))
    doc = copy.deepcopy(fx["doc"])
    config, pub = fx["config"], fx["pub"]
    may_succeed = False
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        if kind == "unsigned":
            doc.pop("signature", None)
        elif kind == "unsigned, resealed":
            doc = _resealed(doc)
        elif kind.startswith("edited"):
            _edit_body(doc["body"], draw)
            if kind == "edited, resealed":
                doc = _resealed(doc)
            elif kind == "edited, resigned by another key":
                doc = _resealed(doc, fx["other_key"])
        elif kind == "signature of another key":
            doc = _resealed(doc, fx["other_key"])
        elif kind == "mismatched config":
            cfg = json.loads(config.read_text())
            table, key = draw(st.sampled_from([("gtm", "beta"), ("gtm", "gamma"), ("stream", "eps_t")]))
            cfg[table][key] = cfg[table][key] * draw(st.sampled_from([0.5, 0.999, 1.001]))
            config = d / "other.json"
            config.write_text(json.dumps(cfg))
        elif kind == "mismatched horizon":
            cfg = json.loads(config.read_text())
            cfg["stream"]["horizon"] = draw(st.sampled_from([4, 6, 1000]))
            config = d / "other.json"
            config.write_text(json.dumps(cfg))
        elif kind == "key id edited":
            doc["signature"]["key_id"] = "0" * 64
        elif kind == "verdict edited":
            doc["body"]["verdict"] = "certified "
        # an edit that changed nothing (0 for 0.0, a value for itself) leaves the signed body valid
        no_op = kind in ("edited", "key id edited") and doc["body"] == fx["doc"]["body"] and (
            kind == "edited" or doc["signature"] == fx["doc"]["signature"])
        may_succeed = kind == "reformatted"
        cert = d / "cert.json"
        text = json.dumps(doc, indent=draw(st.sampled_from([None, 1, 4])))
        if kind == "truncated":
            text = text[: draw(st.integers(0, len(text) - 1))]
        cert.write_text(text)
        state = d / "dep.state"
        before = _digests(d)
        r = _release_cli(["deploy", "init", state, config, "--certificate", cert, "--public-key", pub,
                          "--seed", "1"])
        if may_succeed:
            assert r.exit_code == 0, (kind, r.output)
        elif no_op:
            assert r.exit_code in (0, 2), (kind, r.output)
        else:
            assert r.exit_code == 2, (kind, r.exit_code, r.output)
            assert not state.exists() and not Path(f"{state}.key").exists()
        _check_refusal_kept(before, _digests(d), r.exit_code != 0, kind)


def _co_state(draw) -> None:
    """``gtm co run --state`` on a symlinked, rolled-back or aliased state: a symlink stays one
    run (its target advances, the link stays a link); a rolled-back copy is refused by the
    generation check before any update (files unchanged); without the check it is resumed (the
    documented limit); loops, directories and dangling links end in exit 0 or 2, never a traceback."""
    fx = _release_fixture()
    kind = draw(st.sampled_from(CO_KINDS))
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        co = fx["co"]
        for n in ("co.toml", "half.json", "full.json", "other.json", "generations.log"):
            shutil.copy2(co / n, d / n)
        for src, dst in (("run.state", "run.state"), ("backup.state", "backup.state")):
            shutil.copy2(co / src, d / dst)
            shutil.copy2(co / f"{src}.key", d / f"{dst}.key")
        env = {"GTM_GENERATION_LOG": str(d / "generations.log")}
        stream = d / draw(st.sampled_from(["full.json", "other.json"]))
        use_check = kind != "rolled back, no check" and draw(st.booleans())
        state = d / "use.state"
        if kind == "symlink":
            state.symlink_to(d / "run.state")
        elif kind == "symlink to a rolled-back copy":
            state.symlink_to(d / "backup.state")
            use_check = True
        elif kind in ("rolled back", "rolled back, no check"):
            os.replace(d / "backup.state", d / "run.state")
            os.replace(d / "backup.state.key", d / "run.state.key")
            state = d / "run.state"
            use_check = kind == "rolled back"
        elif kind == "symlink loop":
            state.symlink_to(state)
        elif kind == "symlink to a directory":
            (d / "dir").mkdir()
            state.symlink_to(d / "dir")
        elif kind == "dangling symlink":
            state.symlink_to(d / "no" / "such.state")
        else:  # the state of this run next to a new key (another run's): the HMAC refuses
            from gtm_core.deployment.state import create_key_file

            state.symlink_to(d / "run.state")
            os.unlink(d / "run.state.key")
            create_key_file(d / "run.state.key")
        args = ["co", "run", d / "co.toml", "--stream", stream, "--state", state]
        if use_check:
            args += ["--generation-check", fx["check"]]
        before = _digests(d)
        before.pop(str(d / "generations.log"), None)  # the log is appended to by design
        r = _release_cli(args, env=env)
        after = _digests(d)
        after.pop(str(d / "generations.log"), None)
        if kind in ("symlink to a rolled-back copy", "rolled back"):
            assert r.exit_code == 2 and "generation check refused" in r.stderr, (kind, r.output)
        if kind == "key symlinked to another run":
            assert r.exit_code == 2, (kind, r.output)
        if kind == "symlink" and r.exit_code == 0:
            assert state.is_symlink()
        _check_refusal_kept(before, after, r.exit_code == 2, kind)


VERIFY_MUTATIONS = ["original", "reformatted", "unsigned", "unsigned, resealed", "unsigned, edited, resealed",
                    "edited", "edited, resealed", "edited, resigned by another key", "signature of another key",
                    "key id edited", "verdict edited", "duplicate key", "duplicate key, same value",
                    "horizon 1e12, resealed", "horizon 1e12, resigned by another key", "truncated"]


def _duplicate_key_text(doc: dict, draw, *, same_value: bool) -> str:
    """The certificate's JSON with one key repeated (in the document, the body or a claim): a reader
    that keeps the last key sees ``changed``, a human or another parser the first value."""
    where = draw(st.sampled_from(["document", "body", "claim"]))
    obj = doc if where == "document" else doc["body"] if where == "body" else doc["body"]["claims"][0]
    key = draw(st.sampled_from(sorted(obj)))
    marker = "\u0000gtm-duplicate\u0000"
    original = obj[key]
    obj[key] = marker
    text = json.dumps(doc)
    obj[key] = original
    value = json.dumps(original) if same_value else json.dumps("changed")
    return text.replace(json.dumps(marker), f"{json.dumps(original)}, {json.dumps(key)}: {value}", 1)


def _signer(doc: dict, fx: dict) -> str:
    """Whose key the document's signature verifies with: "signer", "other" or "broken"."""
    from audits.certify.model import canonical
    from audits.certify.signing import load_public_key, signature_problem

    raw = canonical(doc["body"]).encode("utf-8")
    for name, pub in (("signer", fx["pub"]), ("other", fx["other_pub"])):
        try:
            if signature_problem(raw, doc["signature"], load_public_key(pub)) is None:
                return name
        except GTMError:
            pass
    return "broken"


def _verify_certificate(draw) -> None:
    """``gtm certify --verify CERT`` with no key, the signer's key or another key, with or without
    ``--allow-unsigned``, on an unsigned, edited, re-signed, duplicate-key, truncated or
    horizon-10^12 certificate: exit 0 only if the body is the signed original (``valid`` only with the
    signer's key, ``unsigned`` only with --allow-unsigned); an edited body is never accepted, whatever
    the key situation; a duplicate key is refused (exit 2); the work is bounded (10^12 is refused
    before anything is re-derived)."""
    fx = _release_fixture()
    kind = draw(st.sampled_from(VERIFY_MUTATIONS))
    key_choice = draw(st.sampled_from(["none", "signer", "other"]))
    allow = draw(st.booleans())
    doc = copy.deepcopy(fx["doc"])
    text = None
    record_edit = False
    if kind == "unsigned":
        doc.pop("signature", None)
    elif kind == "unsigned, resealed":
        doc = _resealed(doc)
    elif kind == "unsigned, edited, resealed":
        record_edit = _edit_body(doc["body"], draw)
        doc = _resealed(doc)
    elif kind.startswith("edited"):
        record_edit = _edit_body(doc["body"], draw)
        if kind == "edited, resealed":
            doc = _resealed(doc, drop_signature=False)
        elif kind == "edited, resigned by another key":
            doc = _resealed(doc, fx["other_key"])
    elif kind == "signature of another key":
        doc = _resealed(doc, fx["other_key"])
    elif kind == "key id edited":
        doc["signature"]["key_id"] = "f" * 64
    elif kind == "verdict edited":
        doc["body"]["verdict"] = draw(st.sampled_from(["refused", "incomplete", "certified "]))
    elif kind.startswith("duplicate key"):
        text = _duplicate_key_text(doc, draw, same_value=kind.endswith("same value"))
    elif kind.startswith("horizon 1e12"):
        doc["body"]["horizon"] = 10**12
        doc["body"]["config"]["stream"]["horizon"] = 10**12
        doc = _resealed(doc, fx["other_key"] if "another key" in kind else None)
    if text is None:
        text = json.dumps(doc, indent=draw(st.sampled_from([None, 1, 4])))
        if kind == "truncated":
            text = text[: draw(st.integers(0, len(text) - 1))]
    # the same body, to the type (0 is not 0.0: the digest and the re-derivation tell them apart)
    original = (json.dumps(doc["body"], sort_keys=True) == json.dumps(fx["doc"]["body"], sort_keys=True)
                and not kind.startswith("duplicate key") and kind != "truncated")
    signer = None if "signature" not in doc else _signer(doc, fx)
    with tempfile.TemporaryDirectory() as d:
        cert = Path(d) / "cert.json"
        cert.write_text(text)
        args = ["certify", "--verify", cert, "--no-progress"]
        if key_choice != "none":
            args += ["--public-key", fx["pub"] if key_choice == "signer" else fx["other_pub"]]
        if allow:
            args.append("--allow-unsigned")
        started = time.monotonic()
        r = _release_cli(args)
        assert time.monotonic() - started < 60, (kind, "verification not bounded")
    if kind.startswith("duplicate key") or kind == "truncated":
        assert r.exit_code == 2 and ("duplicate" in r.stderr or kind == "truncated"), (kind, r.output)
    elif not original and record_edit and r.output.startswith("tampered"):
        assert r.exit_code == 1, (kind, r.output)
    elif not original and record_edit:  # read as consistent: the key situation decides, as below
        if key_choice != "none" and key_choice == signer:
            assert r.exit_code == 0 and r.output.startswith("valid"), (kind, r.output)
        else:
            assert signer is None or key_choice == "none", (kind, key_choice, signer, r.output)
            assert r.output.startswith("unsigned") and r.exit_code == (0 if allow else 1), (kind, r.output)
    elif not original:  # an edited or re-derivation-failing body: never accepted, whatever the key situation
        assert r.exit_code == 1 and not r.output.startswith(("valid", "unsigned")), (kind, key_choice, r.output)
        assert "consistent" not in r.output.splitlines()[0], (kind, r.output)
    elif key_choice != "none" and key_choice == signer:
        assert r.exit_code == 0 and r.output.startswith("valid"), (kind, r.output)
        assert f"config sha256 {fx['doc']['body']['config_sha256']}, horizon 5" in r.output, r.output
    elif key_choice != "none" and signer is not None:  # a signature the given key does not verify
        assert r.exit_code == 1 and r.output.startswith("tampered"), (kind, key_choice, r.output)
    else:  # no key, or no signature: consistent contents are unsigned, accepted only with --allow-unsigned
        assert r.output.startswith("unsigned"), (kind, key_choice, r.output)
        assert r.exit_code == (0 if allow else 1), (kind, key_choice, allow, r.output)


UNCERTIFIED_CONFIGS = [(name, h) for name in ("default", "purified", "flipped", "unsafe_budget", "unsafe_purification",
                                              "unsafe_vanishing_threshold") for h in (None, 50)]
UNCERTIFIED_EDITS = [None, ("stream", "eps_t", 1e-300), ("stream", "eps_t", 1e-9), ("gtm", "beta", 0.999),
                     ("gtm", "gamma", 1e-6), ("stream", "eps_t", 0.99)]
_REFUSED: dict = {}


def _certify_refuses(table: dict) -> bool:
    """The oracle, memoised: does ``gtm certify`` refuse this configuration (or fail to plan it)?"""
    from audits.certify.derive import derive
    from gtm_core.errors import UnsupportedConfiguration

    key = json.dumps(table, sort_keys=True)
    if key not in _REFUSED:
        try:
            _REFUSED[key] = bool(derive(GTMConfig.from_dict(table)).refusals)
        except UnsupportedConfiguration:
            _REFUSED[key] = True
    return _REFUSED[key]


def _uncertified_init(draw) -> None:
    """``gtm deploy init STATE CONFIG`` without a certificate on a configuration ``gtm certify``
    refuses (the bundled unsafe examples, tiny eps_t, extreme beta or gamma): exit 2, no state or key
    left; a configuration certify accepts deploys and says it is uncertified."""
    import tomllib

    name, horizon = draw(st.sampled_from(UNCERTIFIED_CONFIGS))
    edit = draw(st.sampled_from(UNCERTIFIED_EDITS))
    table = tomllib.loads((ROOT / "examples" / f"{name}.toml").read_text())
    if horizon is not None:
        table["stream"]["horizon"] = horizon
    if edit is not None:
        table.setdefault(edit[0], {})[edit[1]] = edit[2]
    try:
        GTMConfig.from_dict(table)
    except GTMError:
        refused = True  # not even a configuration: deploy init refuses it as bad input
    else:
        refused = _certify_refuses(table)
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        config = d / "cfg.toml"
        config.write_text(tomli_w.dumps(table))
        state = d / "dep.state"
        before = _digests(d)
        r = _release_cli(["deploy", "init", state, config, "--seed", "1"])
        if refused:
            assert r.exit_code == 2, (name, horizon, edit, r.output)
            assert not state.exists() and not Path(f"{state}.key").exists(), (name, edit)
        else:
            assert r.exit_code == 0 and "uncertified" in r.output, (name, horizon, edit, r.output)
        _check_refusal_kept(before, _digests(d), r.exit_code != 0, (name, edit))


SERVE_LINES = ["[" * 100_000, "{" * 50_000, '{"p": [0.1], "n": 2, "seed": 1, "n": 3}', '{"p": [0.1], "n": 2, "p": [0.2]}',
               "[" * 1000 + "]" * 1000, '{"p": [NaN], "n": 1}', '{"p": [Infinity], "n": 1}', '{"p": [1e999], "n": 1}',
               "\udcff", "\x00", '{"p": "0.1", "n": 1}', '{"p": [0.1], "n": -1}', '{"p": [0.1], "n": 1e400}',
               '{"p": [0.1], "n": 1000000000000}', '{"p": [2], "n": 1}', '{"p": [], "n": 1}', "null", "[]", '"x"',
               '{"p": [0.1], "n": 1, "seed": -5}', '{"p": [0.1], "n": 1, "seed": 1e30}', "}{", '{"p": [0.1]',
               '{"p": [0.1], "n": 1, "evaluations": true}', '{"p": [0.5, 0.5, 0.5], "n": 4, "seed": 2}']
_SERVE: dict = {}


def _serve_lines(draw) -> None:
    """``python -m audits.serve``'s loop on hostile lines (deep nesting, duplicate keys, non-finite
    numbers, wrong types, huge n, unpaired surrogates): one JSON answer per line, ``{"error": ...}``
    for a bad one, never an exception, and the server keeps serving (a valid request after them is
    answered)."""
    import io

    from audits.power.broken import variant
    from audits.serve import handle, serve_json_lines

    if not _SERVE:
        _SERVE["plan"] = make_plan(GTMConfig.load(ROOT / "examples" / "default.toml"))
        _SERVE["dep"] = variant("correct")
    lines = draw(st.lists(st.sampled_from(SERVE_LINES) | st.text(max_size=40).filter(lambda x: "\n" not in x
                                                                                     and "\r" not in x),
                          min_size=1, max_size=6))
    lines.append('{"p": [0.1, 0.2], "n": 3, "seed": 9}')
    out = io.StringIO()
    RELEASE["cases"] += 1
    try:
        serve_json_lines(lambda req: handle(_SERVE["plan"], _SERVE["dep"], req, "request"),
                         stdin=io.StringIO("\n".join(lines) + "\n"), stdout=out)
    except Exception:
        RELEASE["tracebacks"] += 1
        raise
    answers = [json.loads(a) for a in out.getvalue().splitlines()]
    assert len(answers) == sum(1 for ln in lines if ln.strip()), (lines, answers)
    assert all(isinstance(a, dict) and set(a) in ({"error"}, {"halt"}, {"halt", "evaluations"}) for a in answers)
    assert set(answers[-1]) == {"halt"} and len(answers[-1]["halt"]) == 3, answers[-1]


RELEASE_CLASSES = {"python mechanism, wrong shape": _python_wrong_shape,
                   "command that cannot start": _not_startable,
                   "deploy init --certificate, unsigned / edited / mismatched": _certificate_init,
                   "co state, symlinked / rolled back": _co_state,
                   "certify --verify, key situations / duplicate keys / horizon 1e12": _verify_certificate,
                   "deploy init without a certificate, certify's refusals": _uncertified_init,
                   "audits.serve, hostile lines": _serve_lines}


def run_release_case(which: str, data) -> None:
    before = _our_live_children()
    try:
        RELEASE_CLASSES[which](data.draw)
    finally:
        leaked = _our_live_children() - before
        if leaked:
            RELEASE["orphans"] += len(leaked)
    assert not leaked, (which, leaked)
    RELEASE[f"class: {which}"] += 1
    RELEASE["examples"] += 1
    progress = os.environ.get("GTM_HOSTILE_PROGRESS")  # a long run's progress, appended every 50 examples
    if progress and RELEASE["examples"] % 50 == 0:
        with open(progress, "a") as fh:
            fh.write(f"{time.time():.0f} examples {RELEASE['examples']}: {_release_report()}\n")


def _release_report() -> str:
    return (f"release-path campaign: {RELEASE['cases']} cases, {RELEASE['tracebacks']} tracebacks, "
            f"{RELEASE['orphans']} orphans, {RELEASE['changed_by_refused']} state files changed by a refused "
            f"command; per class: " + ", ".join(f"{k[7:]} {v}" for k, v in sorted(RELEASE.items())
                                                 if k.startswith("class: ")))


def _release_settings(n):
    """No shrinking: a failing case is reported as drawn (shrinking a CLI case takes minutes)."""
    from hypothesis import Phase

    return settings(max_examples=n, derandomize=True, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate])


@_release_settings(24)
@given(which=st.sampled_from(sorted(RELEASE_CLASSES)), data=st.data())
def test_release_path_and_mechanism_faults(which, data):
    run_release_case(which, data)


@pytest.mark.slow
def test_release_path_and_mechanism_faults_slow():
    """The same properties with ``GTM_HOSTILE_SCALE`` x 120 examples (default 90: 10800 examples,
    each one to two counted cases); the counts are printed (``-s``)."""
    RELEASE.clear()
    _release_settings(120 * SCALE)(given(which=st.sampled_from(sorted(RELEASE_CLASSES)), data=st.data())(run_release_case))()
    print("\n" + _release_report())
    assert RELEASE["cases"] >= 120 * SCALE
    assert RELEASE["tracebacks"] == RELEASE["orphans"] == RELEASE["changed_by_refused"] == 0


def test_zz_report_case_count():
    total = sum(v for k, v in CASES.items() if k in ("api", "cli", "cli_subprocess"))
    print(f"\nhostile-input campaign: {total} cases ({CASES['api']} API calls, {CASES['cli']} in-process CLI "
          f"invocations, {CASES['cli_subprocess']} subprocess runs; {CASES['verbs']} CLI verbs)")
    if total:  # when the whole module ran
        assert CASES["api"] > 1000 and CASES["cli"] > 200
