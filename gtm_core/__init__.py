"""gtm_core: the paper's objects - formulas, configurations, planners, the reference
GTM (Algorithm 1), purification, the vectorised simulator and the exact engine."""

from .config import GTMConfig, GTMParameters, StepSpec, StreamParameters
from .errors import GTMError
from .planners import Plan, StepPlan, make_plan

__version__ = "0.1.0"

__all__ = [
    "GTMConfig",
    "GTMParameters",
    "StreamParameters",
    "StepSpec",
    "GTMError",
    "Plan",
    "StepPlan",
    "make_plan",
    "__version__",
]
