"""A HetComm is an MPI.Intracomm on the user's handle, and ``Split``, ``Split_type``,
``Dup``, ``Clone``, ``Create``, ``Create_group`` give HetComms with the same settings on
the nodes of their ranks, planned for those nodes only (mpi_programs/subcomms.py, 4 ranks
on 4 of fig1's 8 nodes).  ``nodes=`` naming part of a platform plans for those nodes (it
failed with a bare ``KeyError`` on the first call); ranks that disagree on it, or give a
list of the wrong length, raise on every rank."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hetcoll.runtime.launch import run_mpi

PROGRAM = Path(__file__).with_name("mpi_programs") / "subcomms.py"
N = 4
NODES = [str(2 * r + 1) for r in range(N)]


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> dict[int, dict]:
    out = tmp_path_factory.mktemp("subcomms") / "out"
    proc = run_mpi(N, [PROGRAM, out], module=False, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {r: json.loads(Path(f"{out}.{r}").read_text())["checks"] for r in range(N)}


def works(d: dict, nodes: list[str], rank: int) -> None:
    """A HetComm with the world's settings on ``nodes``, right data, the planner's plan."""
    assert d["type"] == "HetComm" and d["intracomm"], d
    assert (d["size"], d["rank"], d["nodes"]) == (len(nodes), rank, nodes), d
    assert (d["algo"], d["cube_algo"], d["timeout"]) == ("fnf", "blind", 30.0), d
    assert d["bcast"] == [True] * len(nodes) and d["planned"] and d["allreduce"], d


@pytest.mark.mpi
def test_a_hetcomm_is_an_intracomm_and_passes_the_rest_to_mpi4py(ranks):
    for r, c in ranks.items():
        works(c["world"], NODES, r)
        assert c["same handle"] and c["gather"] and c["Ibcast"], c


@pytest.mark.mpi
def test_communicators_made_from_a_hetcomm_are_hetcomms_on_their_ranks_nodes(ranks):
    for r, c in ranks.items():
        half = [q for q in range(N) if q % 2 == r % 2][::-1]  # key -rank: reversed
        works(c["split"], [NODES[q] for q in half], half.index(r))
        works(c["dup"], NODES, r)
        works(c["clone"], NODES, r)
        works(c["split_type"], NODES, r)  # one host
        members = [0, 1, 3]
        if r in members:
            works(c["create"], [NODES[q] for q in members], members.index(r))
            works(c["create_group"], [NODES[q] for q in members], members.index(r))
        else:
            assert c["create"] == "null"
        assert c["undefined"] is (r == 0)
        assert c["idup plain"]


@pytest.mark.mpi
def test_nodes_naming_part_of_the_platform_plans_for_them_and_a_mismatch_raises_everywhere(
    ranks,
):
    for r in range(3):
        c = ranks[r]
        works({**c["nodes="], "cube_algo": "blind", "timeout": 30.0}, ["2", "5", "7"], r)
        assert c["different nodes"].startswith("MismatchError: "), c["different nodes"]
        assert c["too few nodes"].startswith("PlatformError: "), c["too few nodes"]
        assert "nodes= lists 2 nodes but the communicator has 3 ranks" in c["too few nodes"]
