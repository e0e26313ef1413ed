"""A catalogue of OpenDP constructions users commonly build, and broken ones the audit must flag.

:data:`CATALOGUE` lists the measurements ``benchmarks/bench_opendp_catalogue.py`` audits against
their own privacy maps (:func:`audits.integrations.opendp_audit.audit_measurement`): randomized
response, Laplace / Gaussian / geometric noise on counts and sums, noisy max and top-k under each
output measure OpenDP offers, thresholded histograms, private candidate selection (Liu-Talwar),
a composition and ``make_gtm``. :data:`POWER_COMPANIONS` are user measurements whose declared map
is deliberately smaller than their true loss (scale halved, epsilon / 2 declared, delta declared
too small): each must be flagged.

Every constructor is a zero-argument callable; none enables an OpenDP feature (the caller does:
:data:`FEATURES` lists what the catalogue needs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

from .opendp import opendp_prelude

FEATURES = ("contrib", "honest-but-curious")  # make_user_measurement / new_function need the second


@dataclass(frozen=True)
class CatalogueEntry:
    """One measurement to audit: ``build()`` returns it; ``tight``: its loss attains the claim at
    the searched pairs (the bound should approach the claim); ``pairs`` / ``d_in`` / ``search``:
    passed to the audit (pairs for domains the search does not cover); ``flagged``: a power companion
    (its declared map is smaller than its true loss: the audit must find a violation); ``seconds``: its own
    budget, for measurements too slow for the run's (a GTM run on the step pair: 0.15-0.3 s per draw)."""

    name: str
    family: str
    build: Callable[[], Any]
    note: str = ""
    tight: bool = False
    pairs: tuple = ()
    d_in: Any = 1
    search: bool = True
    flagged: bool = False
    audit_options: dict = field(default_factory=dict)
    seconds: float | None = None  # the entry's own audit budget (None: the run's); a slow measurement's

    def budget(self, seconds: float) -> float:
        """The audit budget of this entry in a run of ``seconds`` per audit."""
        return float(self.seconds) if self.seconds is not None else float(seconds)

    def audit_kwargs(self) -> dict:
        out = {"d_in": self.d_in, "search": self.search, **self.audit_options}
        if self.pairs:
            out["pairs"] = [list(p) for p in self.pairs]
        return out


def _bools():
    dp = opendp_prelude()
    return dp.vector_domain(dp.atom_domain(T=bool)), dp.symmetric_distance()


def _ints():
    dp = opendp_prelude()
    return dp.vector_domain(dp.atom_domain(bounds=(0, 10))), dp.symmetric_distance()


def _floats():
    dp = opendp_prelude()
    return dp.vector_domain(dp.atom_domain(bounds=(0.0, 10.0))), dp.symmetric_distance()


def _strings():
    dp = opendp_prelude()
    return dp.vector_domain(dp.atom_domain(T=str)), dp.symmetric_distance()


def _scores():
    dp = opendp_prelude()
    return dp.vector_domain(dp.atom_domain(T=int), size=3), dp.linf_distance(T=int)


def randomized_response_bool():
    return opendp_prelude().m.make_randomized_response_bool(0.75)


def randomized_response_categorical():
    return opendp_prelude().m.make_randomized_response(["a", "b", "c"], 0.6)


def laplace_count(scale: float = 1.0):
    return _bools() >> opendp_prelude().t.then_count() >> opendp_prelude().m.then_laplace(scale)


def laplace_sum_int():
    dp = opendp_prelude()
    return _ints() >> dp.t.then_sum() >> dp.m.then_laplace(10.0)


def laplace_sum_float():
    dp = opendp_prelude()
    return _floats() >> dp.t.then_sum() >> dp.m.then_laplace(10.0)


def gaussian_count():
    dp = opendp_prelude()
    return _bools() >> dp.t.then_count() >> dp.m.then_gaussian(1.0)


def gaussian_sum_int():
    """Integers in [0, 10] summed, discrete Gaussian noise of scale 10 (zCDP: rho = (10 / 10)^2 / 2 = 1/2)."""
    dp = opendp_prelude()
    return _ints() >> dp.t.then_sum() >> dp.m.then_gaussian(10.0)


ALP_KEYS = ("a", "b", "unique")  # the keys of the searched string datasets (audits.integrations.opendp_neighbours)


