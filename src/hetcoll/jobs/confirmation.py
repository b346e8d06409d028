"""``hetcoll tune``'s confirmation rounds of MPICH's algorithms: the rule that keeps MPI's
own selection unless a forced algorithm is significantly faster, and the rounds it needs.

A row with MPICH's algorithms (:mod:`hetcoll.jobs.tune`) chooses up to three contenders in
its selection rounds (:func:`contenders`: the forced candidates of the largest median speed-ups
over MPI's own, those above 1) and then measures them with MPI's own in fresh paired
rounds, their order rotated.  Several algorithms within a few per cent of each other and of
MPI's own are common (on two ranks every allreduce algorithm is one exchange), and the
selection rounds' best of seven is partly the luckiest, so the fresh rounds decide by a paired
**sign test** (:func:`decide`): two calls of equal speed, their order rotated, each win a
round with probability 1/2 whatever the load does to both, so a contender that beats MPI's
own in ``w`` of ``n`` untied rounds is faster at level ``p`` when
:math:`P(X \\ge w) \\le p`, :math:`X \\sim B(n, 1/2)` (:func:`sign_p`).

- A contender **takes the rule** from MPI's own only when it is significantly faster, at
  :data:`LEVEL` shared (Bonferroni) by the contenders and by the looks below: a forced
  algorithm as fast as MPI's own replaces it in fewer than :data:`LEVEL` of the rows, and
  it would cost a ``HetComm`` its dispatch (:mod:`hetcoll.runtime.forced`) for nothing.
- **More rounds only where the decision is close**: the rule looks after ``rounds``,
  ``2 rounds``, ... :data:`LOOKS` ``rounds`` rounds (:func:`looks`), and stops at a look
  where no contender is *open*: one that is not yet significantly faster, has won more of
  its rounds than it lost, and could still be significantly faster by the last look.
- Of several contenders significantly faster than MPI's own, the one faster than the most
  others head to head (in more of the rounds than it is slower) takes the rule (on a tie,
  the larger median speed-up, then the first chosen): within the noise they are alike.
- :data:`CONTENDERS` is three: the selection rounds' order of algorithms a few per cent apart
  is partly luck, and the one a program's loop runs fastest can be third
  (``benchmarks/mpi/bench_mpich_algorithms.py`` prints per size the fastest forced
  algorithm beside the tune's winner and runner-up).  Each contender shares the level
  (with three, a contender needs 17 rounds of 20).

Every rank measures the same times (each the slowest rank's), and the contenders and the
decision of every look are rank 0's sent to all (:func:`confirm`): the rounds and the rule
are the same on every rank whatever a rank computes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = [
    "CONTENDERS",
    "LEVEL",
    "LOOKS",
    "confirm",
    "contenders",
    "decide",
    "looks",
    "rotation",
    "sign_p",
]

#: the level at which a forced algorithm must be faster than MPI's own to replace it
#: (shared by the contenders and the looks)
LEVEL = 0.05
#: the confirmation lasts at most this many times the selection rounds
LOOKS = 4
#: contenders confirmed beside MPI's own (module doc)
CONTENDERS = 3


def rotation(n: int, r: int) -> list[int]:
    """Round ``r``'s order of ``n`` contenders: rotated by ``r`` (``r + 1`` and then
    reversed when ``r`` is odd), so that none is always first or always after the same one.

    >>> [rotation(3, r) for r in range(4)]
    [[0, 1, 2], [1, 0, 2], [2, 0, 1], [0, 2, 1]]
    >>> [rotation(2, r) for r in range(3)]
    [[0, 1], [1, 0], [0, 1]]
    """
    k = (r + r % 2) % n
    out = [(k + j) % n for j in range(n)]
    return out[::-1] if r % 2 else out


def sign_p(wins: int, n: int) -> float:
    """:math:`P(X \\ge` ``wins`` :math:`)` for :math:`X \\sim B(n, 1/2)`: the chance that
    a call as fast as the other wins at least ``wins`` of ``n`` untied paired rounds.

    >>> sign_p(5, 5), sign_p(13, 15) < 0.004 < sign_p(12, 15), sign_p(0, 0)
    (0.03125, True, 1.0)
    """
    return sum(math.comb(n, k) for k in range(max(wins, 0), n + 1)) / 2**n


def looks(rounds: int) -> tuple[int, ...]:
    """The numbers of confirmation rounds after which :func:`decide` looks.

    >>> looks(5)
    (5, 10, 15, 20)
    """
    return tuple(rounds * k for k in range(1, LOOKS + 1))


def contenders(speedups: list[Any]) -> list[int]:
    """The indices of the candidates to confirm: of those whose median speed-up over MPI's
    own in the selection rounds is above 1, the :data:`CONTENDERS` largest (the first listed
    on a tie).

    >>> contenders([[1.1, 0.9, 1.2], [0.9, 0.95, 1.0], [1.3, 1.2, 1.25], [1.0, 1.01, 1.05],
    ...             [1.02, 1.0, 1.04]])
    [2, 0, 4]
    """
    med = [float(np.median(s)) for s in speedups]
    ranked = sorted((k for k in range(len(med)) if med[k] > 1.0), key=lambda k: (-med[k], k))
    return ranked[:CONTENDERS]


def decide(times: Any, rounds: int) -> int | None:
    """The confirmation rounds' verdict on ``times`` (seconds; row 0 MPI's own, then the
    contenders, a column per paired round) when the selection rounds were ``rounds``: the
    index of the row that takes the rule (0: MPI's own stays), or None when more rounds
    are needed (module doc).

    Examples
    --------
    Faster in 10 rounds of 10: significant at the second look.

    >>> decide([[2.0] * 10, [1.9] * 10], 5)
    1

    Faster in 4 of 5: open (the first look cannot decide), then 8 of 10 is not
    significant but still open, and 16 of 20 is at the last look.

    >>> mpi, ring = [2.0] * 20, [1.9, 1.9, 1.9, 1.9, 2.1] * 4
    >>> [decide([mpi[:n], ring[:n]], 5) for n in (5, 10, 15, 20)]
    [None, None, None, 1]

    Faster in 2 rounds of 5: not leaning that way, MPI's own stays at once.

    >>> decide([[2.0] * 5, [1.9, 1.9, 2.1, 2.1, 2.1]], 5)
    0
    """
    t = np.asarray(times, dtype=float)
    n, others = t.shape[1], t.shape[0] - 1
    if others == 0:
        return 0
    ahead = looks(rounds)
    last = ahead[-1]
    level = LEVEL / (others * len(ahead))
    faster, open_ = [], False
    for k in range(1, others + 1):
        wins, lost = int((t[k] < t[0]).sum()), int((t[k] > t[0]).sum())
        if sign_p(wins, wins + lost) <= level:
            faster.append(k)
            continue
        rest = max(last - n, 0)
        if wins > lost and rest and sign_p(wins + rest, wins + lost + rest) <= level:
            open_ = True
    if open_ and n < last:
        return None
    if not faster:
        return 0

    def beaten(a: int) -> int:
        """How many of the other significant contenders ``a`` beats head to head."""
        return sum(int((t[a] < t[b]).sum()) > int((t[b] < t[a]).sum()) for b in faster if b != a)

    return max(faster, key=lambda k: (beaten(k), float(np.median(t[0] / t[k])), -k))


def confirm(
    comm: Any, measure: Callable[[dict], float], plans: list[dict], rounds: int
) -> tuple[int, list[dict], list[list[float]]]:
    """Run the confirmation rounds of the row ``plans`` (``plans[0]`` MPI's own, each
    with its selection rounds' ``speedup``; a plan measured with a ``spin`` is never a
    contender) on ``comm``, collective: ``measure(plan)`` is one measurement, the same
    on every rank.  Returns the index into the contest of the plan that takes the rule
    (0: MPI's own), the contest (MPI's own, then the contenders) and its times per
    contender and round; no contender: ``(0, [plans[0]], [])``."""
    pool = [p for p in plans[1:] if not p.get("spin")]
    mine = contenders([p["speedup"] for p in pool]) if comm.rank == 0 else None
    chosen = [pool[k] for k in comm.bcast(mine, root=0)]
    if not chosen:
        return 0, [plans[0]], []
    contest = [plans[0], *chosen]
    times: list[list[float]] = [[] for _ in contest]
    done, verdict = 0, None
    for upto in looks(rounds):
        for r in range(done, upto):
            for k in rotation(len(contest), r):
                times[k].append(measure(contest[k]))
        done = upto
        verdict = comm.bcast(decide(times, rounds) if comm.rank == 0 else None, root=0)
        if verdict is not None:
            break
    return verdict, contest, times
