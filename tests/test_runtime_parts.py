"""Runtime pieces that need no mpiexec: forecaster, tournament, fit, buffer specs, imports."""

from __future__ import annotations

import itertools
import subprocess
import sys

import numpy as np
import pytest

from hetcoll import HetcollError, load_platform, plan
from hetcoll.generators import testbed as make_testbed


def test_import_hetcoll_does_not_initialise_mpi():
    code = "import sys, hetcoll; hetcoll.plan; print('mpi4py.MPI' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_hetcomm_is_exported_lazily():
    import hetcoll
    from hetcoll.runtime import HetComm

    assert hetcoll.HetComm is HetComm
    with pytest.raises(AttributeError):
        hetcoll.NoSuchThing  # noqa: B018


def test_testbed_generator_is_the_builtin_testbed16():
    a, b = make_testbed(16, 8), load_platform("testbed16")
    assert np.allclose(a.t_ini, b.t_ini) and np.allclose(a.t_byte, b.t_byte)
    assert make_testbed(16, 2).t_ini.tolist().count(690e-6) == 2


@pytest.mark.parametrize("n", [2, 3, 6, 7, 16])
def test_tournament_meets_every_pair_once_in_disjoint_rounds(n):
    from hetcoll.runtime.probe import tournament

    rounds = tournament(n)
    seen = [p for r in rounds for p in r]
    assert sorted(seen) == list(itertools.combinations(range(n), 2))
    for r in rounds:
        ranks = [x for p in r for x in p]
        assert len(ranks) == len(set(ranks))


def test_fit_recovers_node_and_pair_costs_exactly():
    from hetcoll.runtime.probe import fit_platform

    t_ini = np.array([1.0, 2.0, 1.0, 3.0, 2.0]) * 1e-3
    t_byte = np.array([1.0, 1.0, 2.0, 2.0, 1.0]) * 1e-8
    sizes = [0, 1000, 8000]
    n = len(t_ini)
    lat = np.zeros((n, n))
    lat[0, 1] = lat[1, 0] = 50e-6  # one slow link
    rtt = np.zeros((n, n, len(sizes)))
    for s, m in enumerate(sizes):
        rtt[:, :, s] = (t_ini[:, None] + t_ini[None]) + m * (t_byte[:, None] + t_byte[None])
        rtt[:, :, s] += 2 * lat
        np.fill_diagonal(rtt[:, :, s], 0)
    p, _ = fit_platform(rtt, sizes, [str(i) for i in range(n)], tolerance=0)
    assert np.allclose(p.t_ini, t_ini, rtol=0.03)
    assert np.allclose(p.t_byte, t_byte, rtol=1e-6)
    assert p.to_dict()["model"] == "tini"


def test_speed_classes_merge_noise_but_keep_classes():
    from hetcoll.runtime.probe import speed_classes

    got = speed_classes(np.array([0.70, 1.50, 0.71, 1.52, 0.69]), 0.05)
    assert got[0] == got[2] == got[4] == pytest.approx(0.70)
    assert got[1] == got[3] == pytest.approx(1.51)
    assert speed_classes(np.array([1.0, 1.2]), 0.05).tolist() == [1.0, 1.2]


def test_probed_classes_give_the_true_fnf_tree():
    from hetcoll.runtime.probe import fit_platform

    true = make_testbed(8, 4)
    rng = np.random.default_rng(1)
    t = true.t_ini * (1 + rng.uniform(-0.03, 0.03, 8))  # measurement noise
    rtt = (t[:, None] + t[None])[:, :, None].repeat(2, axis=2)
    rtt[:, :, 1] += 1000 * 2 * 5.16e-8
    for s in range(2):
        np.fill_diagonal(rtt[:, :, s], 0)
    probed, _ = fit_platform(rtt, [0, 1000], true.ids)
    assert plan(probed, "0", method="fnf").tree == plan(true, "0", method="fnf").tree


def test_forecaster_follows_a_level_shift_and_ignores_an_outlier():
    from hetcoll.runtime.forecast import Forecaster

    f = Forecaster()
    for x in [1.0, 1.0, 1.0, 1.0, 5.0, 1.0, 1.0, 1.0]:
        f.update(np.array([x, x]))
    assert f.forecast().tolist() == [1.0, 1.0]
    g = Forecaster()
    for x in [1.0] * 5 + [2.0] * 8:
        g.update(np.array([x]))
    assert g.forecast()[0] == pytest.approx(2.0, rel=0.05)
    assert sum(g.winner_counts().values()) == 1


def test_as_bytes_reads_mpi4py_buffer_specs():
    from mpi4py import MPI

    from hetcoll.runtime import as_bytes

    a = np.arange(10, dtype=np.float64)
    assert len(as_bytes(a, True, "x")) == 80
    assert len(as_bytes([a, MPI.DOUBLE], True, "x")) == 80
    assert len(as_bytes([a, 3, MPI.DOUBLE], True, "x")) == 24
    with pytest.raises(HetcollError, match="read-only"):
        as_bytes(b"abc", True, "Bcast buf")
    with pytest.raises(HetcollError, match="contiguous"):
        as_bytes(a[::2], True, "x")
    with pytest.raises(HetcollError, match="count 11"):
        as_bytes([a, 11, MPI.DOUBLE], True, "x")


def test_single_rank_collectives_return_at_once():
    from mpi4py import MPI

    from hetcoll.platform import Platform, nodes_from_costs
    from hetcoll.runtime import HetComm

    p = Platform(nodes_from_costs([1e-3]))
    with HetComm(MPI.COMM_SELF, p) as hc:
        buf = np.arange(5)
        hc.Bcast(buf, 0)
        assert hc.bcast({"a": 1}, 0) == {"a": 1}
        assert buf.tolist() == [0, 1, 2, 3, 4]


def test_platform_size_must_match_the_communicator():
    from mpi4py import MPI

    from hetcoll.errors import PlatformError
    from hetcoll.runtime import HetComm

    with pytest.raises(PlatformError, match="16 nodes but the communicator has 1 rank"):
        HetComm(MPI.COMM_SELF, "testbed16")
