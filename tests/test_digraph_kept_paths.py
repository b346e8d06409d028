"""A platform's digraph keeps its shortest paths across message sizes a power of two apart
when its links have no latency, and its all-pairs times per message size: the same answers
as computed anew, from fewer searches."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import scipy.sparse.csgraph

import hetcoll.digraph as digraph
from hetcoll.generators import random_graph_platform
from hetcoll.platform import Platform


def _graph(latency: float = 0.0) -> digraph.PlatformGraph:
    p = random_graph_platform(20, 0.2, seed=3, model="one_port")
    if latency:
        links = tuple(replace(lk, latency=latency) for lk in p.links)
        p = Platform(p.nodes, links, model=p.model, name=p.name)
    return digraph.PlatformGraph.from_platform(p)


def _counted(monkeypatch, module, name) -> list[int]:
    calls: list[int] = []
    search = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(1)
        return search(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def _paths(g: digraph.PlatformGraph, nbytes: float) -> list[tuple[int, ...]]:
    return [g.shortest_path(0, v, nbytes) for v in range(g.n)]


def test_sizes_a_power_of_two_apart_share_their_paths_without_latency(monkeypatch):
    calls = _counted(monkeypatch, digraph, "_dijkstra")
    g = _graph()
    got = [_paths(g, 2.0**k) for k in (19, 21, 30)]
    assert len(calls) == 1  # one search per size (3) before
    _paths(g, 3 * 2.0**19)  # another mantissa: searched
    assert len(calls) == 2
    for k, paths in zip((19, 21, 30), got, strict=True):
        assert paths == _paths(_graph(), 2.0**k)  # as a graph that searched that size alone


def test_with_latency_each_size_searches(monkeypatch):
    calls = _counted(monkeypatch, digraph, "_dijkstra")
    g = _graph(1e-4)
    for k in (19, 21, 30):
        assert _paths(g, 2.0**k) == _paths(_graph(1e-4), 2.0**k)
    assert len(calls) == 3 + 3  # (the fresh graphs' own)


def test_all_pairs_times_kept_per_size(monkeypatch):
    calls = _counted(monkeypatch, scipy.sparse.csgraph, "dijkstra")
    g = _graph(1e-4)
    first = g.distances(2**21)
    first[0, 1] = -1.0  # the caller's copy: the one kept is untouched
    again = g.distances(2**21)
    assert len(calls) == 1  # two before
    assert again[0, 1] != -1.0
    fresh = _graph(1e-4).distances(2**21)
    assert np.array_equal(again, fresh)
    for k in range(digraph.DISTANCES + 1):
        g.distances(2**k)
    g.distances(2**21)  # pushed out by the sizes asked for since
    assert len(calls) == 1 + 1 + digraph.DISTANCES + 1 + 1
