"""MPICH's allreduce and allgather algorithms forced per call through their control
variables (hetcoll.runtime.mpich_cvars), natively: every algorithm written and read back,
the write in effect at the call and undone after it, a HetComm given a tuning file whose
rules name them forcing them per size (results bit-identical to mpi4py's, floats the same
on every rank, nothing printed for a name MPICH does not know; mpi_programs/mpich_cvars.py,
4 ranks), the names' values checked against MPICH reading them from the environment, and
``hetcoll tune --mpich-algorithms`` measuring them and writing their rules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _mpi import run_checks
from hetcoll.errors import HetcollError
from hetcoll.platform import Platform, nodes_from_costs, save_platform
from hetcoll.runtime.launch import run_mpi
from hetcoll.tuning import load_tuning

PROGRAM = Path(__file__).with_name("mpi_programs") / "mpich_cvars.py"
N = 4
pytestmark = pytest.mark.mpi


def test_forced_per_call_and_by_a_tuning_file():
    proc = run_checks(PROGRAM, N, timeout=300, env={"MPIR_CVAR_COLLECTIVE_FALLBACK": "error"})
    assert proc.stderr == ""  # a name MPICH lacks falls back to its selection silently


_READ = """
import json, sys
from hetcoll.runtime.mpich_cvars import algorithms
found = algorithms()
print(json.dumps([found.current(c)[0] for c in ("allreduce", "allgather")]))
"""


def test_each_name_is_the_value_mpich_gives_it_from_the_environment():
    """The values written are the names' positions in the variables' descriptions: MPICH,
    given each name in the environment, reads back that name."""
    from mpi4py import MPI  # noqa: F401  (the names: this process's MPICH)

    from hetcoll.runtime.mpich_cvars import algorithms

    found = algorithms()
    reduce, gather = found.names("allreduce"), found.names("allgather")
    for k in range(max(len(reduce), len(gather))):
        want = [reduce[k % len(reduce)], gather[k % len(gather)]]
        env = {
            "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": want[0],
            "MPIR_CVAR_ALLGATHER_INTRA_ALGORITHM": want[1],
        }
        proc = subprocess.run(
            [sys.executable, "-c", _READ],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, **env},
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert json.loads(proc.stdout) == want


@pytest.mark.parametrize(
    ("rule", "collective", "says"),
    [
        ({"from_bytes": 0, "algorithm": "fnf", "mpich": "ring"}, "allreduce", "only on an 'mpi'"),
        ({"from_bytes": 0, "algorithm": "mpi", "mpich": "ring"}, "bcast", "only on an 'mpi'"),
        ({"from_bytes": 0, "algorithm": "mpi", "mpich": "Ring!"}, "allgather", "algorithm's name"),
        ({"from_bytes": 0, "algorithm": "mpi", "mpich": 3}, "allreduce", "algorithm's name"),
    ],
)
def test_a_tuning_rule_names_mpich_algorithms_of_mpi_allreduce_allgather_only(
    rule, collective, says
):
    doc = {"format": "hetcoll-tuning", "version": 1, "ranks": 2, "rules": {collective: [rule]}}
    with pytest.raises(HetcollError, match=says):
        load_tuning(doc)


def test_tune_measures_the_mpich_algorithms_and_writes_the_winners_rules(tmp_path):
    platform, out = tmp_path / "flat.json", tmp_path / "tuning.json"
    save_platform(Platform(nodes_from_costs([5e-6] * N, 1e-9), name="flat"), platform)
    args = ["hetcoll", "tune", "--platform", platform, "--collectives", "allreduce,allgather"]
    args += ["--sizes", "512", "--rounds", "2", "--candidates", "0", "--mpich-algorithms"]
    proc = run_mpi(N, [*args, "-o", out, "--json"], timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    from hetcoll.runtime.mpich_cvars import algorithms

    tuning = load_tuning(out)
    for row in tuning.measurements:
        assert "single_calls" not in row and 5 <= row["calls"] <= 1000
        plans = row["plans"]
        assert [p.get("mpich") for p in plans] == [None, *algorithms().names(row["collective"])]
        rule = tuning.lookup(row["collective"], row["nbytes"])
        assert (rule.algorithm, rule.mpich) == ("mpi", row["winner"].get("mpich"))
    assert json.loads(proc.stdout)["rules"].keys() == {"allreduce", "allgather"}


def test_a_failed_write_leaves_the_call_to_mpichs_own_selection(capfd):
    """A write MPI refuses: the call still runs (MPICH's own selection, the variables
    put back), its result right, nothing printed."""
    import copy

    import numpy as np
    from mpi4py import MPI

    from hetcoll.runtime.mpich_cvars import algorithms

    found = algorithms()
    start = found.current("allreduce")
    broken = copy.copy(found)
    broken.direct = False  # writes through MPI_T (a store into memory cannot fail)
    tried = []
    broken._write = lambda handle, ref: tried.append(handle) or 1  # MPI_T's error code
    forced = broken.forcing("allreduce", "ring", MPI.COMM_SELF.Allreduce)
    send, recv = np.arange(5, dtype=np.int64), np.zeros(5, dtype=np.int64)
    forced(send, recv)
    assert recv.tolist() == send.tolist() and found.current("allreduce") == start
    assert len(tried) == 3  # the refused write, then both variables put back
    assert capfd.readouterr() == ("", "")


def test_a_forced_call_writes_only_the_variables_that_change():
    """Through MPI_T (``direct`` off): the allgather's shared-memory variable starts at
    mpir, so forcing its algorithm writes one variable and puts it back (2 writes); the
    allreduce's starts at auto (4 writes)."""
    import copy

    import numpy as np
    from mpi4py import MPI

    from hetcoll.runtime.mpich_cvars import algorithms

    found = algorithms()
    assert found.current("allgather")[1] == "mpir" and found.current("allreduce")[1] == "auto"
    counting = copy.copy(found)
    counting.direct = False
    writes = []
    counting._write = lambda handle, ref: writes.append(handle) or found._write(handle, ref)
    buf, out = np.arange(4, dtype=np.int64), np.zeros(4, dtype=np.int64)
    counting.forcing("allgather", "ring", MPI.COMM_SELF.Allgather)(buf, out)
    assert len(writes) == 2 and out.tolist() == buf.tolist()
    counting.forcing("allreduce", "ring", MPI.COMM_SELF.Allreduce)(buf, out)
    assert len(writes) == 6 and out.tolist() == buf.tolist()


