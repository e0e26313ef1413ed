"""An analyst's function to wrap privately: the 20%-trimmed mean of scores, rounded to {0,...,4}.

Symmetric and non-decreasing in every record, so `--depth-method monotone` computes its exact CDI
depth for any dataset size. (Any callable on a list of records works; without that property the
evaluator enumerates sub-datasets, n <= 16.)
"""


def trimmed_mean(records):
    if not records:
        return 0
    xs = sorted(records)
    cut = len(xs) // 5
    core = xs[cut:len(xs) - cut] or xs
    return min(4, max(0, round(sum(core) / len(core))))
