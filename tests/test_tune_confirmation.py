"""``hetcoll tune``'s confirmation of MPICH's algorithms on synthetic timings
(``jobs/confirmation.py``): MPI's own stays unless a forced algorithm is significantly
faster by a paired sign test, more rounds run only while the decision is close, and a row
of ``measure_calls`` follows that rule."""

from __future__ import annotations

import numpy as np
import pytest

from hetcoll.jobs import confirmation
from hetcoll.jobs.confirmation import LEVEL, decide, looks, sign_p


def _run(times_of, rounds: int, contenders: int = 1):
    """The confirmation as :func:`~hetcoll.jobs.confirmation.confirm` runs it, on rounds
    ``times_of(r)`` (a column: MPI's own, then each contender): the verdict and rounds."""
    cols: list = []
    for upto in looks(rounds):
        while len(cols) < upto:
            cols.append(times_of(len(cols)))
        verdict = decide(np.array(cols).T, rounds)
        if verdict is not None:
            return verdict, len(cols)
    raise AssertionError("no verdict at the last look")


def test_sign_p_is_the_binomial_tail():
    assert sign_p(0, 7) == 1.0
    assert sign_p(15, 15) == 2.0**-15
    assert sign_p(13, 15) == pytest.approx((1 + 15 + 105) / 2**15)


@pytest.mark.parametrize("contenders", [1, 2, 3])
def test_equal_speeds_replace_mpis_own_in_fewer_than_the_level_of_rows(contenders):
    """Contenders as fast as MPI's own (times from one distribution, a round's noise
    shared by none): over 2000 rows, MPI's own is replaced in at most ``LEVEL`` of them,
    though the rule peeks after every look (the level is shared by the looks).  The
    winner-of-4-in-5 rule replaced it in about a fifth of the rows per contender.  Few
    rounds on average: the looks stop where no contender leans faster."""
    rng = np.random.default_rng(7)
    replaced, rounds = 0, 0
    for _ in range(2000):
        verdict, n = _run(lambda r: rng.lognormal(0.0, 0.05, contenders + 1), 5)
        replaced += verdict != 0
        rounds += n
    assert replaced <= LEVEL * 2000
    assert rounds / 2000 < 12


def test_a_truly_faster_algorithm_takes_the_rule():
    """3 % faster with 1.5 % noise per round (a round's win about 0.92 of the time): it
    takes the rule in nearly every row, with more rounds than the first five."""
    rng = np.random.default_rng(11)
    kept, rounds = [], []
    for _ in range(300):
        verdict, n = _run(lambda r: rng.lognormal(0.0, 0.015, 2) * [1.0, 0.97], 5)
        kept.append(verdict)
        rounds.append(n)
    assert np.mean(np.array(kept) == 1) >= 0.95
    # 5 of 5 is not significant at LEVEL / 4: a rule taken after 10 rounds at least
    assert min(n for v, n in zip(kept, rounds, strict=True) if v == 1) >= 10


def test_more_rounds_only_while_the_decision_is_close():
    # losing at once: the first look keeps MPI's own
    assert _run(lambda r: [1.0, 1.1], 5) == (0, 5)
    # winning every round: decided at the second look
    assert _run(lambda r: [1.0, 0.9], 5) == (1, 10)
    # winning 4 of the first 5, then every other: close until 8 of 15 leaves no chance
    pattern = [0.9] * 4 + [1.1, 0.9] * 8
    assert _run(lambda r: [1.0, pattern[r]], 5) == (0, 15)


