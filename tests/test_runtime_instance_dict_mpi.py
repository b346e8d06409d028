"""A HetComm that gives every call to MPI looks mpi4py's methods up as fast as a plain
communicator (mpi_programs/instance_dict.py, 2 ranks).  CPython 3.11 specializes the
look-up of a method of an object with an instance dict only while the dict is in the
compact form it shares with its class: at most 30 attributes, and the class fixed before
the first is set.  Before, a wrapper had 57 attributes and its class changed once they were
set (to the variant with mpi4py's methods), and each call of ``hc.Allreduce`` cost tens of
ns more than ``comm.Allreduce`` (``benchmarks/mpi/bench_plain_methods.py``).  A wrapper
given a tuning file that forces MPICH's algorithms has the one-step ``Allreduce`` and
``Allgather`` of ``runtime/forced.py`` as its class's too, which specialize the same
way.  (The wrapper of a user's subclass has a ``__getattr__``, which no look-up
specialization takes.)"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from hetcoll.runtime.launch import run_mpi

PROGRAM = Path(__file__).with_name("mpi_programs") / "instance_dict.py"
N = 2
#: the attributes a wrapper's dict may have: 30 fit the compact form, the rest is room
#: for what later calls add (a persistent call's state, ...)
MOST_KEYS = 24
#: what a method look-up specializes to in CPython 3.11 (not LOAD_METHOD_ADAPTIVE)
FAST = {"LOAD_METHOD_NO_DICT", "LOAD_METHOD_WITH_VALUES", "LOAD_METHOD_WITH_DICT"}


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> dict[int, dict]:
    out = tmp_path_factory.mktemp("instance_dict") / "out"
    proc = run_mpi(N, [PROGRAM, out], module=False, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {r: json.loads(Path(f"{out}.{r}").read_text())["checks"] for r in range(N)}


@pytest.mark.mpi
@pytest.mark.parametrize("wrapper", ["default", "default after named", "split", "tuned", "user"])
def test_the_wrappers_dict_stays_small(ranks, wrapper):
    for r, c in ranks.items():
        assert c[wrapper]["keys"] <= MOST_KEYS, (r, c[wrapper])
        assert c[wrapper]["name"] == "HetComm", r


@pytest.mark.mpi
@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="CPython 3.11's specializations")
@pytest.mark.parametrize("wrapper", ["default", "default after named", "split", "tuned"])
def test_the_method_look_ups_specialize(ranks, wrapper):
    for r, c in ranks.items():
        assert len(c[wrapper]["look-ups"]) == 3, (r, c[wrapper])
        assert set(c[wrapper]["look-ups"]) <= FAST, (r, c[wrapper])


@pytest.mark.mpi
def test_a_tuned_wrapper_forces_with_the_same_results(ranks):
    for r, c in ranks.items():
        assert c["tuned data"] and c["tuned forced"], r


@pytest.mark.mpi
def test_the_wrapper_of_a_users_subclass_serves_its_attributes(ranks):
    for r, c in ranks.items():
        assert c["user greeting"], r


@pytest.mark.mpi
def test_a_default_wrapper_across_hosts_keeps_hetcomms_methods(ranks):
    for r, c in ranks.items():
        assert c["named"], r
        assert c["apart one_host"] is False, r
        assert c["apart class"] and c["apart Allreduce"] and c["apart data"], r
