"""BatchToCO (Section 7, Algorithm 3): a batch DP maximiser run under continual observation,
with GTM (Corollary 35) deciding when to recompute and ThresholdSelect (Algorithm 2) choosing
the new solution. Modules: ``params`` (Section 7.3's formulas and the ``[co]`` configuration),
``problems`` / ``streams`` (Section 8's problems on edge streams), ``mechanisms``
(Definition 36), ``threshold_select`` (Algorithm 2), ``gtm_instance`` (Corollary 35),
``driver`` (Algorithm 3), ``baselines``, ``witness`` (exact output laws on tiny streams)."""

from .driver import BatchToCO, StepRecord, run_stream
from .params import COConfig

__all__ = ["BatchToCO", "COConfig", "StepRecord", "run_stream"]
