"""Example OpenDP measurements for ``gtm opendp audit`` (docs/opendp.md), as zero-argument constructors.

They never enable an OpenDP feature: the caller does (``dp.enable_features(...)`` in Python, or
``gtm opendp audit --enable-feature contrib``). :func:`halved_laplace_count` is broken on purpose
(its privacy map is half its true loss): the audit must flag it.
"""

from __future__ import annotations

from .opendp import opendp_prelude


def randomized_response():
    """Randomized response on one boolean, Pr[truth] = 3/4: epsilon = ln 3 (needs ``"contrib"``)."""
    return opendp_prelude().m.make_randomized_response_bool(0.75)


def _bools():
    dp = opendp_prelude()
    return dp.vector_domain(dp.atom_domain(T=bool)), dp.symmetric_distance()


def laplace_count():
    """The number of records plus discrete Laplace noise of scale 1: epsilon = 1 (needs ``"contrib"``)."""
    dp = opendp_prelude()
    return _bools() >> dp.t.then_count() >> dp.m.then_laplace(1.0)


def gaussian_count():
    """The number of records plus discrete Gaussian noise of scale 1: rho = 1/2 (zCDP; needs ``"contrib"``)."""
    dp = opendp_prelude()
    return _bools() >> dp.t.then_count() >> dp.m.then_gaussian(1.0)


def halved_laplace_count():
    """Broken on purpose: :func:`laplace_count` (true loss 1) declaring epsilon = d_in / 2 (needs
    ``"contrib"`` and ``"honest-but-curious"``, as every user-defined measurement)."""
    dp = opendp_prelude()
    true = laplace_count()
    return dp.m.make_user_measurement(*_bools(), dp.max_divergence(), function=lambda x: true(x),
                                      privacy_map=lambda d_in: 0.5 * d_in, TO=int)
