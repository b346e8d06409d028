"""``auto`` for the rooted family: MPICH's ``Reduce``/``Gather``/``Scatter`` as schedules
(:mod:`hetcoll.mpich_rooted`) and the choice between them and hetcoll's best plan."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcoll.choice import choose
from hetcoll.errors import HetcollError, ModelError
from hetcoll.mpich_rooted import rooted_algorithm, rooted_native
from hetcoll.planners import plan
from hetcoll.platform import Node, Platform, nodes_from_costs
from hetcoll.simulator import simulate


def mpich_children(n: int, root: int, farthest_first: bool) -> dict[str, tuple[str, ...]]:
    """The children MPICH's binomial loops visit (``MPIR_Reduce_intra_binomial``: for
    ``mask`` = 1, 2, 4, ... a rank whose relative rank has that bit clear receives from
    ``rel | mask``, and otherwise sends to ``rel & ~mask`` and stops)."""
    kids: dict[str, list[str]] = {}
    for rel in range(n):
        mask = 1
        while mask < n:
            if rel & mask:
                break
            if rel | mask < n:
                kids.setdefault(str((rel + root) % n), []).append(str(((rel | mask) + root) % n))
            mask <<= 1
    return {p: tuple(reversed(cs)) if farthest_first else tuple(cs) for p, cs in kids.items()}


@pytest.mark.parametrize("n", range(1, 10))
def test_mpich_trees_are_mpichs_loops(n):
    nodes = [str(k) for k in range(n)]
    for root in range(n):
        for collective in ("reduce", "gather", "scatter"):
            s = rooted_native(collective, nodes, 16, root=root)
            want = mpich_children(n, root, farthest_first=collective == "scatter")
            got = {p: cs for p, cs in s.flows[0].tree.children.items() if cs}
            assert got == want, (collective, root)
            assert s.flows[0].kind == collective and s.flows[0].tree.root == str(root)
            assert s.algorithm == "mpi"


def test_mpich_reduce_algorithm_thresholds():
    # MPIR_CVAR_REDUCE_SHORT_MSG_SIZE = 2048: binomial up to it, then Rabenseifner
    assert rooted_algorithm("reduce", 8, 2048, count=512) == "binomial"
    assert rooted_algorithm("reduce", 8, 2052, count=513) == "reduce_scatter_gather"
    assert rooted_algorithm("reduce", 8, 4096, count=7) == "binomial"  # count < pof2
    assert rooted_algorithm("reduce", 8, 1 << 20, count=1 << 18, builtin=False) == "binomial"
    assert rooted_algorithm("gather", 8, 1 << 20) == rooted_algorithm("scatter", 3, 1) == "binomial"
    with pytest.raises(ModelError, match="reduce_scatter_gather"):
        rooted_native("reduce", ["a", "b"], 4096, count=1024)
    with pytest.raises(HetcollError, match="expected one of"):
        rooted_algorithm("bcast", 4, 8)


def two_speeds(n: int) -> Platform:
    nodes = tuple(
        Node(str(i), (1 if i % 3 else 4) * 1e-6, 1e-9, gamma=(1 if i % 2 else 3) * 1e-9)
        for i in range(n)
    )
    return Platform(nodes, model="tini", name="two speeds")


def test_rooted_choices_on_two_speeds():
    p = two_speeds(8)
    ids = list(p.ids)
    small = choose(p, "reduce", 4, ids, root="0", op="sum", count=1)
    assert small.algorithm == "auto" and small.predicted * 1.25 < small.mpi
    # a long reduce: MPICH's Rabenseifner is not modelled: MPI's own natively, the plan
    # under emulation (nothing to emulate MPI's with)
    long = choose(p, "reduce", 1 << 16, ids, root="0", op="sum", count=1 << 14)
    assert long.algorithm == "mpi" and long.mpi is None
    assert choose(p, "reduce", 1 << 16, ids, root="0", count=1 << 14, emulated=True).algorithm == (
        "auto"
    )
    # a non-commutative reduce is MPI's; on one host natively every call is MPI's
    assert choose(p, "reduce", 4, ids, root="0", commutative=False).algorithm == "mpi"
    assert choose(p, "gather", 64, ids, root="0", one_host=True).algorithm == "mpi"
    # a large scatter is MPI's binomial to within the margin: MPI's
    assert choose(p, "scatter", 1 << 16, ids, root="0").algorithm == "mpi"


@settings(max_examples=25, deadline=None)
@given(
    t_ini=st.lists(st.floats(1e-6, 5e-3), min_size=2, max_size=7),
    per_byte=st.floats(1e-10, 1e-7),
    slow=st.floats(1.0, 20.0),
    data=st.data(),
)
def test_auto_never_picks_a_rooted_plan_predicted_slower_than_mpi(t_ini, per_byte, slow, data):
    """Whatever the platform, rooted call and margin, ``auto`` runs a plan only where the
    simulator predicts it faster than MPICH's binomial tree by the margin; MPI's time is
    recomputed here from the schedule of :mod:`hetcoll.mpich_rooted`, the plan's from the
    ``auto`` planner and the simulator."""
    n = len(t_ini)
    t_byte = [per_byte * (slow if k % 2 else 1.0) for k in range(n)]
    p = Platform(nodes_from_costs(t_ini, t_byte), model="tini")
    nodes = list(p.ids)
    coll = data.draw(st.sampled_from(["reduce", "gather", "scatter"]))
    nbytes = data.draw(st.sampled_from([4, 2048, 1 << 16, 1 << 20]))
    margin = data.draw(st.sampled_from([0.0, 0.25, 1.0]))
    root = data.draw(st.sampled_from(nodes))
    count = nbytes // 4
    c = choose(p, coll, nbytes, nodes, root=root, op="sum", count=count, margin=margin)
    try:
        mpi = rooted_native(coll, nodes, nbytes, root=nodes.index(root), count=count)
    except ModelError:
        assert c.passes and c.mpi is None
        return
    t_mpi = simulate(p, mpi).makespan
    assert c.mpi == pytest.approx(t_mpi, rel=1e-12)
    if c.passes:
        assert not c.predicted * (1 + margin) < t_mpi
        return
    assert c.predicted * (1 + margin) < t_mpi
    s = plan(p, root, method=c.algorithm, nbytes=nbytes, collective=coll)
    assert simulate(p, s).makespan == pytest.approx(c.predicted, rel=1e-12)