def alp_queryable():
    """``make_alp_queryable`` (Aumuller-Lebeda-Pagh sparse vector, scale 1, total_limit 20, value_limit 10) on
    the counts of a vector of strings, released as its answers to the fixed keys :data:`ALP_KEYS`: the
    measurement returns a ``Queryable`` (key -> estimate), which the audit cannot sample as such; asking it a
    fixed, data-independent list of keys is post-processing, so the released tuple keeps the map's claim.
    Its estimates are few distinct floats (multiples of alpha / scale = 4 in a 300-draw pilot), coded by the
    audit like any float output."""
    dp = opendp_prelude()
    alp = _strings() >> dp.t.then_count_by() >> dp.m.then_alp_queryable(1.0, total_limit=20, value_limit=10)

    def answers(x):
        q = alp(x)
        return tuple(float(q(k)) for k in ALP_KEYS)

    return dp.m.make_user_measurement(*_strings(), alp.output_measure, function=answers, privacy_map=alp.map)


def gaussian_sum_float():
    dp = opendp_prelude()
    return _floats() >> dp.t.then_sum() >> dp.m.then_gaussian(10.0)


def geometric_count():
    dp = opendp_prelude()
    return _bools() >> dp.t.then_count() >> dp.m.then_geometric(1.0, bounds=(0, 30))


def noisy_max(measure: str):
    dp = opendp_prelude()
    mo = dp.max_divergence() if measure == "pure" else dp.zero_concentrated_divergence()
    return _scores() >> dp.m.then_noisy_max(mo, 2.0)


def noisy_top_k(measure: str):
    dp = opendp_prelude()
    mo = dp.max_divergence() if measure == "pure" else dp.zero_concentrated_divergence()
    return _scores() >> dp.m.then_noisy_top_k(mo, 2, 2.0)


def report_noisy_max_gumbel():
    dp = opendp_prelude()
    return _scores() >> dp.m.then_report_noisy_max_gumbel(2.0)


def count_by_laplace_threshold(threshold: int = 3):
    dp = opendp_prelude()
    return _strings() >> dp.t.then_count_by() >> dp.m.then_laplace_threshold(1.0, threshold=threshold)


def count_by_noise_threshold():
    dp = opendp_prelude()
    return _strings() >> dp.t.then_count_by() >> dp.m.then_noise_threshold(
        dp.approximate(dp.max_divergence()), 1.0, threshold=3)


def gaussian_threshold():
    """``make_gaussian_threshold`` needs an L02Inf input metric; OpenDP 0.16's ``make_count_by`` gives
    L01Inf, so it is built on a map of counts directly (audited on given pairs, ``d_in = (1, 1, 1)``)."""
    dp = opendp_prelude()
    counts = dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T=int))
    return dp.m.make_gaussian_threshold(counts, dp.l02inf_distance(dp.absolute_distance(T=int)), 1.0, threshold=3)


def private_candidate_scorer():
    """A float count plus Laplace(1) noise released as (score, candidate): 1-DP."""
    dp = opendp_prelude()
    base = _bools() >> dp.t.then_count(TO=float) >> dp.m.then_laplace(1.0)
    return base >> dp.new_function(lambda s: (s, "candidate"), TO="(f64, ExtrinsicObject)")


def select_private_candidate():
    """Liu-Talwar private selection (geometric stopping 0.3, known threshold 2) of
    :func:`private_candidate_scorer`: claimed 2 epsilon = 2."""
    return opendp_prelude().c.make_select_private_candidate(private_candidate_scorer(), stop_probability=0.3,
                                                          threshold=2.0)


def composition():
    dp = opendp_prelude()
    return dp.c.make_composition([_bools() >> dp.t.then_count() >> dp.m.then_laplace(2.0),
                                  _bools() >> dp.t.then_count() >> dp.m.then_laplace(2.0)])


def gtm_halting_index():
    """``make_gtm`` (exact_noise, eps = 2, eps_t = 0.2, horizon 2) released as its halting index on a
    fixed stream of two eps_t = 0.2 randomized responses (the second negated), with the GTM's map."""
    from gtm_core import GTMConfig

    from .opendp_gtm import halting_index, make_gtm

    dp = opendp_prelude()
    space = dp.atom_domain(T=bool), dp.discrete_distance()
    e = 0.2
    rr = dp.m.make_randomized_response_bool(math.exp(e) / (1 + math.exp(e)))
    cfg = GTMConfig.from_dict({"gtm": {"epsilon": 2.0, "theta": 1.0, "gamma": 2.0, "beta": 0.3,
                                       "parameterization": "exact_noise"},
                               "stream": {"p_star": 0.5, "horizon": 2, "eps_t": rr.map(1)}})
    gtm = make_gtm(cfg, *space)
    queries = [rr, rr >> dp.new_function(lambda b: not b, TO=bool)]
    return dp.m.make_user_measurement(*space, gtm.output_measure,
                                      function=lambda x: halting_index(gtm(x), queries), privacy_map=gtm.map)


