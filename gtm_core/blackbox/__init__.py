"""The private black-box evaluator (second source paper: private black-box evaluation via down
sensitivity): down-neighbourhoods, CDI, CDI depth, the CH-closed domain extension, the truncated
Laplace and exponential mechanisms, every parameter formula of Algorithms 3 and 4, the reference
evaluator and its exact output law. See docs/blackbox.md.
"""

from .depth import (SubsetImage, cdi_depth_literal, cdi_points, down_neighbourhood, in_cdi, monotone_depths_1d,
                    size_neighbourhood)
from .evaluator import (BlackBoxEvaluator, EvaluatorConfig, PureParameters, cdi_depth_optimiser, check_dataset,
                        point_code, pure_parameters)
from .geometry import extension, in_hull

__all__ = [
    "BlackBoxEvaluator",
    "EvaluatorConfig",
    "PureParameters",
    "SubsetImage",
    "cdi_depth_literal",
    "cdi_depth_optimiser",
    "cdi_points",
    "check_dataset",
    "down_neighbourhood",
    "extension",
    "in_cdi",
    "in_hull",
    "monotone_depths_1d",
    "point_code",
    "pure_parameters",
    "size_neighbourhood",
]
