"""The approximate-DP black-box evaluator of the second source paper: GAP-MAX, Algorithm 5 (recursive
one-dimensional quasi-concave optimisation, Theorem G.2), Algorithm 6 (coordinate-wise
high-dimensional QCO, Theorem G.4) and Algorithm 2 (the evaluator, Theorem 2.6), with every constant
the paper leaves open as an explicit parameter (:class:`.params.ApproxConstants`). See docs/blackbox.md.
"""
