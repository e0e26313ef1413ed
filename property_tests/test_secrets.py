"""Secrets hygiene: eta_1, eta_{2,t}, N_t and K_t never reach an output channel.

Planted sentinel values (eta_1 = 1.919191919191, eta_{2,t} = 0.737373737373, N_t = 23456) -
for the exact sampler a bit source whose first 64 bits put eta_1 at the sentinel (its drawn
bits, the stored secret, are searched for too) and a patched count draw; for the float path a
generator returning them - and mechanisms that produce K_t = 199 (continue) then 12121
(halt) drive a deployment through the Python API and through the CLI; every channel is then
searched for the sentinels in several renderings (repr, short formats, derived sums):
``repr``/``str``, log records (caplog, DEBUG), CLI stdout/stderr, JSON outputs, exception
messages. Positive controls show the search finds the sentinels where they are meant to be
(the state file, the secret store) and in a deliberately leaky output.
"""

import json
import logging
import re
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from audits.cli import deploy as cmd_deploy
from audits.cli import cli
from gtm_core import GTMConfig, make_plan
from gtm_core.deployment import runner as dep_runner
from gtm_core import reference as R
from gtm_core import randomness
from gtm_core.deployment import Deployment
from gtm_core.deployment import CommandMechanism
from gtm_core.errors import EvaluationBudgetExceeded, GTMError, MechanismError, MechanismTimeout
from gtm_core.exact_sampling import BitSource, SeededBits

ETA1, ETA2, N_T = 1.919191919191, 0.737373737373, 23456
K_CONTINUE, K_HALT = 199, 12121

CONFIG = GTMConfig.from_dict({
    "gtm": {"epsilon": 1.0, "theta": 1.0, "gamma": 1.5, "beta": 0.05},
    "stream": {"eps_t": 0.1, "p_star": 0.5, "horizon": 100},
})


TAU1 = make_plan(CONFIG).tau1


def _sentinel_bits() -> int:
    """The 64-bit prefix m of U with -tau_1 ln U = ETA1: U in [m 2^-64, (m + 1) 2^-64]."""
    import mpmath

    with mpmath.workdps(60):
        return int(mpmath.floor(mpmath.exp(-mpmath.mpf(ETA1) / mpmath.mpf(TAU1)) * mpmath.mpf(2) ** 64))


ETA1_BITS = _sentinel_bits()
ETA1_HEX = format(ETA1_BITS, "016x")  # how the stored secret begins


class SentinelBits(BitSource):
    """eta_1's first 64 bits put it at ETA1 (to ~1e-18); then ordinary PCG64 bits. Stands in
    for the OS CSPRNG (deployable) so a test can run the unseeded path."""

    deployable = True

    def __init__(self):
        self._first, self._rest = True, SeededBits(0)

    def bits(self, k):
        if self._first and k == 64:
            self._first = False
            return ETA1_BITS
        return self._rest.bits(k)

    def words(self, n):
        return self._rest.words(n)


def sentinel_count(noise, source, *, eps_t, tau2, rho, s, budget):
    """Stands in for the exact N_t draw: N_t = N_T (or None beyond the budget)."""
    return None if budget is not None and N_T > budget else N_T


@pytest.fixture
def planted(monkeypatch):
    monkeypatch.setattr(R, "draw_count", sentinel_count)
    monkeypatch.setattr(randomness, "SystemBits", SentinelBits)  # the one rng-or-seed rule (randomness)


def eta1_of(gtm):
    return float(gtm._noise.eta1.enclosure(64).mid())


def hex_leak(text):
    return ETA1_HEX in text


class SentinelGenerator(np.random.Generator):
    """eta_1 then eta_{2,t} from ``exponential``, N_t from ``poisson``; everything else real."""

    def __init__(self):
        super().__init__(np.random.PCG64(0))
        self.exponential_calls = 0

    def exponential(self, scale=1.0, size=None):
        self.exponential_calls += 1
        return ETA1 if self.exponential_calls == 1 else ETA2

    def poisson(self, lam=1.0, size=None):
        return N_T


def _patterns():
    pats = []
    for x in (ETA1, ETA2, CONFIG_MU1 - ETA1, CONFIG_MU1 - ETA1 + ETA2):
        for text in {repr(x), f"{x:.6g}", f"{x:.4g}", f"{x:.3f}"}:
            pats.append(re.escape(text))
    for k in (N_T, K_CONTINUE, K_HALT, 2 * N_T, 3 * N_T, 4 * N_T, N_T - K_CONTINUE):
        pats.append(rf"(?<![0-9.]){k}(?![0-9])")
    return [re.compile(p) for p in pats]