STEP_PAIR_EPS_T = 0.2
STEP_PAIR_P = 0.2  # the queries' Pr[True] on the dataset True, at both steps


def step_pair_config():
    """The GTM of the step-noise pair (:func:`gtm_step_pair`): theorem21, eps = 2, eps_t = 0.2, horizon 2
    (gamma 2, beta 0.3: c_t = 68 and 98, a few hundred evaluations per step)."""
    from gtm_core import GTMConfig

    return GTMConfig.from_dict({"gtm": {"epsilon": 2.0, "theta": 1.0, "gamma": 2.0, "beta": 0.3,
                                        "parameterization": "theorem21"},
                                "stream": {"p_star": 0.5, "horizon": 2, "eps_t": STEP_PAIR_EPS_T}})


def step_pair_queries():
    """Two honest eps_t = 0.2 boolean queries on one bool: Pr[True] is 0.2 on the dataset True at both steps;
    on False it is 0.2 e^(0.2) at step 1 and 0.2 e^(-0.2) at step 2 (each a hair inside, so the loss never
    exceeds the declared 0.2 by rounding). The stream pair that shows step noise is needed: with it the
    GTM's loss on it is 1.87 <= 2 (halting at step 2); without it 5.4 (audits.power.distribution)."""
    import random

    dp = opendp_prelude()
    space = dp.atom_domain(T=bool), dp.discrete_distance()
    draw = random.SystemRandom()
    p, shrink = STEP_PAIR_P, 1 - 1e-9
    out = []
    for p_false in (p * math.exp(STEP_PAIR_EPS_T) * shrink, p * math.exp(-STEP_PAIR_EPS_T) / shrink):
        out.append(dp.m.make_user_measurement(
            *space, dp.max_divergence(), function=lambda x, q=p_false: draw.random() < (p if x else q),
            privacy_map=lambda d: STEP_PAIR_EPS_T * d, TO=bool))
    return out


def gtm_released(gtm, queries):
    """``gtm`` released as its halting index on ``queries`` (a non-interactive measurement, the GTM's map)."""
    from .opendp_gtm import halting_index

    dp = opendp_prelude()
    return dp.m.make_user_measurement(gtm.input_domain, gtm.input_metric, gtm.output_measure,
                                      function=lambda x: halting_index(gtm(x), queries), privacy_map=gtm.map)


def gtm_step_pair(new_run=None):
    """``make_gtm`` (:func:`step_pair_config`) released as its halting index on :func:`step_pair_queries`;
    ``new_run`` is passed to ``make_gtm`` (None: the deployment's GTMRun)."""

    from .opendp_gtm import make_gtm

    dp = opendp_prelude()
    gtm = make_gtm(step_pair_config(), dp.atom_domain(T=bool), dp.discrete_distance(), new_run=new_run)
    return gtm_released(gtm, step_pair_queries())


GTM_STEP_PAIR_SECONDS = 240.0  # a GTM run on the step pair takes 0.15-0.3 s here: 60 s gives ~85 runs per input
STEP_NOISE_FACTOR = 1e-9  # the broken run's eta_2,t ~ Exp(1e-9 tau_2): below 1e-7 except with probability e^-60


def without_step_noise(plan):
    """``plan`` with every step's tau_2 multiplied by :data:`STEP_NOISE_FACTOR`: the per-step noise omitted in
    effect (the exact sampler needs tau_2 > 0 when eps_t > 0). Broken on purpose, for the power companion
    :func:`gtm_no_step_noise` only; the GTM's claim and query checks keep the real plan."""
    import dataclasses

    from gtm_core.planners import Plan

    class NoStepNoisePlan(Plan):
        def step(self, t):
            sp = super().step(t)
            return dataclasses.replace(sp, tau2=sp.tau2 * STEP_NOISE_FACTOR)

    return NoStepNoisePlan(**{f.name: getattr(plan, f.name) for f in dataclasses.fields(plan)})


