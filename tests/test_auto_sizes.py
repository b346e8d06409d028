"""``auto`` at every message size, by brute force: on small random platforms and messages
from one piece to many slices, its schedule is the fastest of every registered applicable
planner at every slice size it may choose, each planned and simulated here on its own
(not through the comparison service ``auto`` itself uses)."""

from __future__ import annotations

import numpy as np
import pytest

from hetcoll import plan, simulate
from hetcoll.bounds import slice_bound
from hetcoll.choice import choose, mpi_time
from hetcoll.compare import slice_choices
from hetcoll.errors import ModelError, PlannerError
from hetcoll.generators import random_graph_platform
from hetcoll.planners import REGISTRY
from hetcoll.platform import Platform, nodes_from_costs

#: one piece, then 1, 3 and 4 slice sizes besides one piece (slice_choices: the last one
#: down to 512 slices, past the 128 that auto stopped at before)
SIZES = (1, 40_000, 2**20, 3 * 2**20)


def _hockney(n: int, seed: int, model: str) -> Platform:
    rng = np.random.default_rng(seed)
    lat = rng.uniform(1e-5, 1e-3, (n, n))
    lat = (lat + lat.T) / 2
    np.fill_diagonal(lat, 0)
    bw = rng.choice([1e7, 1e8, 1e9], (n, n))
    bw = np.minimum(bw, bw.T)
    costs = rng.choice([1, 2, 3, 5, 8], n) * 1e-5
    return Platform(
        nodes_from_costs(costs, rng.choice([1e-9, 1e-8], n)),
        latency=lat,
        bandwidth=bw,
        model=model,
    )


def _platforms():
    for model, n, seed in (
        ("one_port", 5, 1),
        ("one_port", 7, 2),
        ("one_port_uni", 6, 4),
        ("multi_port", 6, 5),
    ):
        yield f"{model}-{n}-{seed}", random_graph_platform(n, 0.4, seed=seed, model=model)
    for model in ("tini", "postal", "hockney"):
        yield f"{model}-6-3", _hockney(6, 3, model)


PLATFORMS = dict(_platforms())


def brute_force(p: Platform, root: str, nbytes: int) -> list[tuple[float, str, int]]:
    """``(simulated seconds, planner, slice size or 0)`` of every registered planner that
    the registry's rule admits, at every slice size of :func:`slice_choices`, each
    planned and simulated on its own; a planner that declines is left out."""
    out = []
    model = p.model.name
    for seg in slice_choices(nbytes):
        pipelined = seg is not None and nbytes > seg
        for name, info in sorted(REGISTRY.items()):
            if info.unfit("bcast", model, len(p), pipelined) is not None:
                continue
            try:
                s = plan(p, root, method=name, nbytes=nbytes, segment_size=seg)
                t = simulate(p, s).makespan
            except (PlannerError, ModelError):
                continue
            out.append((t, name, seg or 0))
    return sorted(out)


@pytest.mark.parametrize("key", sorted(PLATFORMS))
def test_auto_is_the_argmin_of_every_planner_at_every_size(key):
    """auto's time is the least of every candidate's (planner, slice) at each size, and
    its choice is that argmin (ties: the name, then the slice, as every rank breaks them);
    an auto that chose the planner or the slice without the size fails on the sizes where
    the winner changes (the last assertion: it changes on every platform here)."""
    p = PLATFORMS[key]
    winners = set()
    for nbytes in SIZES:
        ranked = brute_force(p, "0", nbytes)
        t_best, name, seg = ranked[0]
        s = plan(p, "0", method="auto", nbytes=nbytes)
        assert (s.params["chosen"], s.params.get("segment_size") or 0) == (name, seg), nbytes
        assert simulate(p, s).makespan == pytest.approx(t_best, rel=1e-12, abs=0)
        best = {}
        for t, a, _seg in ranked:
            best.setdefault(a, t)
        # each simulated candidate's time is its time at a slice size it was simulated at,
        # so at least its best; one above its best (pruned there) could not have won
        cands = s.params["candidates"]
        assert set(cands) <= set(best)
        one_piece = {a for t, a, seg in ranked if seg == 0}
        assert one_piece <= set(cands)  # every candidate is simulated in one piece
        for a, t in cands.items():
            assert t >= best[a] * (1 - 1e-12), a
            assert t == pytest.approx(best[a], rel=1e-12, abs=0) or best[a] > t_best, a
        winners.add((name, seg > 0))
    assert len(winners) > 1, winners  # the grid tells a size-blind auto apart


@pytest.mark.parametrize("key", ["hockney-6-3", "postal-6-3"])
def test_choose_is_the_least_of_the_plan_and_mpi_at_every_size(key):
    """With no margin the runtime's choice is the faster of auto's plan (the argmin above)
    and MPI's own, predicted, at every size."""
    p = PLATFORMS[key]
    nodes = list(p.ids)
    for nbytes in SIZES:
        t_plan = simulate(p, plan(p, "0", method="auto", nbytes=nbytes)).makespan
        t_mpi = mpi_time(p, "bcast", nbytes, nodes, root="0")
        c = choose(p, "bcast", nbytes, nodes, root="0", margin=0.0, emulated=True)
        assert c.algorithm == ("mpi" if t_plan >= t_mpi else "auto"), (nbytes, t_plan, t_mpi)
        assert (c.predicted, c.mpi) == (t_plan, t_mpi)