CONFIG_MU1 = make_plan(CONFIG).mu1
PATTERNS = _patterns()


_NOISE = re.compile(r"[0-9a-f]{32}(?:[0-9a-f]{32})?|/[^\s\"',]*|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+\-0-9:Z]*")


def leaks(text: str) -> list[str]:
    """Sentinels found in text, after removing what can contain digits by chance (SHA-256/HMAC
    digests, random deployment ids, file paths such as /tmp/pytest-of-root/pytest-199/..., timestamps)."""
    text = _NOISE.sub(" ", text)
    return [p.pattern for p in PATTERNS if p.search(text)]


def sentinel_mechanism(k_plus):
    """A batch mechanism returning exactly k_plus +1 outputs (then -1s)."""

    class M:
        def __call__(self, data=None):
            return -1

        def batch(self, data, n):
            out = -np.ones(n, dtype=int)
            out[:k_plus] = 1
            return out

    return M()


def test_the_search_finds_planted_values_power_companion():
    assert leaks(f"eta1={ETA1!r}") and leaks(f"N={N_T}") and leaks(f"{ETA1:.4g}")
    assert leaks(f"K_t={K_CONTINUE}") and not leaks("t=1 c=282 budget=29657")
    assert not leaks("/tmp/pytest-of-root/pytest-199/x " + "a199b" * 13 + "abcd")  # scrubbed noise


def test_api_channels(tmp_path, caplog, planted):
    caplog.set_level(logging.DEBUG)
    state = tmp_path / "s"
    texts = []
    dep = Deployment.create(state, CONFIG)
    assert abs(eta1_of(dep._gtm) - ETA1) < 1e-15  # the sentinel really is eta_1
    for _ in range(3):
        assert dep.step(sentinel_mechanism(K_CONTINUE)) is False
        texts += [repr(dep), str(dep), json.dumps(dep.status_dict()), repr(dep._gtm), str(dep.transcript)]
    assert dep.evaluations_total == 3 * N_T  # the sentinel really is N_t
    assert dep.step(sentinel_mechanism(K_HALT)) is True
    texts += [repr(dep), json.dumps(dep.status_dict())]
    dep.close()
    with Deployment.open(state) as dep2:
        texts += [repr(dep2), json.dumps(dep2.status_dict())]
        with pytest.raises(GTMError) as info:
            dep2.step(sentinel_mechanism(K_CONTINUE))
        texts.append(str(info.value))
    texts += [r.getMessage() for r in caplog.records]
    assert caplog.records, "expected log records to search"
    for text in texts:
        assert not leaks(text) and not hex_leak(text), (leaks(text), text)
    # positive control: the secret store does hold eta_1's bits (and only the state file does)
    assert hex_leak(state.read_text())


def test_reference_run_reprs(planted):
    run = R.GTMRun(make_plan(CONFIG), SentinelBits())
    assert abs(eta1_of(run._gtm) - ETA1) < 1e-15
    run.step(sentinel_mechanism(K_CONTINUE))
    assert run.evaluation_counts() == [N_T]
    for text in (repr(run), str(run), repr(run._gtm), repr(run._gtm._noise), str(run.transcript)):
        assert not leaks(text) and not hex_leak(text), text


def test_float_reference_run_reprs():
    run = R.GTMRun(make_plan(CONFIG), SentinelGenerator(), sampler="float")
    assert run._gtm._eta1 == ETA1
    run.step(sentinel_mechanism(K_CONTINUE))
    for text in (repr(run), str(run), repr(run._gtm), str(run.transcript)):
        assert not leaks(text), text


def _fail_with(tmp_path, caplog, mechanism, exc_type, config=CONFIG, **patch):
    caplog.set_level(logging.DEBUG)
    state = tmp_path / "s"
    with Deployment.create(state, config) as dep:
        dep.step(sentinel_mechanism(K_CONTINUE))
        with pytest.raises(exc_type) as info:
            dep.step(mechanism, **patch)
        texts = [str(info.value), repr(info.value), repr(dep), json.dumps(dep.status_dict())]
    texts += [r.getMessage() for r in caplog.records]
    for text in texts:
        assert not leaks(text) and not hex_leak(text), (leaks(text), text)