def gtm_no_step_noise():
    """Broken on purpose: the same ``make_gtm`` (same map, same plan check) whose run omits the per-step noise
    eta_2,t (``new_run``: a :class:`gtm_core.reference.GTMRun` on :func:`without_step_noise`): its loss on the
    step pair is 5.4 against the claimed 2."""
    from gtm_core.reference import GTMRun

    return gtm_step_pair(new_run=lambda plan: GTMRun(without_step_noise(plan)))


# --- power companions: declared maps smaller than the true loss -----------------------------------


def laplace_count_scale_halved():
    """Broken on purpose: runs Laplace scale 1/2 (true loss 2), declares the map of scale 1 (1)."""
    dp = opendp_prelude()
    true, declared = laplace_count(0.5), laplace_count(1.0)
    return dp.m.make_user_measurement(*_bools(), dp.max_divergence(), function=lambda x: true(x),
                                      privacy_map=declared.map, TO=int)


def laplace_count_half_epsilon():
    """Broken on purpose: Laplace scale 1 (true loss 1) declaring epsilon / 2."""
    dp = opendp_prelude()
    true = laplace_count(1.0)
    return dp.m.make_user_measurement(*_bools(), dp.max_divergence(), function=lambda x: true(x),
                                      privacy_map=lambda d: 0.5 * true.map(d), TO=int)


def laplace_threshold_new_key_delta(scale: float, threshold: int, d_in: int = 1) -> float:
    """Pr[d_in + Z >= threshold] for discrete Laplace noise Z (Pr[Z = z] ~ t^|z|, t = e^(-1/scale),
    Pr[Z >= k] = t^k / (1 + t), k >= 1): the probability that a key of count d_in, absent from the
    neighbour, is released - the delta of the thresholded release (OpenDP 0.16's map reports
    Pr[Z >= threshold], one atom less: benchmarks/results/opendp_threshold_delta_reproducer.py)."""
    t = math.exp(-1.0 / scale)
    k = threshold - d_in
    return 1.0 if k <= 0 else t**k / (1 + t)


def _threshold_declaring(delta_factor: float):
    dp = opendp_prelude()
    true = count_by_laplace_threshold(3)

    def declared(d):
        eps, _ = true.map(d)
        return eps, delta_factor * laplace_threshold_new_key_delta(1.0, 3, int(d))

    return dp.m.make_user_measurement(*_strings(), dp.approximate(dp.max_divergence()), function=lambda x: true(x),
                                      privacy_map=declared)


def threshold_corrected_delta():
    """OpenDP's Laplace-thresholded histogram (scale 1, threshold 3) with the delta of its exact law
    (:func:`laplace_threshold_new_key_delta`) declared instead of OpenDP's: a control, not flagged."""
    return _threshold_declaring(1.0)


def threshold_delta_too_small():
    """Broken on purpose: the Laplace-thresholded histogram (threshold 3) declaring its exact delta / 20."""
    return _threshold_declaring(1 / 20)


_GIVEN_COUNT_PAIRS = (({"a": 20}, {"a": 20, "u": 1}), ({"a": 20, "b": 2}, {"a": 20, "b": 3}), ({}, {"u": 1}))