def test_of_two_significant_contenders_the_faster_head_to_head_takes_it():
    # both beat MPI's own in every round; b beats a in 6 of 10 rounds: b
    a = [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
    b = [0.4, 0.4, 0.4, 0.4, 0.4, 0.4, 0.6, 0.6, 0.6, 0.6]
    assert decide([[1.0] * 10, a, b], 5) == 2
    # each faster in half the rounds: the larger median speed-up (a's 2.22 against 2.08)
    a, b = [0.45] * 10, [0.4] * 5 + [0.6] * 5
    assert decide([[1.0] * 10, a, b], 5) == 1
    assert decide([[1.0] * 10, [0.5] * 10, b], 5) == 2  # against 2.0
    # alike in every way: the first chosen
    assert decide([[1.0] * 10, a, a], 5) == 1


def test_contenders_are_the_three_largest_median_speedups_above_one():
    speedups = [[0.9] * 3, [1.02] * 3, [1.2, 0.9, 1.3], [1.05] * 3, [1.0] * 3, [1.01] * 3]
    assert confirmation.contenders(speedups) == [2, 3, 1]
    assert confirmation.contenders([[1.0] * 3, [0.99] * 3]) == []


def test_of_three_significant_contenders_the_one_beating_both_others_takes_it():
    # all beat MPI's own in every round; c beats a and b in 6 of 10 rounds each
    a, b = [0.5] * 10, [0.5] * 10
    c = [0.45] * 6 + [0.55] * 4
    assert decide([[1.0] * 10, a, b, c], 5) == 3
    # a and b each beat c and neither the other: the larger median speed-up (b's 2.08
    # against 2.0), the first chosen when alike
    a, b = [0.5] * 10, [0.4] * 5 + [0.6] * 5
    assert decide([[1.0] * 10, a, b, [0.7] * 10], 5) == 2
    assert decide([[1.0] * 10, a, a, [0.7] * 10], 5) == 1


class _Comm:
    """What :func:`~hetcoll.jobs.confirmation.confirm` needs of a communicator: rank 0's
    ``bcast`` (one rank)."""

    rank = 0

    @staticmethod
    def bcast(obj, root=0):
        return obj


def test_confirm_runs_the_contenders_rotated_and_stops_at_the_verdict():
    plans = [
        {"algorithm": "mpi", "speedup": [1.0] * 5},
        {"algorithm": "mpi", "mpich": "ring", "speedup": [1.01] * 5},
        {"algorithm": "mpi", "mpich": "tree", "speedup": [1.2] * 5},
        {"algorithm": "mpi", "mpich": "brucks", "speedup": [0.8] * 5},
        {"algorithm": "mpi", "mpich": "spun", "speedup": [2.0] * 5, "spin": 1e-3},
    ]
    seconds = {None: 1.0, "ring": 1.1, "tree": 0.9}
    seen = []

    def measure(plan):
        seen.append(plan.get("mpich"))
        return seconds[plan.get("mpich")]

    kept, contest, times = confirmation.confirm(_Comm(), measure, plans, 5)
    assert [p.get("mpich") for p in contest] == [None, "tree", "ring"]
    assert kept == 1 and len(times[0]) == 10  # tree wins 10 of 10: the second look
    assert seen[:6] == [None, "tree", "ring", "tree", None, "ring"]
    assert len(seen) == 30


@pytest.mark.mpi
def test_the_confirmation_agrees_on_every_rank_whatever_a_rank_measures():
    """Rank 0 measures ring faster than MPI's own, the other ranks slower: every rank
    takes rank 0's rule (ring, at the second look) after as many rounds
    (``mpi_programs/tune_confirmation.py``)."""
    from pathlib import Path

    from _mpi import run_checks

    program = Path(__file__).with_name("mpi_programs") / "tune_confirmation.py"
    run_checks(program, 2, timeout=120)


def test_the_third_of_the_first_rounds_is_confirmed_and_can_take_the_rule():
    """The first rounds' order of near-equal algorithms is partly luck: the third largest
    median speed-up (brucks) runs in the confirmation too, and where it beats MPI's own
    and the two others head to head it takes the rule (on 2 ranks the algorithm a
    program's loop ran fastest was the tune's third at 3 sizes of 12)."""
    plans = [
        {"algorithm": "mpi", "speedup": [1.0] * 5},
        {"algorithm": "mpi", "mpich": "ring", "speedup": [1.3] * 5},
        {"algorithm": "mpi", "mpich": "tree", "speedup": [1.2] * 5},
        {"algorithm": "mpi", "mpich": "brucks", "speedup": [1.1] * 5},
    ]
    seconds = {None: 1.0, "ring": 0.8, "tree": 0.8, "brucks": 0.6}
    kept, contest, times = confirmation.confirm(
        _Comm(), lambda plan: seconds[plan.get("mpich")], plans, 5
    )
    assert [p.get("mpich") for p in contest] == [None, "ring", "tree", "brucks"]
    assert contest[kept].get("mpich") == "brucks" and len(times[0]) == 10