def test_mechanism_error_channels(tmp_path, caplog, planted):
    class Bad:
        def batch(self, data, n):
            raise RuntimeError(f"n={n}")  # a mechanism that puts N_t into its own error

        def __call__(self, data=None):
            return 1

    _fail_with(tmp_path, caplog, Bad(), MechanismError)


def test_bad_output_channels(tmp_path, caplog, planted):
    class Bad:
        def batch(self, data, n):
            return np.full(n, K_CONTINUE)

        def __call__(self, data=None):
            return K_CONTINUE

    _fail_with(tmp_path, caplog, Bad(), MechanismError)


def test_budget_exceeded_channels(tmp_path, caplog, monkeypatch, planted):
    import dataclasses

    real = dep_runner.uncached_step_plan
    monkeypatch.setattr(dep_runner, "uncached_step_plan",
                        lambda cfg, t: real(cfg, t) if t == 1 else dataclasses.replace(real(cfg, t), evaluation_budget=100))
    _fail_with(tmp_path, caplog, sentinel_mechanism(K_CONTINUE), EvaluationBudgetExceeded,
               config=CONFIG.with_changes(evaluation_budget="refuse"))


def test_cli_channels(tmp_path, monkeypatch, caplog, planted):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setattr(cmd_deploy, "default_rng", lambda seed=None: (SentinelGenerator(), seed is not None))
    cfg = tmp_path / "c.toml"
    cfg.write_text(CONFIG.to_toml())
    state = str(tmp_path / "s")
    script = (f"import os\nk = {K_HALT} if int(os.environ['GTM_STEP']) == 4 else {K_CONTINUE}\n"
              "for _ in range(k): print(1)\nwhile True: print(-1)\n")
    cmd = f"{sys.executable} -c \"{script}\""
    runner = CliRunner()
    outputs = []
    for i, args in enumerate([
        ["deploy", "init", state, "--config", str(cfg)],
        ["deploy", "step", state, "--mechanism-cmd", cmd, "--steps", "10"],
        ["deploy", "status", state],
        ["deploy", "step", state, "--bernoulli", "0.5"],  # refused: halted
    ]):
        out = tmp_path / f"o{i}.json"
        r = runner.invoke(cli, args + ["--json", str(out)], prog_name="gtm")
        outputs += [r.output, getattr(r, "stderr", "")]
        if out.exists():
            outputs.append(out.read_text())
    with Deployment.open(state) as dep:
        assert dep.halted_at == 4 and dep.evaluations_total == 4 * N_T  # sentinels were used
    assert any("step 4: HALT" in o for o in outputs)
    outputs += [r.getMessage() for r in caplog.records]
    for text in outputs:
        assert not leaks(text) and not hex_leak(text), (leaks(text), text)
    assert hex_leak((tmp_path / "s").read_text())  # positive control: the secret store


# -- every failure path of count_positive, the command mechanism and the runner ----------------------
#
# Each fault is run twice, with N_t planted at N_T and at N_T_OTHER (another length in digits).
# Every text it produces (the exception, the failure record shown by `gtm deploy status` and its
# JSON, repr, the log records) must contain no sentinel, and the public texts must be *identical*
# for the two counts: nothing public may depend on N_t, not even a length.

N_T_OTHER = 345678
OTHER = re.compile(rf"(?<![0-9.]){N_T_OTHER}(?![0-9])")


def plant_count(monkeypatch, n):
    monkeypatch.setattr(R, "draw_count", lambda noise, source, **kw: n)


def _raise(exc):
    raise exc


