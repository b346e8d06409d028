"""``hetcoll tune``'s decision on paired rounds, as pure functions of synthetic timings
(``jobs/tune.py``: :func:`pick` over the first rounds, :func:`settle` over the
confirmation rounds, :func:`rotation` the rounds' order): MPI's own stays unless a
candidate is faster in a clear majority of the paired rounds, and among near-equals the
one faster head to head wins, not the one with one lucky round."""

from __future__ import annotations

import numpy as np
import pytest

from hetcoll.jobs.tune import WIN_SHARE, pick, rotation, settle


def _plans(times: dict[str, list[float]]) -> list[dict]:
    """Plans as ``measure_calls`` records them: ``"mpi"`` first (MPI's own), the others
    MPICH algorithms forced; a speed-up per round is MPI's own time over the plan's."""
    mpi = np.array(times["mpi"])
    return [
        {
            "algorithm": "mpi",
            "segment_size": None,
            **({"mpich": name} if name != "mpi" else {}),
            "speedup": list(mpi / np.array(t)),
        }
        for name, t in times.items()
    ]


def test_mpi_stays_unless_beaten_in_a_clear_majority_of_rounds():
    # ring is 2x faster in 3 rounds of 5 and slower in 2: its median wins, not its rounds
    times = {"mpi": [10, 10, 10, 10, 10], "ring": [5, 5, 5, 11, 12]}
    assert pick(_plans(times)) == {"algorithm": "mpi", "segment_size": None}
    times["ring"] = [9.9, 9.9, 9.9, 9.9, 12]  # faster in 4 of 5 (WIN_SHARE), by 1 %
    assert WIN_SHARE == 0.8
    assert pick(_plans(times))["mpich"] == "ring"


def test_among_winners_the_one_faster_head_to_head_takes_the_rule():
    # both beat MPI's own in every round; tree has the smaller median time (7 against
    # ring's 8), ring is faster than tree in 3 rounds of 5: a HetComm running tree would
    # lose to ring in most rounds, one running ring to tree in 2 of 5
    times = {
        "mpi": [12, 12, 12, 12, 12],
        "tree": [2, 2, 7, 7, 10],
        "ring": [1, 1, 8, 9, 9],
        "brucks": [11, 11, 11, 11, 11],
    }
    assert pick(_plans(times))["mpich"] == "ring"
    times["ring"] = [1, 1, 8, 9, 11]  # now tree is faster than ring in 3 rounds of 5
    assert pick(_plans(times))["mpich"] == "tree"


def test_a_head_to_head_tie_goes_to_the_larger_median_then_the_first_listed():
    # a beats b in rounds 0-1, b beats a in rounds 2-3 (a tie), both beat c: one win each;
    # the median speed-ups: a's 1.625 (10/5, 10/8), b's 1.548 (10/6, 10/7)
    times = {"mpi": [10] * 4, "b": [6, 6, 7, 7], "a": [5, 5, 8, 8], "c": [9, 9, 9, 9]}
    assert pick(_plans(times))["mpich"] == "a"
    same = {"mpi": [10] * 4, "b": [5] * 4, "a": [5] * 4}
    assert pick(_plans(same))["mpich"] == "b"


def test_a_plan_measured_with_a_spin_is_never_picked():
    plans = _plans({"mpi": [10] * 5, "ring": [5] * 5})
    plans[1]["spin"] = 1e-3
    assert pick(plans) == {"algorithm": "mpi", "segment_size": None}


@pytest.mark.parametrize(
    ("times", "want"),
    [
        # the winner beats MPI's own in 4 of 5 confirmation rounds; the runner-up in none
        ([[10] * 5, [9, 9, 9, 9, 11], [11] * 5], 1),
        # both qualify: the runner-up faster than the winner in 3 rounds of 5 takes it
        ([[10] * 5, [8, 8, 8, 6, 6.5], [7, 7, 7, 7, 7]], 2),
        # both qualify, each faster in half the rounds: the winner keeps it
        ([[10] * 4, [8, 8, 6, 6], [7, 7, 7, 7]], 1),
        # the winner's first rounds were luck; the runner-up beats MPI's own in 5 of 5
        ([[10] * 5, [9, 11, 11, 9, 11], [9.5] * 5], 2),
        # neither beats MPI's own in 4 of 5: MPI's own stays
        ([[10] * 5, [9, 9, 9, 11, 11], [9, 9, 9, 11, 11]], 0),
        # no runner-up
        ([[10] * 5, [9, 9, 9, 9, 9]], 1),
        ([[10] * 5, [9, 9, 9, 11, 11]], 0),
    ],
)
def test_settle_decides_on_the_confirmation_rounds_paired_ratios(times, want):
    assert settle(times) == want


@pytest.mark.parametrize("n", [2, 3, 10])
def test_rotation_puts_each_candidate_first_and_after_different_ones(n):
    orders = [rotation(n, r) for r in range(2 * n)]
    assert all(sorted(o) == list(range(n)) for o in orders)
    assert {o[0] for o in orders} == set(range(n))
    # nobody always runs right after the same one (a busy host's pattern shared alike)
    for k in range(n):
        before = {o[o.index(k) - 1] for o in orders if o.index(k) > 0}
        assert len(before) > 1 or n == 2