def test_the_slice_count_grows_with_the_message():
    """A geometric grid of slice counts (8, 32, 128, ... times 4) down to 4 KiB: 8 192
    slices of 128 KiB for 1 GiB (auto stopped at 128 slices, 8 MiB, before)."""
    grid = slice_choices(2**30)
    assert grid[0] is None
    assert grid[1:] == [2**30 // 8 // 4**k for k in range(8)]
    assert 2**17 in grid and min(grid[1:]) == 8192  # (2 KiB next: under 4 KiB)
    assert slice_choices(3 * 2**20) == [None, 393216, 98304, 24576, 6144]
    assert slice_choices(4095) == [None]


@pytest.mark.parametrize("key", sorted(PLATFORMS))
def test_the_pruning_bounds_hold_for_every_candidate(key):
    """Every (planner, slice) of the brute force simulates no faster than the bound of
    its slice or of any larger slice (each holds for every smaller one) nor than its own
    schedule's bound, and sends messages of exactly its slice (each slice here divides
    the message), no faster than its slice's ``whole`` bound (with the fill): the lower
    bounds auto prunes by; on the graph models the schedules' own bounds and the fills
    are not all 0."""
    p = PLATFORMS[key]
    nbytes = SIZES[-1]
    model = p.model.name
    grid = slice_choices(nbytes)[1:]
    bounds = {seg: slice_bound(p, "0", nbytes, seg) for seg in grid}
    assert all(nbytes % seg == 0 for seg in grid)
    positive = 0
    for seg in grid:
        for name, info in sorted(REGISTRY.items()):
            if info.unfit("bcast", model, len(p), True) is not None:
                continue
            try:
                s = plan(p, "0", method=name, nbytes=nbytes, segment_size=seg)
                t = simulate(p, s).makespan
            except (PlannerError, ModelError):
                continue
            for larger in (x for x in grid if x >= seg):
                assert bounds[larger].seconds <= t * (1 + 1e-12), (name, seg, larger)
            own = bounds[seg].of(s)
            assert own <= t * (1 + 1e-12), (name, seg)
            positive += own > 0
            assert {n for f in s.flows for _, n in f.segments()} == {seg}, (name, seg)
            assert bounds[seg].whole <= t * (1 + 1e-12), (name, seg)
    assert positive or model == "postal", key
    if model == "one_port":
        assert any(b.start > 0 for b in bounds.values()), key


def test_a_slice_size_whose_fill_the_winner_beats_is_not_planned(monkeypatch):
    """The slice sizes go lowest bound first: on this 16-node platform the 8 KiB slices
    win a 16 MiB broadcast (multi_tree) before the 2 MiB ones, whose 8 slices' fill
    (SliceBound.whole) alone takes longer, are planned at all; the choice is the brute
    force's."""
    import hetcoll.compare as cm

    p = random_graph_platform(16, 0.3, seed=0)
    planned, real = set(), cm.plan_request

    def spy(*args, segment_size=None, **kwargs):
        planned.add(segment_size)
        return real(*args, segment_size=segment_size, **kwargs)

    monkeypatch.setattr(cm, "plan_request", spy)
    s = plan(p, "0", method="auto", nbytes=2**24)
    assert (s.params["chosen"], s.params["segment_size"]) == ("multi_tree", 8192)
    assert 2**21 not in planned
    bound = slice_bound(p, "0", 2**24, 2**21)
    assert bound.seconds < s.params["candidates"]["multi_tree"] < bound.whole


def test_the_slice_sizes_past_the_valley_are_not_planned(monkeypatch):
    """On the same platform the 32 KiB slices are slower than the 8 KiB ones, so the
    512 and 128 KiB slices (larger still) are not planned, though their bounds are below
    the winner's time; the choice and its time are the brute force's argmin."""
    import hetcoll.compare as cm

    p = random_graph_platform(16, 0.3, seed=0)
    nbytes = 2**24
    planned, real = set(), cm.plan_request

    def spy(*args, segment_size=None, **kwargs):
        planned.add(segment_size)
        return real(*args, segment_size=segment_size, **kwargs)

    monkeypatch.setattr(cm, "plan_request", spy)
    s = plan(p, "0", method="auto", nbytes=nbytes)
    assert planned == {None, 2**15, 2**13}
    t = s.params["candidates"]["multi_tree"]
    for seg in (2**19, 2**17):  # not pruned by their bounds: by the valley
        assert slice_bound(p, "0", nbytes, seg).whole < t
    t_best, name, seg = brute_force(p, "0", nbytes)[0]
    assert (s.params["chosen"], s.params["segment_size"]) == (name, seg)
    assert t == pytest.approx(t_best, rel=1e-12, abs=0)


@pytest.mark.parametrize(
    ("fastest", "size", "past"),
    [
        ({8192: 1.0, 32768: 2.0}, 131072, True),  # rising towards larger slices
        ({8192: 1.0, 32768: 2.0}, 4096, False),
        ({8192: 1.0, 32768: 2.0}, 16384, False),  # between the two: not past
        ({8192: 2.0, 32768: 1.0}, 4096, True),  # rising towards smaller slices
        ({8192: 2.0, 32768: 1.0}, 131072, False),
        ({8192: 1.0, 32768: 1.0}, 131072, False),  # a tie is no rise
        ({32768: 1.0}, 131072, False),
    ],
)
def test_past_the_valley(fastest, size, past):
    from hetcoll.slicesizes import past_the_valley as _past_the_valley

    assert _past_the_valley(size, fastest) is past