class _Batch:
    """A batch mechanism whose ``batch(data, n)`` is ``fn(n)``."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, data=None):
        return -1

    def batch(self, data, n):
        return self.fn(n)


class _PerCall:
    """A mechanism without ``batch``: call i (1-based) returns ``fn(i)``."""

    def __init__(self, fn):
        self.fn, self.i = fn, 0

    def __call__(self, data=None):
        self.i += 1
        return self.fn(self.i)


PYTHON_FAULTS = {
    "batch raises, quoting n": (lambda: _Batch(lambda n: _raise(RuntimeError(f"n={n}"))), MechanismError),
    "batch raises MechanismError quoting n": (
        lambda: _Batch(lambda n: _raise(MechanismError(f"asked for {n} outputs"))), MechanismError),
    "batch raises MechanismTimeout quoting n": (
        lambda: _Batch(lambda n: _raise(MechanismTimeout(f"{n} outputs take too long"))), MechanismTimeout),
    "batch shape off by one": (lambda: _Batch(lambda n: np.ones(n - 1, dtype=int)), MechanismError),
    "batch two-dimensional": (lambda: _Batch(lambda n: np.ones((n, 1), dtype=int)), MechanismError),
    "batch ragged": (lambda: _Batch(lambda n: [[1]] * (n - 1) + [[1, 1]]), MechanismError),
    "batch strings": (lambda: _Batch(lambda n: np.array(["1"] * n)), MechanismError),
    "batch objects": (lambda: _Batch(lambda n: np.array([1] * n, dtype=object)), MechanismError),
    "batch non-binary ints": (lambda: _Batch(lambda n: np.full(n, K_CONTINUE)), MechanismError),
    "batch non-binary floats": (lambda: _Batch(lambda n: np.full(n, 0.5)), MechanismError),
    "batch KeyboardInterrupt quoting n": (lambda: _Batch(lambda n: _raise(KeyboardInterrupt(n))), KeyboardInterrupt),
    "batch sys.exit(n)": (lambda: _Batch(lambda n: _raise(SystemExit(n))), SystemExit),
    "call raises at call K": (
        lambda: _PerCall(lambda i: _raise(ValueError(f"call {i}")) if i == K_CONTINUE else -1), MechanismError),
    "call returns a non-sign at call K": (
        lambda: _PerCall(lambda i: K_CONTINUE if i == K_CONTINUE else -1), MechanismError),
}

_TAIL = "import sys; sys.stderr.write('the mechanism says goodbye\\n')"
COMMAND_FAULTS = {
    "command ends early": (f"for _ in range({K_CONTINUE}): print(1)\n{_TAIL}", MechanismError),
    "command prints a non-sign": (f"for _ in range({K_CONTINUE}): print(-1)\nprint('yes')", MechanismError),
    "command prints an over-long line": ("import sys; sys.stdout.write('1' * 70000); sys.stdout.flush()\n"
                                         "import time; time.sleep(30)", MechanismError),
    "command hangs": (f"for _ in range({K_CONTINUE}): print(-1)\nimport time; time.sleep(30)", MechanismTimeout),
}


def _command(body):
    return [sys.executable, "-c", body]


def _public(text: str) -> str:
    """A text with paths, digests and timestamps (which differ between runs anyway) scrubbed."""
    return _NOISE.sub(" ", text)


def _deployment_fault(tmp_path, caplog, monkeypatch, n, make, exc_type, *, time_limit=None, command=False):
    """Step 1 continues, step 2 meets the fault; (every text produced, the public ones)."""
    plant_count(monkeypatch, n)
    caplog.clear()
    state = tmp_path / ("a" if n == N_T else "b")
    with Deployment.create(state, CONFIG) as dep:
        dep.step(sentinel_mechanism(K_CONTINUE))
        mech = CommandMechanism(_command(make), step=2, time_limit=time_limit) if command else make()
        with pytest.raises(exc_type) as info:
            dep.step(mech, time_limit=time_limit)
        status = dep.status_dict()
        texts = [str(info.value), repr(info.value), repr(dep), json.dumps(status)]
    with Deployment.open(state) as dep:  # what `gtm deploy status` shows, read back
        failure = dep.failure
    logs = [r.getMessage() for r in caplog.records]
    texts += logs + [json.dumps(failure)]
    public = (str(info.value), json.dumps(failure, sort_keys=True), tuple(_public(m) for m in logs),
              _public(repr(dep)))
    return texts, public


def _assert_hidden(texts):
    for text in texts:
        assert not leaks(text) and not hex_leak(text) and not OTHER.search(_NOISE.sub(" ", text)), (
            leaks(text), text)


@pytest.mark.parametrize("time_limit", [None, 30.0])
@pytest.mark.parametrize("name", sorted(PYTHON_FAULTS))
def test_python_mechanism_faults_hide_every_secret(tmp_path, caplog, monkeypatch, name, time_limit):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setattr(randomness, "SystemBits", SentinelBits)
    make, exc_type = PYTHON_FAULTS[name]
    if time_limit is not None and exc_type in (KeyboardInterrupt, SystemExit):
        exc_type = MechanismError  # raised in the evaluation thread: a fault of the mechanism
    a_texts, a = _deployment_fault(tmp_path, caplog, monkeypatch, N_T, make, exc_type, time_limit=time_limit)
    b_texts, b = _deployment_fault(tmp_path, caplog, monkeypatch, N_T_OTHER, make, exc_type,
                                   time_limit=time_limit)
    _assert_hidden(a_texts + b_texts)
    assert a == b  # the same public texts whatever N_t was


@pytest.mark.parametrize("name", sorted(COMMAND_FAULTS))
def test_command_mechanism_faults_hide_every_secret(tmp_path, caplog, monkeypatch, name):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setattr(randomness, "SystemBits", SentinelBits)
    body, exc_type = COMMAND_FAULTS[name]
    limit = 1.0 if exc_type is MechanismTimeout else 30.0
    a_texts, a = _deployment_fault(tmp_path, caplog, monkeypatch, N_T, body, exc_type, time_limit=limit,
                                   command=True)
    b_texts, b = _deployment_fault(tmp_path, caplog, monkeypatch, N_T_OTHER, body, exc_type, time_limit=limit,
                                   command=True)
    _assert_hidden(a_texts + b_texts)
    assert a == b
    if name == "command ends early":  # the command's own stderr is kept (it cannot know N_t)
        assert "goodbye" in a[1]


def test_python_timeout_hides_every_secret(tmp_path, caplog, monkeypatch):
    import threading

    caplog.set_level(logging.DEBUG)
    monkeypatch.setattr(randomness, "SystemBits", SentinelBits)
    release = threading.Event()

    def slow():
        return _Batch(lambda n: release.wait(10) and np.ones(n, dtype=int))

    try:
        a_texts, a = _deployment_fault(tmp_path, caplog, monkeypatch, N_T, slow, MechanismTimeout, time_limit=0.3)
        b_texts, b = _deployment_fault(tmp_path, caplog, monkeypatch, N_T_OTHER, slow, MechanismTimeout,
                                       time_limit=0.3)
    finally:
        release.set()  # the abandoned evaluation threads end
    _assert_hidden(a_texts + b_texts)
    assert a == b and "time limit" in a[0]


@pytest.mark.parametrize("name", sorted(PYTHON_FAULTS))
def test_reference_run_faults_hide_every_secret(monkeypatch, name):
    make, exc_type = PYTHON_FAULTS[name]
    public = []
    for n in (N_T, N_T_OTHER):
        plant_count(monkeypatch, n)
        run = R.GTMRun(make_plan(CONFIG), SentinelBits())
        with pytest.raises(exc_type) as info:
            run.step(make())
        assert run.failed
        _assert_hidden([str(info.value), repr(info.value), repr(run)])
        public.append(str(info.value))
    assert public[0] == public[1]


def test_fed_count_refusals_hide_the_counts():
    from gtm_core.exact_sampling import fed_count

    for k, n in ((N_T + 1, N_T), (-K_CONTINUE, N_T), (K_CONTINUE, -N_T), (N_T_OTHER, K_HALT)):
        with pytest.raises(MechanismError) as info:
            fed_count(k, n, phi=0.0, s=1, source=SeededBits(0))
        _assert_hidden([str(info.value), repr(info.value)])


def test_cli_status_of_a_command_fault_hides_every_secret(tmp_path, monkeypatch, caplog, planted):
    """`gtm deploy step` of a command that ends early, then `gtm deploy status` (text and JSON)."""
    caplog.set_level(logging.DEBUG)
    cfg = tmp_path / "c.toml"
    cfg.write_text(CONFIG.to_toml())
    state = str(tmp_path / "s")
    cmd = f"{sys.executable} -c \"for _ in range({K_CONTINUE}): print(1)\""
    runner = CliRunner()
    outputs = []
    for i, args in enumerate([
        ["deploy", "init", state, "--config", str(cfg)],
        ["deploy", "step", state, "--mechanism-cmd", cmd],
        ["deploy", "status", state],
    ]):
        out = tmp_path / f"o{i}.json"
        r = runner.invoke(cli, args + ["--json", str(out)], prog_name="gtm")
        outputs += [r.output, getattr(r, "stderr", "")]
        if out.exists():
            outputs.append(out.read_text())
    with Deployment.open(state) as dep:
        assert dep.failure["kind"] == "mechanism_error"  # the fault really happened
    assert any("failed to print all the outputs" in o for o in outputs)
    outputs += [r.getMessage() for r in caplog.records]
    for text in outputs:
        assert not leaks(text) and not hex_leak(text), (leaks(text), text)
