"""Old path of :mod:`gtm_core.exact.search` (moved in issue 12); re-exports it while audits/ and
old certificates name ``gtm_core.exact_search``. New code imports from :mod:`gtm_core.exact`."""

from .exact.search import PerturbedPlan, SearchResult, exact_loss, perturbed_plan, worst_case_search

__all__ = ["PerturbedPlan", "perturbed_plan", "SearchResult", "worst_case_search", "exact_loss"]
