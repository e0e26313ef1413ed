"""Old path of :mod:`gtm_core.planners.exact_noise` (moved in issue 12); re-exports it while
audits/ and old certificates name ``gtm_core.exact_noise_calibration``."""

from .planners.exact_noise import calibrate, certify_step, exact_noise_step, step_certificate, step_probabilities_float

__all__ = ["step_probabilities_float", "certify_step", "calibrate", "exact_noise_step", "step_certificate"]