@pytest.mark.parametrize("collective", ["allreduce", "allgather"])
def test_a_forced_call_stores_into_the_variables_memory_not_through_mpi_t(collective):
    """Where the variables' memory is found (this MPICH), forcing makes no MPI_T write: the
    values MPI_T reads during the call are the forced ones, the start ones after it, for
    every algorithm."""
    import copy

    from mpi4py import MPI  # noqa: F401  (the process's MPICH)

    from hetcoll.runtime.mpich_cvars import algorithms

    found = algorithms()
    assert found.direct
    counting = copy.copy(found)
    writes = []
    counting._write = lambda handle, ref: writes.append(handle) or found._write(handle, ref)
    start = found.current(collective)
    seen = []
    for name in found.names(collective):
        forced = counting.forcing(
            collective, name, lambda *a: seen.append(found.current(collective))
        )
        forced(1, 2)
        assert seen.pop() == (name, "mpir") and found.current(collective) == start
    assert writes == []


def test_the_variables_memory_is_only_searched_in_writable_memory():
    """No writable mapping to find the address in: every write goes through MPI_T."""
    from mpi4py import MPI  # noqa: F401

    from hetcoll.runtime import mpich_cvars

    var = mpich_cvars.algorithms()._vars["allreduce"][0]
    assert mpich_cvars._cell(var, []) is None
    cell = mpich_cvars._cell(var, mpich_cvars._writable())
    assert cell is not None and cell.value == var.read() == var.start


