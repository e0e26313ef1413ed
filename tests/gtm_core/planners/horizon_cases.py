"""The fixed horizon design the horizon tests share (an *input*: the numbers `gtm tune` chose for the
median cell eps=1, eps_t=0.1, p*=0.5, T=100, beta=0.05 at theorem21's claimed p_bar); every bound is
recomputed by the tests."""

from gtm_core.planners.horizon_problem import HorizonDesign, HorizonProblem

MEDIAN = HorizonProblem(epsilon=1.0, eps_t=0.1, p_star=0.5, T=100, beta=0.05)
DESIGN = HorizonDesign(s=1, c=2, rho=13.20575428, p_bar=0.00142931, theta=1.5341191128167415)
