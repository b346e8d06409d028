"""The probe's measured size curve: per-byte costs by message size, fitted, stored, used.

A host whose per-byte cost changes with the size (here 1.57 ns/B below 16 MiB and 3.55 ns/B
above, as measured on this project's host) cannot be predicted within 20 % by one per-byte
cost; the curve reproduces it exactly at and between the probed sizes.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from _cli import one_line_error, run
from hetcoll import Platform, load_platform, plan, save_platform, simulate
from hetcoll.errors import ModelError, PlatformError
from hetcoll.mpich import native, predict
from hetcoll.platform import nodes_from_costs
from hetcoll.runtime.probe import fit_platform, size_curve
from hetcoll.sizecurve import SizeCurve

MIB = 1 << 20
SIZES = (0, 4096, 65536, MIB, 16 * MIB, 64 * MIB)
#: the host's effective bytes: 1.57 ns/B up to 16 MiB, 3.55 ns/B beyond, in units of the
#: large-message cost (the last segment scales 1)
HOST = SizeCurve((0, 16 * MIB), (1.57 / 3.55, 1.0))
T_INI = np.array([20e-6, 20e-6, 35e-6, 50e-6])
T_BYTE = np.array([1.0, 1.0, 1.5, 2.0]) * 1.775e-9  # per node; a pair sums two


def host_rtt(sizes, curve=HOST) -> np.ndarray:
    """Round trips ``o_u + o_v + (b_u + b_v) * effective(n)``, N x N x sizes."""
    eff = np.array([curve.effective(s) for s in sizes])
    one = T_INI[:, None] + T_BYTE[:, None] * eff[None, :]
    rtt = one[:, None, :] + one[None, :, :]
    for k in range(len(sizes)):
        np.fill_diagonal(rtt[:, :, k], 0.0)
    return rtt


def model_rtt(platform: Platform, u: int, v: int, n: int) -> float:
    bound = platform.model.bind(platform)
    return bound.delay(u, v, n) + bound.delay(v, u, n)


def test_the_fitted_curve_predicts_every_size_exactly():
    """Fitted on the measured sizes, the platform's model gives the host's round trips at
    every measured size, between them and beyond the last (the last segment goes on)."""
    probed, fit = fit_platform(host_rtt(SIZES), SIZES, [str(i) for i in range(4)], tolerance=0)
    assert probed.size_curve is not None
    assert fit["size_curve"] == probed.size_curve.to_list()
    assert np.allclose(probed.t_ini, T_INI, rtol=1e-9)
    assert np.allclose(probed.t_byte, T_BYTE, rtol=1e-9)  # the largest messages' cost
    check = (0, 100, 4096, 30000, MIB, 5 * MIB, 16 * MIB, 40 * MIB, 64 * MIB, 256 * MIB)
    want = host_rtt(check)
    for u, v in ((0, 1), (0, 3), (2, 3)):
        got = [model_rtt(probed, u, v, n) for n in check]
        assert np.allclose(got, want[u, v], rtol=1e-9), (u, v)


def test_one_per_byte_cost_misses_that_host_by_more_than_20_percent():
    """What the probe did before: one per-byte cost for 0 B-64 MiB."""
    probed, fit = fit_platform(
        host_rtt(SIZES), SIZES, [str(i) for i in range(4)], tolerance=0, curve=False
    )
    assert probed.size_curve is None and fit["size_curve"] is None
    errors = [abs(model_rtt(probed, 0, 3, n) / host_rtt([n])[0, 3, 0] - 1) for n in SIZES[3:]]
    assert max(errors) > 0.20, errors


def test_the_curve_is_the_median_over_pairs_of_the_segment_costs():
    """One pair whose large messages are slow does not move the host's curve."""
    rtt = host_rtt(SIZES)
    rtt[0, 1, -1] = rtt[1, 0, -1] = rtt[0, 1, -1] * 1.5
    curve = size_curve(rtt, SIZES, 0.0)
    assert curve.starts == (0, 4096, 65536, MIB, 16 * MIB)
    assert np.allclose(curve.scales, [1.57 / 3.55] * 4 + [1.0], rtol=1e-9)


@pytest.mark.parametrize(
    "sizes, why",
    [((0, 4096), "two sizes: one segment"), ((0, 4096, 4096), "a repeated size")],
)
def test_no_curve_without_two_segments(sizes, why):
    assert size_curve(host_rtt(sizes), sizes, 0.0) is None, why