def _fake_row(monkeypatch, per, plans=("ring", "tree"), rounds=3, mpi_call=1.0):
    """A row of ``measure_calls`` without MPI: ``per(plan's mpich, k)`` is the seconds per
    call a loop gives (k: how many loops were timed before); the plans seen in order, the
    calls per measurement and the row.  The first loop timed is of MPI's own, one call
    (``mpi_call`` seconds): how many calls a loop makes."""
    from types import SimpleNamespace

    from mpi4py import MPI

    from hetcoll.jobs import tune

    mpi = {"algorithm": "mpi", "segment_size": None}
    rows = [mpi, *({**mpi, "mpich": n} for n in plans)]
    seen, counts = [], []

    first = []

    def timed(comm, one, plan, calls):
        if not first:
            first.append(calls)
            return mpi_call * calls
        counts.append(calls)
        seen.append(plan.get("mpich"))
        return per(plan.get("mpich"), len(seen) - 1) * calls

    monkeypatch.setattr(tune, "_timed", timed)
    monkeypatch.setattr(
        tune, "_call", lambda hc, collective, nbytes, plain=False: lambda a, s: None
    )
    forced = {n: (lambda: None) for n in plans}
    monkeypatch.setattr(tune, "_forced_calls", lambda collective, plans, call: forced)
    hc = SimpleNamespace(base=MPI.COMM_SELF, emulate=False)
    row = tune.measure_calls(hc, "allreduce", 8, rows, rounds, 0.02)
    return seen, counts, row, rows


@pytest.mark.parametrize(
    ("ring", "tree", "kept", "rounds"),
    [
        (0.5, 2.0, "ring", 9),
        (2.0, 2.0, None, 3),
        (0.6, 0.5, "tree", 9),
        (1.2, 1.1, None, 3),
        (0.5, 1.1, "ring", 9),
    ],
)
def test_tunes_contenders_are_confirmed_against_mpi_by_a_sign_test(
    monkeypatch, ring, tree, kept, rounds
):
    """The two largest median speed-ups of the paired rounds (ring, tree) run again with
    MPI's own, the order rotated, 3 rounds at a time: a contender takes the rule only once
    it beats MPI's own in enough rounds for a sign test (9 of 9 at the third look), the
    faster of two head to head; none: MPI's own, as soon as neither leans faster."""
    first = {None: 1.0, "ring": 0.5, "tree": 0.7}
    later = {None: 1.0, "ring": ring, "tree": tree}

    def per(mpich, k):
        return (first if k < 9 else later)[mpich]

    seen, _, row, rows = _fake_row(monkeypatch, per)
    # 3 rounds of 3, then the confirmation's: MPI, ring, tree rotated and reversed in both
    # (none always after the same one)
    order = [None, "ring", "tree", "ring", None, "tree", "tree", None, "ring"]
    assert seen[:9] == order and seen[9:18] == order
    assert row["confirm_rounds"] == rounds and len(seen) == 9 + 3 * rounds
    assert row["confirmed"] == [1.0 / ring] * rounds
    assert row["first"] == "mpi:ring" and row["runner_up"]["plan"] == "mpi:tree"
    assert row["runner_up"]["speedup"] == [1.0 / tree] * rounds
    want = rows[0] if kept is None else rows[1 if kept == "ring" else 2]
    assert row["winner"] == want


def test_a_near_tie_keeps_mpis_own_where_winning_4_rounds_of_5_forced_it(monkeypatch):
    """Ring beats MPI's own in the first 5 rounds and in 4 of the 5 confirmation rounds
    (what the winner-of-4-in-5 rule forced), then in every other round: 9 of 15 leaves a
    sign test no chance by the last look, and MPI's own stays."""

    def per(mpich, k):
        if mpich is None:
            return 1.0
        if k < 10:
            return 0.9
        r = (k - 10) // 2  # the confirmation round
        return 0.99 if r < 4 or (r > 4 and r % 2) else 1.01

    _, _, row, rows = _fake_row(monkeypatch, per, plans=("ring",), rounds=5)
    assert row["confirmed"][:5] == [1 / 0.99] * 4 + [1 / 1.01]
    assert row["winner"] == rows[0]
    assert row["confirm_rounds"] == 15


@pytest.mark.parametrize(("mpi_call", "calls"), [(1.0, 5), (1e-3, 20), (1e-9, 1000)])
def test_a_row_of_mpich_algorithms_measures_loops_of_five_to_a_thousand_calls(
    monkeypatch, mpi_call, calls
):
    """Each measurement a loop of as many calls as take about ``loop`` (0.02 s) of MPI's
    own, but at least 5 (a loop took 1 call of a long one) and at most 1000, its time per
    call: what a program's loop of calls sees, as the benchmark measures it (with more
    ranks than cores, single calls between barriers ranked ``tree`` beside
    ``recursive_doubling`` at a 512 B allreduce on 4 ranks, where loops run it 1.5 times
    slower)."""
    seen, counts, row, _ = _fake_row(monkeypatch, lambda m, k: 1.0, mpi_call=mpi_call)
    assert "single_calls" not in row and row["calls"] == calls
    assert counts == [calls] * len(seen) and len(seen) == 9  # no winner: no confirmation
    assert all(p["times"] == [1.0] * 3 for p in row["plans"])  # seconds per call


