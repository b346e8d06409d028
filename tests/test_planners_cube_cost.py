"""calc_cost (Figueira & Reddi, Sec. 5.1) and Eff_Cube's local cost (Sec. 4.3, Fig. 4-5)."""

from __future__ import annotations

import doctest

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hetcoll.generators.topology
import hetcoll.planners.cube_embedding
import hetcoll.planners.hypercube
from hetcoll.planners.cube_embedding import calc_cost, eff_embedding, local_cost


def paper_calc_cost(w, positions):
    """The paper's pseudocode, line by line, in plain Python (the reference)."""
    p = len(positions)
    d = p.bit_length() - 1
    node = list(positions)
    if d == 0:
        return 0.0
    cost = [w[node[x]][node[x ^ 1]] for x in range(p)]  # 1st dimension
    for i in range(1, d):
        cost = [max(cost[x], cost[x ^ (1 << i)]) for x in range(p)]
        cost = [cost[x] + w[node[x]][node[x ^ (1 << i)]] for x in range(p)]
    return max(cost)


def fig4_weights() -> np.ndarray:
    """Fig. 4-5: the costs of nodes 3, 5 and 7 to nodes 0, 1, 2 are the paper's; the other
    pairs cost 20 (nodes 4 and 6 are farther than node 7 from 0, 1, 2)."""
    w = np.full((8, 8), 20.0)
    np.fill_diagonal(w, 0.0)
    for k, costs in {3: (13, 12, 0), 5: (11, 9, 3), 7: (10, 4, 3)}.items():
        w[k, :3] = w[:3, k] = costs
    return w


def test_fig4_local_costs_25_23_17():
    w = fig4_weights()
    positions = np.array([-1, 0, 1, -1, 2, -1, -1, -1])  # Fig. 4 left: 0, 1, 2 around 0
    costs = local_cost(w, positions, 0)
    assert costs[[3, 5, 7]].tolist() == [25.0, 23.0, 17.0]
    assert costs[[4, 6]].min() > 17


def test_fig5_eff_cube_chooses_node_7():
    positions, folds = eff_embedding(fig4_weights())
    assert folds == ()
    # neighbours of position 0 are nodes 0, 1, 2; position 0 gets node 7 (Fig. 5, left)
    assert positions[[1, 2, 4]].tolist() == [0, 1, 2]
    assert positions[0] == 7
    assert sorted(positions.tolist()) == list(range(8))


def test_fig4_cube_cost_by_hand():
    # Eff_Cube on these costs, traced by hand: position 0 <- 7 (17); position 3 (neighbours
    # hold 1 and 0) <- 5 (9 + 11 = 20 < 25 for node 3); position 5 (2, 0) <- 3 (0 + 13);
    # position 6 (2, 1) <- 4 (40, tie with 6: lowest index); position 7 <- 6, the last.
    w = fig4_weights()
    positions, _ = eff_embedding(w)
    assert positions.tolist() == [7, 0, 1, 5, 2, 3, 4, 6]
    # dim 0: (7,0)=10 (1,5)=9 (2,3)=0 (4,6)=20    -> 10 10  9  9  0  0 20 20
    # dim 1: (7,1)=4 (0,5)=11 (2,4)=20 (3,6)=20   -> 14 21 14 21 40 40 40 40
    # dim 2: (7,2)=3 (0,3)=13 (1,4)=20 (5,6)=20   -> 43 53 60 60 43 53 60 60
    assert calc_cost(w, positions) == 60.0
    assert paper_calc_cost(w, positions) == 60.0
    c = hetcoll.planners.cube_embedding.finish_times(w, positions)
    assert c.tolist() == [43, 53, 60, 60, 43, 53, 60, 60]


def test_small_cubes_by_hand():
    assert calc_cost([[0]], [0]) == 0.0
    assert calc_cost([[0, 7], [7, 0]], [1, 0]) == 7.0
    # square 0-1 / 2-3: dimension 0 costs 1 and 4; dimension 1 adds 2 (0-2) or 3 (1-3)
    # after waiting for the slower pair: max(1, 4) + 3 = 7
    w = [[0, 1, 2, 9], [1, 0, 9, 3], [2, 9, 0, 4], [9, 3, 4, 0]]
    assert calc_cost(w, [0, 1, 2, 3]) == 7.0
    # 0-3 and 1-2 first (9 each), then 0-1 (1) and 3-2 (4): 9 + 4 = 13
    assert calc_cost(w, [0, 3, 1, 2]) == 13.0


def test_fold_by_hand():
    # node 4 folds into node 0: node 0 starts at 2; dimension 0: 2+1 = 3 (pair 0-1), 4 (2-3);
    # dimension 1: max(3, 4) + 2 = 6 at node 0, the extra gets the result at 6 + 2 = 8
    w = np.array(
        [
            [0, 1, 2, 9, 2],
            [1, 0, 9, 3, 9],
            [2, 9, 0, 4, 9],
            [9, 3, 4, 0, 9],
            [2, 9, 9, 9, 0],
        ],
        dtype=float,
    )
    assert calc_cost(w, [0, 1, 2, 3], [(4, 0)]) == 8.0
    assert calc_cost(w[:4, :4], [0, 1, 2, 3]) == 7.0


@given(
    d=st.integers(0, 5),
    data=st.data(),
)
def test_calc_cost_is_the_paper_pseudocode(d, data):
    n = 1 << d
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    w = rng.integers(1, 21, size=(n, n)).astype(float)
    w = np.triu(w, 1) + np.triu(w, 1).T
    positions = rng.permutation(n)
    assert calc_cost(w, positions) == paper_calc_cost(w.tolist(), positions.tolist())


@pytest.mark.parametrize(
    ("weights", "positions", "folds", "message"),
    [
        ([[0, 1, 2], [1, 0, 3]], [0, 1], (), "square matrix, got shape (2, 3)"),
        ([[0, float("nan")], [1, 0]], [0, 1], (), "weights[0][1]: must be a finite number"),
        ([[0, -1], [-1, 0]], [0, 1], (), "weights[0][1]: must be a finite number >= 0"),
        ([[0, 1], [2, 0]], [0, 1], (), "must be symmetric (one cost per pair)"),
        ([[0, 1, 1], [1, 0, 1], [1, 1, 0]], [0, 1, 2], (), "power of two"),
        ([[0, 1], [1, 0]], [0, 0], (), "appears twice"),
        ([[0, 1], [1, 0]], [0, 2], (), "node indices must be in 0..1"),
        ([[0, 1], [1, 0]], [0.5, 1], (), "sequence of node indices"),
        ([[0, 1, 1], [1, 0, 1], [1, 1, 0]], [0, 1], [(5, 0)], "must be in 0..2"),
        ([[0, 1, 1], [1, 0, 1], [1, 1, 0]], [0], [(1, 2)], "partner must be"),
        ("abc", [0], (), "square matrix of numbers"),
    ],
)
def test_bad_input_one_clear_line(weights, positions, folds, message):
    with pytest.raises(ValueError) as info:
        calc_cost(weights, positions, folds)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_doctests():
    for module in (
        hetcoll.planners.cube_embedding,
        hetcoll.planners.hypercube,
        hetcoll.generators.topology,
    ):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, module.__name__
        assert result.attempted > 0
