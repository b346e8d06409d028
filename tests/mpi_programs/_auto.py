"""For the tree collective programs: the default ``auto`` choice under emulation, checked.

On a platform of one slow rank (:func:`one_slow`) the model alone predicts a tree fastest at
8 ranks (an allgather at 5 too: ``tests/test_choice.py``); its microsecond costs are far
below the engine's own per message, which the default choice charges (``choice.py``), so
the wrapper is given ``message_cost=0``: the choice as the model makes it.
"""

from __future__ import annotations

from _report import Recorder

from hetcoll import HetComm, Platform
from hetcoll.planners.hypercube import hypercube_planners
from hetcoll.platform import nodes_from_costs


def one_slow(n: int) -> Platform:
    """``n`` ranks of 1 us, the last of 20 us."""
    return Platform(nodes_from_costs([1e-6] * (n - 1) + [20e-6], [1e-9] * n), model="tini")


def check_auto_emulated(rec: Recorder, comm, run) -> None:
    """``auto`` under emulation: the choice (a tree, a hypercube, MPI's algorithm) runs, and
    its data are mpi4py's.  ``run(c, count)`` makes the collective of ``count`` elements on
    ``c`` (mpi4py's communicator, then the wrapper) and returns what it received."""
    n = comm.size
    cubes = set(hypercube_planners())
    with HetComm(comm, one_slow(n), emulate=True, timeout=60, options={"message_cost": 0.0}) as hc:
        for count in (1, 16, 16384):
            want = run(comm, count)
            got = run(hc, count)
            choice, last = hc.last_choice, hc.last_call
            kind = (
                "mpi"
                if n == 1 or choice.passes
                else "cube"
                if choice.algorithm in cubes
                else "tree"
            )
            ok = got.tobytes() == want.tobytes() and (
                n == 1 or kind == "mpi" or (last is not None and last.algorithm == choice.algorithm)
            )
            rec.case(f"auto emulated count={count}: {kind}", ok, f"{choice} {last}")