def test_a_loop_is_one_barrier_then_the_calls_back_to_back(monkeypatch):
    """``_timed``: a barrier, the calls one after the other, the slowest rank's time."""
    from hetcoll.jobs import tune

    clock = iter([0.0, 6.0])
    monkeypatch.setattr(tune.time, "perf_counter", lambda: next(clock))
    events = []

    class Comm:
        def Barrier(self):
            events.append("barrier")

        def allreduce(self, mine, op):
            events.append("allreduce")
            return mine

    def one(*args):
        events.append(args)

    plan = {"algorithm": "mpi", "segment_size": None, "mpich": "ring"}
    assert tune._timed(Comm(), one, plan, 3) == 6.0
    assert events == ["barrier", *[("mpi", None, None, "ring")] * 3, "allreduce"]


@pytest.mark.parametrize("collective", ["allreduce", "allgather"])
def test_a_single_calls_row_runs_mpis_own_on_the_plain_communicator(collective):
    """Natively a row with MPICH's algorithms calls MPI's own as a HetComm runs it (the
    communicator's method), and the wrapper for a plan of hetcoll's."""
    from types import SimpleNamespace

    from hetcoll.jobs import tune

    ran = []
    base = SimpleNamespace(Allreduce=lambda *a, **k: ran.append("base"))
    base.Allgather = base.Allreduce
    hc = SimpleNamespace(base=base, rank=0, size=2, Allgather=lambda *a, **k: ran.append("hc"))
    hc.Allreduce = hc.Allgather
    call = tune._call(hc, collective, 64, plain=True)
    call("mpi", None)
    call("eff_cube", None)
    assert ran == ["base", "hc"]
    tune._call(hc, collective, 64)("mpi", None)
    assert ran == ["base", "hc", "hc"]


def test_tunes_forced_candidate_is_the_plain_call_inside_hetcomms_own_forcing():
    """What tune times for a forced algorithm is the communicator's method inside
    ``Algorithms.forcing`` (the wrapper a HetComm runs): the cost of forcing is in the
    measured time, so an algorithm gaining less than it costs loses to MPI's own."""
    from types import SimpleNamespace

    from mpi4py import MPI  # noqa: F401  (the process's MPICH)

    from hetcoll.jobs import tune
    from hetcoll.runtime.mpich_cvars import algorithms

    found = algorithms()
    seen = []
    base = SimpleNamespace(Allreduce=lambda *a, **k: seen.append(found.current("allreduce")))
    hc = SimpleNamespace(base=base, rank=0, size=2, Allreduce=None)
    plans = [{"algorithm": "mpi", "segment_size": None, "mpich": n} for n in ("ring", "tree")]
    forced = tune._forced_calls("allreduce", plans, tune._call(hc, "allreduce", 64, plain=True))
    forced["tree"]()
    forced["ring"]()
    assert seen == [("tree", "mpir"), ("ring", "mpir")]
    assert found.current("allreduce") == ("auto", "auto")


def test_tunes_forced_call_stores_around_the_plain_method_itself():
    """A row of MPICH's algorithms forces around the plain communicator's method, called
    with the same arguments as MPI's own (not around MPI's own call wrapped in two more
    Python functions, which charged every forced algorithm work MPI's own was spared)."""
    from mpi4py import MPI  # noqa: F401

    from hetcoll.jobs import tune
    from hetcoll.runtime.mpich_cvars import algorithms

    found = algorithms()
    start = found.current("allreduce")
    seen = []

    def method(*args):
        seen.append((args, found.current("allreduce")))

    def run(algo, seg):
        seen.append("wrapped")

    run.plain = (method, (1, 2, 3))
    forced = tune._forced_calls("allreduce", [{"mpich": "ring"}, {"mpich": "tree"}], run)
    forced["ring"]()
    forced["tree"]()
    assert seen == [((1, 2, 3), ("ring", "mpir")), ((1, 2, 3), ("tree", "mpir"))]
    assert found.current("allreduce") == start
