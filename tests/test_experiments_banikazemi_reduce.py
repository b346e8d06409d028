"""The Sec. 7.2 structure for reduce and gather: its trial function and its result."""

from __future__ import annotations

import pytest

from hetcoll.experiments import EXPERIMENTS, Config
from hetcoll.experiments.banikazemi_reduce import GAMMA_FAST, PLANNERS, _point, hnow, reduce_foi


def test_hnow_gives_slow_nodes_a_slower_combine():
    p = hnow(4, 3)
    fast = p.t_ini == p.t_ini.min()
    assert fast.sum() == 16
    assert set(p.gamma[fast]) == {GAMMA_FAST}
    assert set(p.gamma[~fast]) == {4 * GAMMA_FAST}


@pytest.mark.parametrize("collective", ["reduce", "gather"])
def test_ours_never_slower_than_binomial_or_fnf(collective):
    """rooted_ls starts from binomial's and FNF's trees backwards and times them exactly
    under tini, so its mean cannot exceed theirs; on this HNOW it gains clearly."""
    lat = _point((collective, 4, 16, 4, 5))
    assert set(lat) == set(PLANNERS)
    assert lat["rooted_ls"] <= lat["binomial"] * (1 + 1e-12)
    assert lat["rooted_ls"] <= lat["fnf"] * (1 + 1e-12)
    assert lat["binomial"] / lat["rooted_ls"] > 1.5


def test_same_seed_same_numbers():
    task = ("reduce", 2, 8, 2, 11)
    assert _point(task) == _point(task)


def test_result_shape(monkeypatch):
    import hetcoll.experiments.banikazemi_reduce as b

    monkeypatch.setattr(b, "MEMBERS", (4,))
    monkeypatch.setattr(b, "SPEEDS", (2,))
    assert "banikazemi-reduce" in EXPERIMENTS
    result = reduce_foi(Config(trials=1, seed=1, workers=1))
    points = result.data["points"]
    assert [(p["collective"], p["members"]) for p in points] == [("reduce", 4), ("gather", 4)]
    for point in points:
        lat = point["latency"]
        assert point["foi"]["rooted_ls"] == pytest.approx(lat["binomial"] / lat["rooted_ls"])
    assert len(result.tables) == 1