CATALOGUE: tuple[CatalogueEntry, ...] = (
    CatalogueEntry("randomized_response_bool", "randomized response", randomized_response_bool,
                   "make_randomized_response_bool(0.75): eps = ln 3", tight=True),
    CatalogueEntry("randomized_response_categorical", "randomized response", randomized_response_categorical,
                   "make_randomized_response(['a','b','c'], 0.6): eps = ln 3", tight=True),
    CatalogueEntry("laplace_count_int", "laplace", laplace_count,
                   "bools >> count >> laplace(1) (integer: discrete Laplace)", tight=True),
    CatalogueEntry("laplace_sum_int", "laplace", laplace_sum_int, "ints in [0,10] >> sum >> laplace(10)"),
    CatalogueEntry("laplace_sum_float", "laplace", laplace_sum_float, "floats in [0,10] >> sum >> laplace(10)"),
    CatalogueEntry("gaussian_count_int", "gaussian", gaussian_count,
                   "bools >> count >> gaussian(1): rho = 1/2 (discrete Gaussian)"),
    CatalogueEntry("gaussian_sum_int", "gaussian", gaussian_sum_int,
                   "ints in [0,10] >> sum >> gaussian(10): rho = 1/2 (discrete Gaussian)"),
    CatalogueEntry("gaussian_sum_float", "gaussian", gaussian_sum_float, "floats in [0,10] >> sum >> gaussian(10)"),
    CatalogueEntry("geometric_count", "geometric", geometric_count,
                   "bools >> count >> geometric(1, bounds=(0, 30))"),
    CatalogueEntry("noisy_max_pure", "noisy max", lambda: noisy_max("pure"),
                   "3 scores (LInf) >> noisy_max(MaxDivergence, scale 2)"),
    CatalogueEntry("noisy_max_zcdp", "noisy max", lambda: noisy_max("zcdp"),
                   "3 scores (LInf) >> noisy_max(ZeroConcentratedDivergence, scale 2)"),
    CatalogueEntry("noisy_top_k_pure", "noisy top-k", lambda: noisy_top_k("pure"),
                   "3 scores (LInf) >> noisy_top_k(MaxDivergence, k=2, scale 2)"),
    CatalogueEntry("noisy_top_k_zcdp", "noisy top-k", lambda: noisy_top_k("zcdp"),
                   "3 scores (LInf) >> noisy_top_k(ZeroConcentratedDivergence, k=2, scale 2)"),
    CatalogueEntry("report_noisy_max_gumbel", "noisy max", report_noisy_max_gumbel,
                   "3 scores (LInf) >> report_noisy_max_gumbel(scale 2)"),
    CatalogueEntry("count_by_laplace_threshold", "thresholded histogram", count_by_laplace_threshold,
                   "strings >> count_by >> laplace_threshold(1, threshold=3)"),
    CatalogueEntry("count_by_noise_threshold", "thresholded histogram", count_by_noise_threshold,
                   "strings >> count_by >> noise_threshold(Approximate(MaxDivergence), 1, threshold=3)"),
    CatalogueEntry("count_by_laplace_threshold_exact_delta", "thresholded histogram", threshold_corrected_delta,
                   "the same release declaring the delta of its exact law, Pr[Z >= threshold - 1] (a control)"),
    CatalogueEntry("gaussian_threshold", "thresholded histogram", gaussian_threshold,
                   "map of counts (L02Inf) >> gaussian_threshold(1, threshold=3); given pairs",
                   pairs=_GIVEN_COUNT_PAIRS, d_in=(1, 1, 1), search=False),
    CatalogueEntry("alp_queryable", "sparse vector", alp_queryable,
                   "strings >> count_by >> alp_queryable(scale 1, total_limit 20, value_limit 10), answers to keys "
                   "a, b, unique"),
    CatalogueEntry("select_private_candidate", "private selection", select_private_candidate,
                   "make_select_private_candidate(count + Laplace(1) as (score, candidate), stop 0.3, threshold 2)"),
    CatalogueEntry("composition", "composition", composition, "make_composition([count >> laplace(2)] x 2)"),
    CatalogueEntry("make_gtm", "gtm", gtm_halting_index,
                   "make_gtm (exact_noise, eps 2, eps_t 0.2, horizon 2), its halting index on a fixed query stream"),
    CatalogueEntry("make_gtm_step_pair", "gtm", gtm_step_pair,
                   "make_gtm (theorem21, eps 2, eps_t 0.2, horizon 2), halting index on the step-noise stream pair "
                   "(true loss 1.87); 240 s", seconds=GTM_STEP_PAIR_SECONDS),
)

POWER_COMPANIONS: tuple[CatalogueEntry, ...] = (
    CatalogueEntry("laplace_count_scale_halved", "power companion", laplace_count_scale_halved,
                   "runs Laplace scale 1/2 (loss 2), declares scale 1's map (1)", flagged=True),
    CatalogueEntry("laplace_count_half_epsilon", "power companion", laplace_count_half_epsilon,
                   "Laplace scale 1 (loss 1) declaring eps / 2", flagged=True),
    CatalogueEntry("threshold_delta_too_small", "power companion", threshold_delta_too_small,
                   "Laplace-thresholded histogram declaring its exact delta / 20", flagged=True),
    CatalogueEntry("make_gtm_no_step_noise", "power companion", gtm_no_step_noise,
                   "make_gtm_step_pair with the per-step noise omitted in its run (loss 5.4, claims 2); 240 s",
                   flagged=True, seconds=GTM_STEP_PAIR_SECONDS),
)


def entry(name: str) -> CatalogueEntry:
    """The catalogue entry or power companion called ``name``."""
    for e in CATALOGUE + POWER_COMPANIONS:
        if e.name == name:
            return e
    from gtm_core.errors import InvalidParameter

    raise InvalidParameter(f"name must be a catalogue entry, got {name!r}")
