"""Old path of :mod:`gtm_core.planners.exact_tails` (moved in issue 12); re-exports it while
audits/ and old certificates name ``gtm_core.exact_calibration``."""

from .planners.exact_tails import (
    certify_tails,
    exact_step,
    exact_threshold,
    expected_evaluations,
    lambda_exact_left,
    lambda_exact_right,
    step_certificate,
)

__all__ = ["lambda_exact_left", "lambda_exact_right", "exact_threshold", "certify_tails", "exact_step",
           "expected_evaluations", "step_certificate"]