def test_an_affine_host_gets_no_curve():
    """Within the tolerance one per-byte cost explains it: the file stays as it was."""
    flat = SizeCurve((0,), (1.0,))
    rtt = host_rtt(SIZES, flat) * (1 + 0.01 * np.arange(len(SIZES)) % 2)
    assert size_curve(rtt, SIZES, 0.05) is None
    probed, _ = fit_platform(host_rtt(SIZES, flat), SIZES, list("abcd"))
    assert probed.size_curve is None and "size_curve" not in probed.to_dict()


def test_the_file_round_trips(tmp_path):
    curved = Platform(nodes_from_costs(T_INI, T_BYTE), name="host", size_curve=HOST.to_list())
    path = tmp_path / "p.json"
    save_platform(curved, path)
    doc = json.loads(path.read_text())
    assert doc["size_curve"] == [[0, 1.57 / 3.55], [16 * MIB, 1.0]]
    back = load_platform(path)
    assert back.size_curve == HOST
    for n in (0, 12345, 16 * MIB, 50 * MIB):
        assert model_rtt(back, 0, 2, n) == model_rtt(curved, 0, 2, n)
    units = load_platform({**doc, "size_curve": [[0, 0.5], ["16MiB", 1]]})
    assert units.size_curve == SizeCurve((0, 16 * MIB), (0.5, 1.0))


@pytest.mark.parametrize(
    "curve, message",
    [
        ("fast", "size_curve: must be a non-empty list"),
        ([], "size_curve: must be a non-empty list"),
        ([[0, 1.0, 2.0]], "size_curve[0]: must be a [start, scale] pair"),
        ([[4096, 1.0]], "size_curve[0]: must start at 0 bytes"),
        ([[0, 1.0], [4096, 1.0], [4096, 2.0]], "size_curve[2]: starts must increase"),
        ([[0, -1.0]], "size_curve[0][1]"),
        ([[0, "nan"]], "size_curve[0][1]"),
        ([[0, 1.0], [-5, 1.0]], "size_curve[1][0]"),
        ([[0, 1.0], ["big", 1.0]], "size_curve[1][0]"),
    ],
)
def test_a_malformed_curve_is_one_line_and_exit_2(capsys, tmp_path, curve, message):
    doc = {"nodes": [{"id": "a", "t_ini": 1e-5}, {"id": "b"}], "size_curve": curve}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(PlatformError, match=r"size_curve"):
        load_platform(doc)
    code, out, err = run(capsys, "plan", path, "--root", "a")
    one_line_error(code, out, err, message)


def test_a_constant_curve_is_a_scaled_per_byte_cost():
    """``[[0, 2]]`` is every per-byte term doubled: the simulator's time of every plan and
    MPI's own algorithm's (what auto compares) are the doubled platform's, exactly."""
    nodes = nodes_from_costs(T_INI, T_BYTE)
    curved = Platform(nodes, size_curve=[[0, 2.0]])
    doubled = Platform(nodes_from_costs(T_INI, 2 * T_BYTE))
    for method in ("fnf", "binomial", "flat"):
        for n in (0, 1000, 8 * MIB):
            tree = plan(curved, "0", method=method, nbytes=n)
            assert tree.tree == plan(doubled, "0", method=method, nbytes=n).tree
            want = simulate(doubled, tree).makespan
            assert simulate(curved, tree).makespan == pytest.approx(want, rel=1e-12)
    for n in (8, 64 * 1024, 8 * MIB):
        prog = native("bcast", curved.ids, n).program
        assert predict(curved, prog) == pytest.approx(predict(doubled, prog), rel=1e-12)


def test_a_model_that_shares_links_refuses_a_curve():
    star = {
        "model": "nic",
        "nodes": [{"id": x, "bandwidth": "1GBps", "latency": "1us"} for x in "abc"],
        "size_curve": [[0, 1.0], [4096, 2.0]],
    }
    with pytest.raises(ModelError, match="size_curve"):
        plan(load_platform(star), "a", method="flat").tree  # noqa: B018
    with pytest.raises(ModelError, match="size_curve"):
        load_platform(star).model.bind(load_platform(star))


def test_unscaling_a_probed_platform_keeps_its_curve():
    """The probe of an emulation at ``time_scale`` divided back: every cost, curve kept."""
    from hetcoll.compare import _unscaled

    curved = Platform(nodes_from_costs(T_INI, T_BYTE), size_curve=HOST.to_list())
    back = _unscaled(curved, 4.0)
    assert back.size_curve == HOST
    for n in (0, MIB, 32 * MIB):
        assert model_rtt(back, 0, 2, n) == pytest.approx(model_rtt(curved, 0, 2, n) / 4, rel=1e-12)
