"""Finite output codes of OpenDP measurements, fitted on pilot outputs."""

import pytest

from audits.integrations.opendp_coding import Bins, OutputCoder
from gtm_core.errors import UnsupportedConfiguration


def test_output_codes():
    assert OutputCoder.fit([True, False]).code(True) == "True"
    ints = OutputCoder.fit([3, 4, 5, 4])
    assert [ints.code(v) for v in (2, 3, 4, 5, 9)] == ["b0", "b0", "b1", "b2", "b2"] and ints.ordered == 3
    floats = OutputCoder.fit([float(i) for i in range(1000)], bins=4)
    assert len(floats.bins.edges) == 3 and floats.code(-5.0) == "b0" and floats.code(1e9) == "b3"
    released = OutputCoder.fit([{"a": 1.0, "b": 2.0}, {"a": 3.0}, {"a": 2.0, "z": 9.0}])
    assert released.code({"z": 9.0, "a": 1.0}).startswith("{a:") and ",z:" in released.code({"z": 9.0, "a": 1.0})
    pairs = OutputCoder.fit([(1, "x"), (2, "y")])
    assert pairs.code((1, "x")) == "(b0,x)"
    assert Bins(()).code(float("nan")) == "nan"
    optional = OutputCoder.fit([None, (2.5, "c"), None, (7.0, "c")])  # private selection: nothing or a candidate
    assert optional.shape == "optional" and optional.code(None) == "None" and optional.code((7.0, "c")).endswith(",c)")
    with pytest.raises(UnsupportedConfiguration, match="finitely"):
        OutputCoder.fit([object()])
