"""The dissemination round of ``check="always"`` (runtime/agreement.py), without MPI: every
rank hears from every other through a chain of rounds, the pairs of a round match, and no
pair of ranks exchanges two messages in one call (so one tag serves every round)."""

from __future__ import annotations

import itertools

import pytest

from hetcoll.runtime.agreement import rounds


def disseminate(size: int, radix: int, tokens: list[int]) -> list[bool]:
    """Each rank's ``ok`` after the round, by the rule of ``Agreement.poll`` (a message of
    another call, or one whose sender is no longer ok, makes the receiver not ok); a
    message carries what its sender knew after the previous round."""
    plan = [rounds(r, size, radix) for r in range(size)]
    ok = [True] * size
    for j in range(len(plan[0])):
        sent = list(ok)
        for r in range(size):
            for f in plan[r][j][1]:
                if tokens[f] != tokens[r] or not sent[f]:
                    ok[r] = False
    return ok


@pytest.mark.parametrize("radix", [2, 3, 4])
def test_every_rank_hears_from_every_other(radix):
    for size in range(1, 41):
        plan = [rounds(r, size, radix) for r in range(size)]
        knows = [{r} for r in range(size)]
        for j in range(len(plan[0])):
            before = [set(k) for k in knows]
            for r in range(size):
                tos, froms = plan[r][j]
                for t in tos:  # the pairs match: r sends to t in the round t hears from r
                    assert r in plan[t][j][1], (size, r, j)
                for f in froms:
                    knows[r] |= before[f]
        assert all(k == set(range(size)) for k in knows), size
        for r in range(size):  # at most one message from a rank to another per call
            heard = [f for tos_froms in plan[r] for f in tos_froms[1]]
            assert len(heard) == len(set(heard)) and r not in heard, (size, r)
        assert radix ** len(plan[0]) >= size > radix ** (len(plan[0]) - 1) or size == 1


def test_the_verdict_is_the_same_on_every_rank_and_true_exactly_when_all_agree():
    """Brute force: every assignment of two calls to 1..7 ranks."""
    for size in range(1, 8):
        for tokens in itertools.product((0, 1), repeat=size):
            for radix in (2, 3):
                ok = disseminate(size, radix, list(tokens))
                assert ok == [len(set(tokens)) == 1] * size, (size, tokens, radix)
