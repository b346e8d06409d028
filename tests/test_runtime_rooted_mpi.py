"""The rooted collectives over MPI (mpi_programs/rooted.py): ``Reduce``, ``reduce``,
``Gather``, ``gather``, ``Scatter``, ``scatter`` planned by HetComm, every root, against
mpi4py's own results on the same ranks, ``last_call``, and a mismatched root raising on
every rank."""

from __future__ import annotations

from pathlib import Path

import pytest

from _mpi import run_records
from hetcoll.platform import Node, Platform

PROGRAM = Path(__file__).with_name("mpi_programs") / "rooted.py"


def platform(n: int) -> Platform:
    """The program's platform (mpi_programs/rooted.py)."""
    nodes = tuple(
        Node(str(i), (1 if i % 3 else 4) * 1e-6, 1e-9, gamma=(1 if i % 2 else 3) * 1e-9)
        for i in range(n)
    )
    return Platform(nodes, model="tini", name="two speeds")


@pytest.mark.parametrize("n", [1, 3, 5, 8])
def test_rooted_collectives_equal_mpi4py(tmp_path, n):
    out = tmp_path / f"rooted{n}.jsonl"
    records = run_records(n, [PROGRAM], out, timeout=600)
    names = {r["case"] for r in records}
    for root in range(n):
        assert f"Reduce root={root} int64 BXOR" in names
        assert f"Reduce root={root} non-commutative user op" in names
        assert f"Scatter root={root} IN_PLACE" in names
    assert "last_call None after a passed-through Alltoall" in names
    assert "default algo: Reduce passed to MPI" in names
    assert "default algo: gather with algo='mpi' passed to MPI" in names
    if n > 1:
        assert "Reduce with another root: MismatchError on every rank" in names
        # what ran under emulation is what the model chose, computed here in one process
        from hetcoll.choice import choose, engine_message_cost

        p = platform(n)
        for name, nbytes in (("Reduce", 4), ("Gather", 64), ("Scatter", 65536), ("Scatter", 4)):
            c = choose(
                p,
                name.lower(),
                nbytes,
                list(p.ids),
                root="1",
                op="sum",
                count=nbytes // 4,
                emulated=True,
                message_cost=engine_message_cost(),  # HetComm's at time scale 1
            )
            ran = "mpi" if c.passes else "plan"
            assert f"auto emulated {name} {nbytes} B: {ran}" in names
