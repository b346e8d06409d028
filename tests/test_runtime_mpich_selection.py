"""runtime/mpich_selection.py without MPI: the tree it makes from a tuning file (MPICH's
own subtree everywhere but the tuning file's rank count, each rule's size range on MPICH's
size keys, each forced algorithm under MPICH's restrictions on it, an algorithm it does not
name left to MPICH), and the built-in tree found in a library's bytes."""

from __future__ import annotations

import json

import pytest

from hetcoll.errors import HetcollError
from hetcoll.runtime.mpich_selection import builtin, selection
from hetcoll.tuning import Rule, Tuning

OWN_AR = {"avg_msg_size=any": {"algorithm=MPIR_Allreduce_intra_recursive_doubling": {}}}
OWN_AG = {"total_msg_size=any": {"algorithm=MPIR_Allgather_intra_ring": {}}}
TREE = {
    "collective=bcast": {"comm_type=intra": {"algorithm=MPIR_Bcast_intra_binomial": {}}},
    "collective=allreduce": {"comm_type=intra": OWN_AR, "comm_type=inter": {}},
    "collective=allgather": {"comm_type=intra": OWN_AG},
}


def _tuning(allreduce, allgather=((0, "mpi", None),), ranks=4) -> Tuning:
    """Rules from (first size, algorithm, segment size[, MPICH algorithm]) as given."""
    rules = {
        c: tuple(Rule(*r) for r in rs)
        for c, rs in (("allreduce", allreduce), ("allgather", allgather))
    }
    return Tuning(ranks, rules)


def test_each_rule_is_a_size_range_of_the_tuned_rank_count_only():
    t = _tuning(
        [(8, "mpi", None), (512, "mpi", None, "ring"), (65536, "mpi", None, "recursive_doubling")],
        [(0, "mpi", None), (4096, "mpi", None, "recursive_doubling")],
    )
    out = selection(t, TREE)
    ar = out["collective=allreduce"]["comm_type=intra"]
    assert list(ar) == ["comm_size<4", "comm_size<5", "comm_size=any"]
    assert ar["comm_size<4"] == ar["comm_size=any"] == OWN_AR
    ring = {"algorithm=MPIR_Allreduce_intra_ring": {}}
    assert ar["comm_size<5"] == {
        "avg_msg_size<2": OWN_AR,  # below the first rule (8 B on 4 ranks)
        "avg_msg_size<128": OWN_AR,  # 8 B-511 B: MPICH's own
        "avg_msg_size<16384": {"is_commutative=no": OWN_AR, "is_commutative=yes": ring},
        "avg_msg_size=any": {"algorithm=MPIR_Allreduce_intra_recursive_doubling": {}},
    }
    ag = out["collective=allgather"]["comm_type=intra"]["comm_size<5"]
    doubling = {"algorithm=MPIR_Allgather_intra_recursive_doubling": {}}
    assert ag == {
        "total_msg_size<16384": OWN_AG,  # blocks below 4 KiB on 4 ranks
        "total_msg_size=any": {"comm_size=pow2": doubling, "comm_size=any": OWN_AG},
    }
    assert out["collective=bcast"] == TREE["collective=bcast"]
    assert TREE["collective=allreduce"]["comm_type=intra"] is OWN_AR  # not changed


def test_reduce_scatter_allgather_only_for_builtin_commutative_and_enough_elements():
    t = _tuning([(0, "mpi", None, "reduce_scatter_allgather")])
    ar = selection(t, TREE)["collective=allreduce"]["comm_type=intra"]["comm_size<5"]
    leaf = {"algorithm=MPIR_Allreduce_intra_reduce_scatter_allgather": {}}
    assert ar == {
        "avg_msg_size=any": {
            "is_op_built_in=no": OWN_AR,
            "is_op_built_in=yes": {
                "is_commutative=no": OWN_AR,
                "is_commutative=yes": {"count<pow2": OWN_AR, "count=any": leaf},
            },
        }
    }


def test_nothing_forced_or_an_algorithm_with_parameters_keeps_mpichs_own():
    assert selection(_tuning([(0, "mpi", None)]), TREE) == TREE
    assert selection(_tuning([(0, "mpi", None, "tree")]), TREE) == TREE
    t = _tuning([(0, "mpi", None, "tree"), (1024, "mpi", None, "ring")], ranks=2)
    ar = selection(t, TREE)["collective=allreduce"]["comm_type=intra"]["comm_size<3"]
    assert ar["avg_msg_size<512"] == OWN_AR


def test_the_built_in_tree_is_the_one_of_algorithms(tmp_path):
    composition = {"collective=bcast": {"composition=MPIDI_Bcast_intra_composition_alpha": {}}}
    lib = tmp_path / "libmpi.so.12"
    blobs = [json.dumps(composition).encode(), json.dumps(TREE).encode()]
    lib.write_bytes(b"\x7fELF..." + b"\0junk\0".join(blobs) + b"\0tail")
    assert builtin(str(lib)) == TREE
    lib.write_bytes(b"\x7fELF" + json.dumps(composition).encode() + b"\0")
    with pytest.raises(HetcollError, match="no built-in selection"):
        builtin(str(lib))
