"""Bundled and synthetic streams, the file format and the typed errors for bad streams."""

import json

import pytest

from gtm_core.batchtoco.errors import StreamError
from gtm_core.batchtoco.streams import BUNDLED, EdgeStream, bundled_stream, load_stream, synthetic_stream
from gtm_core.errors import ConfigError, GTMError


@pytest.mark.parametrize("name,n,m", [("karate", 34, 78), ("les_miserables", 77, 254),
                                      ("florentine_families", 15, 20), ("davis_southern_women", 32, 89)])
def test_bundled_streams(name, n, m):
    s = bundled_stream(name, seed=3)
    assert (len(s.vertices), len(s)) == (n, m)
    assert s == bundled_stream(name, seed=3)
    assert s.edges != bundled_stream(name, seed=4).edges
    assert name in BUNDLED


def test_synthetic_is_seeded_and_valid():
    a, b = synthetic_stream(20, 500, seed=1), synthetic_stream(20, 500, seed=1)
    assert a == b and len(a) == 500 and a.multigraph
    assert a.edges != synthetic_stream(20, 500, seed=2).edges


def test_file_round_trip_and_neighbour(tmp_path):
    s = bundled_stream("florentine_families")
    f = tmp_path / "s.json"
    f.write_text(json.dumps(s.to_dict()))
    t = load_stream(f)
    assert t.edges == s.edges and t.vertices == s.vertices
    nb = t.neighbour(3)
    assert nb.edges[2] is None and nb.edges[:2] == t.edges[:2] and nb.edges[3:] == t.edges[3:]


@pytest.mark.parametrize("doc,match", [
    ({"vertices": ["a", "b"], "edges": []}, "is empty"),
    ({"vertices": ["a", "b"], "edges": [["a", "c"]]}, "unknown vertex 'c'"),
    ({"vertices": ["a", "b", "c"], "edges": [["a", "b"], {"op": "delete", "u": "a", "v": "b"}]}, "not an insertion"),
    ({"vertices": ["a", "b"], "edges": [["a", "b"], ["b", "a"]]}, "inserted twice"),
    ({"vertices": ["a", "b"], "edges": [["a", "a"]]}, "self-loop"),
    ({"vertices": ["a", "b"], "edges": [["a"]]}, "pair"),
    ({"edges": []}, "missing key 'vertices'"),
    ({"vertices": ["a", 1.5], "edges": [["a", "1.5"]]}, r"vertex 1 must be a name \(a string or an integer\), got 1.5"),
    ({"vertices": [True, "b"], "edges": [["True", "b"]]}, "vertex 0 must be a name"),
    ({"vertices": ["a", "b"], "edges": [["a", "b"]], "multigraph": "yes"}, "multigraph must be a bool, got 'yes'"),
])
def test_bad_streams_raise_typed_errors(tmp_path, doc, match):
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(StreamError, match=match) as info:
        load_stream(f)
    assert isinstance(info.value, GTMError)


def test_repeated_interactions_allowed_in_a_multigraph_and_missing_file():
    EdgeStream("m", ("a", "b"), ((0, 1), (1, 0)), multigraph=True)
    with pytest.raises(ConfigError, match="not found"):
        load_stream("/nonexistent/stream.json")


@pytest.mark.parametrize("index", [2, -1, True, 1.0, "1"])
def test_edge_indices_are_integers_of_the_vertex_range(index):
    with pytest.raises(StreamError, match=r"update 1: vertex index must be an integer in \[0, 1\], got "):
        EdgeStream("s", ("a", "b"), ((0, index),))


@pytest.mark.parametrize("name,n", [("bursty", 14), ("periodic", 7), ("contact", 15), ("steady", 14)])
def test_densest_streams_are_small_seeded_and_valid(name, n):
    from gtm_core.batchtoco.densest import DENSEST_MAX_VERTICES
    from gtm_core.batchtoco.streams import densest_stream

    s = densest_stream(name, 1000, 3)  # periodic: one hub per 1500 updates (7 members + 0 or 1 hub here)
    assert len(s) == 1000 and len(s.vertices) == n <= DENSEST_MAX_VERTICES and s.multigraph
    assert s.edges == densest_stream(name, 1000, 3).edges
    assert s.edges != densest_stream(name, 1000, 4).edges


def test_unknown_densest_stream_is_refused():
    from gtm_core.batchtoco.streams import densest_stream

    with pytest.raises(StreamError, match="densest stream"):
        densest_stream("karate", 10)


def test_graph_derived_streams_do_not_depend_on_the_hash_seed():
    """The contact streams come from graphs with string vertex names, whose set order depends on
    PYTHONHASHSEED: the streams are built in a canonical order, so they depend on their seed only."""
    import os
    import subprocess
    import sys

    code = ("from gtm_core.batchtoco.streams import contact_stream, densest_stream; "
            "print(hash((contact_stream(500, 1).edges, densest_stream('contact', 500, 1).edges)))")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": h}).stdout for h in ("1", "2", "3")}
    assert len(outs) == 1
