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
from gtm_core.deployment import Deployment
from gtm_core.errors import EvaluationBudgetExceeded, GTMError, MechanismError
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
    monkeypatch.setattr(R, "SystemBits", SentinelBits)  # the one rng-or-seed rule (randomness)


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


_NOISE = re.compile(r"[0-9a-f]{64}|/[^\s\"',]*|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+\-0-9:Z]*")


def leaks(text: str) -> list[str]:
    """Sentinels found in text, after removing what can contain digits by chance (SHA-256/HMAC
    digests, file paths such as /tmp/pytest-of-root/pytest-199/..., timestamps)."""
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
