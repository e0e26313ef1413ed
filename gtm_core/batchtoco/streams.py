"""Insertion-only edge streams: real graphs bundled with networkx, a seeded synthetic
generator, a JSON file format, validation and the neighbouring stream.

File format (JSON)::

    {"name": "karate", "vertices": ["0", "1", ...], "multigraph": false,
     "edges": [["0", "1"], ["4", "10"], ...]}

An update may also be written ``{"op": "insert", "u": "0", "v": "1"}``; any other
``op`` (a deletion) is refused: the stream must be insertion-only (Section 7.1).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import ConfigError
from ..inputs import parse_json, read_text_file
from ..validation import check_bool, check_int, check_nonnegative_int, check_positive_int, is_integer
from .errors import StreamError

BUNDLED = ("karate", "les_miserables", "florentine_families", "davis_southern_women")


@dataclass(frozen=True)
class EdgeStream:
    """An insertion stream over a fixed vertex set; ``edges[t-1]`` is inserted at time t
    (``None`` = an empty update, used by the neighbouring stream)."""

    name: str
    vertices: tuple[str, ...]
    edges: tuple
    multigraph: bool = False

    def __post_init__(self):
        validate(self)

    def __len__(self) -> int:
        return len(self.edges)

    def neighbour(self, index: int) -> "EdgeStream":
        """The neighbouring stream with the edge inserted at time ``index`` (1-based) absent."""
        i = check_positive_int("index", index)
        if i > len(self.edges):
            raise StreamError(f"index must be in 1..{len(self.edges)}, got {index!r}")
        edges = list(self.edges)
        edges[i - 1] = None
        return EdgeStream(f"{self.name}-without-{i}", self.vertices, tuple(edges), self.multigraph)

    def to_dict(self) -> dict:
        names = self.vertices
        return {"name": self.name, "vertices": list(names), "multigraph": self.multigraph,
                "edges": [None if e is None else [names[e[0]], names[e[1]]] for e in self.edges]}


def validate(stream: EdgeStream) -> None:
    """Typed errors for an empty stream, unknown vertices, self-loops, and (simple graphs)
    an edge inserted twice."""
    n = len(stream.vertices)
    if n < 2:
        raise StreamError(f"a stream needs at least 2 vertices, got {n}")
    if len(set(stream.vertices)) != n:
        raise StreamError("vertex names must be distinct")
    if len(stream.edges) == 0:
        raise StreamError(f"stream {stream.name!r} is empty (no updates)")
    seen = set()
    for t, e in enumerate(stream.edges, start=1):
        if e is None:
            continue
        u, v = e
        for x in (u, v):
            check_int(f"update {t}: vertex index", x, minimum=0, maximum=n - 1, error=StreamError)
        if u == v:
            raise StreamError(f"update {t}: self-loop at vertex {stream.vertices[u]!r}")
        key = (min(u, v), max(u, v))
        if not stream.multigraph:
            if key in seen:
                raise StreamError(f"update {t}: edge {stream.vertices[u]!r}-{stream.vertices[v]!r} inserted twice "
                                  "(set multigraph = true for repeated interactions)")
            seen.add(key)


def _from_graph(name: str, graph, seed: int) -> EdgeStream:
    names = [str(v) for v in graph.nodes()]
    index = {v: i for i, v in enumerate(graph.nodes())}
    edges = [(index[u], index[v]) for u, v in graph.edges() if u != v]
    order = np.random.default_rng(check_nonnegative_int("seed", seed)).permutation(len(edges))
    return EdgeStream(name, tuple(names), tuple(edges[i] for i in order))


def bundled_stream(name: str, seed: int = 0) -> EdgeStream:
    """A real social network shipped with networkx, edges inserted in a seeded random order."""
    import networkx as nx

    graphs = {
        "karate": nx.karate_club_graph,
        "les_miserables": nx.les_miserables_graph,
        "florentine_families": nx.florentine_families_graph,
        "davis_southern_women": nx.davis_southern_women_graph,
    }
    if name not in graphs:
        raise StreamError(f"unknown bundled stream {name!r} (known: {', '.join(BUNDLED)})")
    return _from_graph(name, graphs[name](), seed)


def synthetic_stream(n_vertices: int, n_updates: int, seed: int = 0, *, skew: float = 0.8) -> EdgeStream:
    """A seeded interaction stream (multigraph): each update joins two distinct vertices drawn
    with probability ~ 1/(rank+1)^skew (a heavy-tailed activity profile)."""
    n = check_positive_int("n_vertices", n_vertices)
    m = check_positive_int("n_updates", n_updates)
    rng = np.random.default_rng(check_nonnegative_int("seed", seed))
    w = 1.0 / np.arange(1, n + 1) ** skew
    w /= w.sum()
    u = rng.choice(n, size=m, p=w)
    v = rng.choice(n, size=m, p=w)
    clash = u == v
    while clash.any():
        v[clash] = rng.choice(n, size=int(clash.sum()), p=w)
        clash = u == v
    edges = tuple(zip(u.tolist(), v.tolist()))
    return EdgeStream(f"synthetic-n{n}-m{m}-s{seed}", tuple(str(i) for i in range(n)), edges, True)


def load_stream(path) -> EdgeStream:
    """Read a stream file (format in the module docstring); typed errors on bad content."""
    text = read_text_file(path, what="stream", error=ConfigError)
    p = Path(path)
    data = parse_json(text, what=f"stream file {str(p)!r}", error=StreamError)
    return stream_from_dict(data, default_name=p.stem)


def _vertex_name(i: int, v) -> str:
    """A vertex name as given in a stream file: a string, or an integer (written in decimal)."""
    if isinstance(v, str):
        return v
    if not is_integer(v):
        raise StreamError(f"vertex {i} must be a name (a string or an integer), got {v!r:.60}")
    return str(int(v))


def stream_from_dict(data, *, default_name: str = "stream") -> EdgeStream:
    if not isinstance(data, dict):
        raise StreamError("a stream must be a JSON object with 'vertices' and 'edges'")
    for key in ("vertices", "edges"):
        if key not in data:
            raise StreamError(f"stream is missing key {key!r}")
    vertices = data["vertices"]
    if not isinstance(vertices, list):
        raise StreamError("'vertices' must be a list of names")
    names = tuple(_vertex_name(i, v) for i, v in enumerate(vertices))
    index = {v: i for i, v in enumerate(names)}
    edges = []
    if not isinstance(data["edges"], list):
        raise StreamError("'edges' must be a list")
    for t, e in enumerate(data["edges"], start=1):
        if isinstance(e, dict):
            op = e.get("op", "insert")
            if op != "insert":
                raise StreamError(f"update {t}: op {op!r} is not an insertion (streams must be insertion-only)")
            e = [e.get("u"), e.get("v")]
        if not isinstance(e, list) or len(e) != 2:
            raise StreamError(f"update {t}: an edge must be a pair [u, v], got {e!r}")
        ids = []
        for x in e:
            if str(x) not in index:
                raise StreamError(f"update {t}: unknown vertex {x!r}")
            ids.append(index[str(x)])
        edges.append(tuple(ids))
    multigraph = check_bool("multigraph", data.get("multigraph", False), error=StreamError)
    return EdgeStream(str(data.get("name", default_name)), names, tuple(edges), multigraph)


# ---------------------------------------------------------------------------
# streams where adaptivity matters: OPT flat for long stretches, then jumping
# ---------------------------------------------------------------------------

ADAPTIVE = ("bursty", "periodic", "contact")


def _hub_stream(name: str, n_members: int, T: int, starts, sizes, rng, *, background_pairs=True) -> EdgeStream:
    """Hubs 0..H-1 and members H..H+n_members-1. Burst i occupies updates starts[i] .. starts[i]+sizes[i]-1
    (hub i linked to uniformly drawn members); every other update joins two distinct uniformly drawn members
    (background: spread thin, it never changes which 2 hubs are best once a hub has a few dozen edges)."""
    H = len(sizes)
    owner = np.full(T, -1, dtype=np.int64)
    for i, (s, z) in enumerate(zip(starts, sizes)):
        owner[s:s + z] = i
    members = rng.integers(H, H + n_members, size=(T, 2))
    clash = members[:, 0] == members[:, 1]
    members[clash, 1] = H + (members[clash, 0] - H + 1) % n_members
    edges = []
    for t in range(T):
        if owner[t] >= 0:
            edges.append((int(owner[t]), int(members[t, 0])))
        else:
            edges.append((int(members[t, 0]), int(members[t, 1])))
    names = tuple([f"hub{i}" for i in range(H)] + [f"m{j}" for j in range(n_members)])
    return EdgeStream(name, names, tuple(edges), True)


def bursty_stream(n_updates: int, seed: int = 0, *, bursts: int = 6, burst_fraction: float = 0.6,
                  growth: float = 1.6, n_members: int = 100) -> EdgeStream:
    """OPT flat for long stretches, then jumping: ``bursts`` communities arrive at once, each a hub that
    receives a contiguous block of edges (sizes growing by ``growth``, together ``burst_fraction`` of the
    updates); the block starts are uniform random non-overlapping positions (seeded rule, fixed in
    advance: ``numpy.random.default_rng(seed)``); all other updates are background edges among members."""
    T = check_positive_int("n_updates", n_updates)
    rng = np.random.default_rng(check_nonnegative_int("seed", seed))
    w = growth ** np.arange(bursts)
    sizes = np.maximum(1, np.floor(burst_fraction * T * w / w.sum()).astype(int))
    gaps = rng.dirichlet(np.ones(bursts + 1)) * (T - int(sizes.sum()))
    gaps = np.floor(gaps).astype(int)
    starts, pos = [], 0
    for i in range(bursts):
        pos += int(gaps[i])
        starts.append(pos)
        pos += int(sizes[i])
    return _hub_stream(f"bursty-m{T}-s{seed}", n_members, T, starts, sizes.tolist(), rng)


def periodic_stream(n_updates: int, seed: int = 0, *, period: int = 1500, burst: int = 600,
                    n_members: int = 100) -> EdgeStream:
    """OPT growing on a slow schedule unrelated to powers of two: every ``period`` updates (the phase
    drawn uniformly in [0, period) from the seed) a new hub arrives with a block of ``burst`` + 60 i
    edges (each new hub beats the previous ones), background edges in between."""
    T = check_positive_int("n_updates", n_updates)
    rng = np.random.default_rng(check_nonnegative_int("seed", seed))
    phase = int(rng.integers(0, period))
    starts, sizes, i = [], [], 0
    while phase + i * period < T:
        s = phase + i * period
        starts.append(s)
        sizes.append(min(burst + 60 * i, T - s, period))
        i += 1
    return _hub_stream(f"periodic-m{T}-s{seed}", n_members, T, starts, sizes, rng)


def contact_stream(n_updates: int, seed: int = 0) -> EdgeStream:
    """A contact-like temporal stream generated from a real graph networkx ships (Les Miserables, the
    co-appearance counts as weights), documented rule: the graph's communities
    (``networkx.community.greedy_modularity_communities``, weighted) become active one after another in a
    seeded random order, each for an equal share of the updates (a storyline's chapters); each update is
    an interaction drawn from the active community's internal edges with probability proportional to the
    co-appearance weight (a multigraph: repeated contacts)."""
    import networkx as nx

    T = check_positive_int("n_updates", n_updates)
    rng = np.random.default_rng(check_nonnegative_int("seed", seed))
    g = nx.les_miserables_graph()
    nodes = sorted(g.nodes())
    index = {v: i for i, v in enumerate(nodes)}
    # canonical order (sorted members, sorted edges): set iteration order of string names depends on the
    # process's hash seed, and the stream must depend on ``seed`` only
    comms = sorted(sorted(c) for c in nx.community.greedy_modularity_communities(g, weight="weight") if len(c) >= 2)
    comms = [comms[i] for i in rng.permutation(len(comms))]
    blocks = []
    for c in comms:
        sub = sorted((min(index[u], index[v]), max(index[u], index[v]), float(d.get("weight", 1.0)))
                     for u, v, d in g.subgraph(c).edges(data=True))
        if sub:
            blocks.append(sub)
    per = T // len(blocks)
    edges = []
    for b, sub in enumerate(blocks):
        n = per if b < len(blocks) - 1 else T - per * (len(blocks) - 1)
        w = np.array([x[2] for x in sub])
        pick = rng.choice(len(sub), size=n, p=w / w.sum())
        edges.extend((sub[i][0], sub[i][1]) for i in pick)
    return EdgeStream(f"contact-lesmis-m{T}-s{seed}", tuple(str(v) for v in nodes), tuple(edges), True)


def adaptive_stream(name: str, n_updates: int, seed: int = 0) -> EdgeStream:
    """One of :data:`ADAPTIVE` by name."""
    if name == "bursty":
        return bursty_stream(n_updates, seed)
    if name == "periodic":
        return periodic_stream(n_updates, seed)
    if name == "contact":
        return contact_stream(n_updates, seed)
    raise StreamError(f"unknown adaptive stream {name!r} (known: {', '.join(ADAPTIVE)})")


# ---------------------------------------------------------------------------
# streams for densest subgraph (Section 8.2): the exponential mechanism enumerates all vertex sets, so
# the streams have at most 15 vertices (the same generators, fewer members)
# ---------------------------------------------------------------------------

DENSEST_STREAMS = ("bursty", "periodic", "contact", "steady")


def florentine_contact_stream(n_updates: int, seed: int = 0) -> EdgeStream:
    """:func:`contact_stream`'s rule on the Florentine families marriage graph networkx ships (15 vertices,
    unit weights): its greedy-modularity communities active one after another in a seeded order, each update
    an interaction drawn uniformly from the active community's internal edges (a multigraph)."""
    import networkx as nx

    T = check_positive_int("n_updates", n_updates)
    rng = np.random.default_rng(check_nonnegative_int("seed", seed))
    g = nx.florentine_families_graph()
    nodes = sorted(g.nodes())
    index = {v: i for i, v in enumerate(nodes)}
    # canonical order (sorted members, sorted edges): set iteration order of string names depends on the
    # process's hash seed, and the stream must depend on ``seed`` only
    comms = sorted(sorted(c) for c in nx.community.greedy_modularity_communities(g) if len(c) >= 2)
    blocks = [b for b in (sorted((min(index[u], index[v]), max(index[u], index[v]))
                                 for u, v in g.subgraph(comms[i]).edges())
                          for i in rng.permutation(len(comms))) if b]
    per = T // len(blocks)
    edges = []
    for b, sub in enumerate(blocks):
        n = per if b < len(blocks) - 1 else T - per * (len(blocks) - 1)
        edges.extend(sub[i] for i in rng.integers(0, len(sub), size=n))
    return EdgeStream(f"contact-florentine-m{T}-s{seed}", tuple(nodes), tuple(edges), True)


def densest_stream(name: str, n_updates: int, seed: int = 0) -> EdgeStream:
    """One of :data:`DENSEST_STREAMS` by name, on <= 15 vertices: ``bursty`` (6 hubs, 8 members),
    ``periodic`` (period 1500, 7 members; one hub per period), ``contact`` (Florentine families, 15
    vertices), ``steady`` (:func:`synthetic_stream` on 14 vertices)."""
    if name == "bursty":
        return bursty_stream(n_updates, seed, n_members=8)
    if name == "periodic":
        return periodic_stream(n_updates, seed, n_members=7)
    if name == "contact":
        return florentine_contact_stream(n_updates, seed)
    if name == "steady":
        return synthetic_stream(14, n_updates, seed)
    raise StreamError(f"unknown densest stream {name!r} (known: {', '.join(DENSEST_STREAMS)})")
