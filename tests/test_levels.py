"""Level inference on generated grids, labels, and the multi-level planners built on them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll import Node, Platform, load_platform, plan, simulate
from hetcoll.generators import grid_platform
from hetcoll.levels import _canonical, components, gaps, levels, merge_heights


def _truth(p, regions_of_site=None):
    site = _canonical(p.labels("site"))
    cluster = _canonical(p.labels("cluster"))
    region = site if regions_of_site is None else _canonical([regions_of_site[s] for s in site])
    return cluster, site, region


def _blocks(k, regions):
    return [int(r) for r, b in enumerate(np.array_split(np.arange(k), regions)) for _ in b]


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize(
    ("sites", "clusters", "procs", "regions"),
    [(4, 2, 4, 2), (6, 1, 3, 3), (3, 3, 2, 2), (5, 2, 2, 2), (8, 1, 4, 4), (2, 4, 3, 1)],
)
def test_inference_recovers_the_generators_levels(seed, sites, clusters, procs, regions):
    p = grid_platform(sites, clusters, procs, regions=regions, seed=seed, asymmetry=0.1)
    lv = levels(p, use_labels=False)
    cluster, site, region = _truth(p, _blocks(sites, regions))
    assert lv.cluster == cluster
    assert lv.site == site
    if regions > 1:
        assert lv.region == region
    assert lv.source == {
        "site": "inferred",
        "cluster": "inferred",
        "host": "none",
        "region": "inferred",
    }


@pytest.mark.parametrize("seed", range(25))
def test_inference_all_heavy_wan_every_site_its_own_region(seed):
    # a heavy band narrower than the gap ratio has no internal jump to mistake for a level
    p = grid_platform(5, 2, 2, latency={"heavy": (20e-3, 55e-3)}, seed=seed)
    lv = levels(p, use_labels=False)
    assert lv.region == lv.site == _truth(p)[1]


def test_labels_win_and_nest():
    p = grid_platform(3, 2, 2, seed=0)
    lv = levels(p)
    assert lv.source["cluster"] == lv.source["site"] == "labels"
    assert lv.count("cluster") == 6 and lv.count("site") == 3
    # only site labels: clusters inferred inside them
    nodes = tuple(Node(n.id, site=n.site) for n in p.nodes)
    q = Platform(nodes, latency=p.latency, model="postal")
    lq = levels(q)
    assert lq.source == {
        "site": "labels",
        "cluster": "inferred",
        "host": "none",
        "region": "inferred",
    }
    assert lq.cluster == lv.cluster
    # only cluster labels: sites inferred, then made to contain the clusters
    nodes = tuple(Node(n.id, cluster=n.cluster) for n in p.nodes)
    lr = levels(Platform(nodes, latency=p.latency, model="postal"))
    assert lr.site == lv.site and lr.source["site"] == "inferred"


def test_labels_that_disagree_with_latency_still_nest():
    # cluster label "x" spans two labelled sites: clusters are split along the sites
    w = np.full((4, 4), 0.05)
    np.fill_diagonal(w, 0)
    nodes = (
        Node("a", site="s", cluster="x"),
        Node("b", site="s", cluster="x"),
        Node("c", site="t", cluster="x"),
        Node("d", site="t", cluster="y"),
    )
    lv = levels(Platform(nodes, latency=w, model="postal"))
    assert lv.cluster == (0, 0, 1, 2)
    assert lv.site == (0, 0, 1, 1)


def test_host_labels_and_light_wan_threshold():
    p = grid_platform(4, 1, 2, seed=2)
    nodes = tuple(
        Node(n.id, site=n.site, cluster=n.cluster, host=f"{n.cluster}h{i % 2}")
        for i, n in enumerate(p.nodes)
    )
    q = Platform(nodes, latency=p.latency, model="postal")
    lv = levels(q, light_wan=1.0)  # every WAN link counts as light: one region
    assert lv.host == tuple(range(8))
    assert lv.region == (0,) * 8
    assert lv.source["region"] == "threshold" and lv.source["host"] == "labels"
    assert levels(q, light_wan=1e-6).region == lv.site


def test_fig2_labels_every_site_heavy():
    lv = levels(load_platform("park-fig2"))
    assert lv.region == lv.site == lv.cluster == tuple(range(8))


def test_building_blocks():
    assert gaps([1, 1.5, 2, 9, 10, 100]) == pytest.approx([np.sqrt(18), np.sqrt(1000)])
    assert gaps([0, 0, 5]) == [2.5]
    w = np.array([[0, 1, 9, 9], [1, 0, 9, 9], [9, 9, 0, 2], [9, 9, 2, 0]], dtype=float)
    assert merge_heights(w).tolist() == [1, 2, 9]
    assert components(w, 1.5) == (0, 0, 1, 2)
    assert components(w, 5) == (0, 0, 1, 1)
    with pytest.raises(ValueError, match="ratio must be > 1"):
        levels(load_platform("park-fig2"), ratio=1)


def _wan_edges(schedule, groups):
    return sum(groups[a] != groups[b] for a, b in schedule.tree.edges())


@pytest.mark.parametrize("seed", range(5))
def test_multilevel_trees_cross_each_level_once_per_group(seed):
    p = grid_platform(3, 2, 3, regions=2, seed=seed)
    lv = levels(p)
    ids = p.ids
    site = dict(zip(ids, lv.site, strict=True))
    cluster = dict(zip(ids, lv.cluster, strict=True))
    region = dict(zip(ids, lv.region, strict=True))
    root = ids[4]
    mag = plan(p, root, method="magpie")
    g2 = plan(p, root, method="mpich-g2")
    gx = plan(p, root, method="mpich-gx")
    for s in (mag, g2, gx):
        s.validate(p)
        assert set(s.tree.nodes) == set(ids)
    assert _wan_edges(mag, cluster) == 5  # one message per other cluster
    assert _wan_edges(g2, site) == 2 and _wan_edges(g2, cluster) == 5
    assert _wan_edges(gx, region) == 1 and _wan_edges(gx, site) == 2
    # MagPIe: the root's flat WAN sends go first, to each other cluster's lowest rank
    kids = mag.tree.children[root]
    coords = [min((i for i in ids if cluster[i] == c), key=ids.index) for c in range(6)]
    assert sorted(kids[:5], key=ids.index) == [c for c in coords if cluster[c] != cluster[root]]
    assert all(cluster[k] == cluster[root] for k in kids[5:])
    assert g2.params["groups"] == {"site": 3, "cluster": 6, "host": 18}


@settings(max_examples=40)
@given(seed=st.integers(0, 2**32 - 1), sites=st.integers(2, 6), root=st.integers(0, 100))
def test_gx_never_slower_than_g2_under_eq4_when_all_wan_is_heavy(seed, sites, root):
    """With one region per site GX differs from G2 only by HLOT instead of flat among the
    site coordinators, so HLOT's property carries over, node by node."""
    p = grid_platform(sites, 2, 2, seed=seed)
    r = p.ids[root % len(p)]
    gx = simulate(p, plan(p, r, method="mpich-gx", options={"light_wan": 1e-9}))
    g2 = simulate(p, plan(p, r, method="mpich-g2"))
    assert gx.makespan <= g2.makespan
    assert all(gx.arrival[k] <= g2.arrival[k] for k in gx.arrival)


def test_coordinator_closest_and_bad_option():
    from hetcoll import PlannerError

    p = grid_platform(3, 1, 4, seed=1)
    s = plan(p, "s0c0p0", method="mpich-g2", options={"coordinator": "closest"})
    w = p.latency
    for c in s.tree.children["s0c0p0"]:
        if not c.startswith("s0"):
            peers = [i for i in p.ids if i[:2] == c[:2]]
            assert c == min(peers, key=lambda x: w[0, p.index(x)])
    with pytest.raises(PlannerError, match="coordinator: must be 'lowest' or 'closest'"):
        plan(p, "s0c0p0", method="magpie", options={"coordinator": "best"})


def test_fig2_multilevel():
    p = load_platform("park-fig2")
    t = {
        m: simulate(p, plan(p, "A", method=m)).makespan for m in ("magpie", "mpich-g2", "mpich-gx")
    }
    assert t == pytest.approx({"magpie": 0.9, "mpich-g2": 0.9, "mpich-gx": 0.6})


def test_multicast_subset():
    p = grid_platform(3, 2, 2, seed=4)
    members = list(p.ids[::2])
    for m in ("magpie", "mpich-g2", "mpich-gx"):
        s = plan(p, members[1], members, method=m)
        assert set(s.tree.nodes) == set(members)
        s.validate(p)


# -- overlapping latency bands: no chaining ----------------------------------------------------


def _line_of_sites(positions, per_site=2, lan=1e-4):
    """Sites at ``positions`` (seconds) on a line, ``per_site`` nodes each: two nodes of
    sites at x and y are ``|x - y|`` apart (plus ``lan`` inside a site), so the bands of the
    WAN latencies overlap as much as the positions do."""
    ids, where = [], []
    for k, x in enumerate(positions):
        for j in range(per_site):
            ids.append(f"s{k}n{j}")
            where.append(x)
    n = len(ids)
    lat = [[0.0 if i == j else abs(where[i] - where[j]) or lan for j in range(n)] for i in range(n)]
    return Platform.from_dict(
        {"model": "postal", "nodes": [{"id": i} for i in ids], "latency": lat}
    )


def _pairs_within(lv, level, s, threshold):
    for group in lv.groups(level):
        for a in group:
            for b in group:
                assert s[a, b] <= threshold, (level, a, b, s[a, b], threshold)


def test_regions_do_not_chain_through_overlapping_bands():
    """Seven sites 100 ms apart on a line and one far away: single linkage joined the seven
    into one light-WAN region holding 600 ms pairs under a 374 ms threshold; now every pair
    inside a region is within its threshold."""
    p = _line_of_sites([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 2.0])
    lv = levels(p)
    assert lv.count("site") == 8
    s = np.maximum(p.latency, p.latency.T)
    assert lv.thresholds["region"] is not None
    _pairs_within(lv, "region", s, lv.thresholds["region"])


@settings(max_examples=40)
@given(
    st.integers(3, 8),
    st.floats(0.02, 0.2),
    st.floats(1.0, 3.0),
    st.lists(st.floats(0.0, 1.0), max_size=4),
    st.integers(1, 2),
)
def test_every_pair_inside_an_inferred_group_is_within_its_threshold(k, step, far, extra, per):
    """Evenly spaced sites (a band that overlaps itself), a far one, a few anywhere."""
    positions = (
        [round(i * step, 4) for i in range(k)] + [round(far, 4)] + [round(x, 4) for x in extra]
    )
    p = _line_of_sites(positions, per)
    lv = levels(p)
    s = np.maximum(p.latency, p.latency.T)
    for level in ("cluster", "site", "region"):
        if lv.thresholds.get(level) is not None:
            _pairs_within(lv, level, s, lv.thresholds[level])
