"""Which requests a look tests (runtime/inflight.py): each completion is found, every
request is looked at within a bounded number of idle looks, and a look costs O(1) in the
number of requests in flight (a pipeline of M receives costs O(M) in all, not O(M^2))."""

from __future__ import annotations

import random

import pytest

from hetcoll.runtime import inflight
from hetcoll.runtime.inflight import ALL, HEAD, WIDE, Inflight


class Req:
    """A request that completes when told (Testsome reports it once)."""

    def __init__(self) -> None:
        self.done = False


@pytest.fixture
def asked(monkeypatch):
    seen: list[int] = []

    def testsome(reqs):
        assert len({id(r) for r in reqs}) == len(reqs), "a request asked about twice"
        seen.append(len(reqs))
        got = [k for k, r in enumerate(reqs) if r.done]
        for r in (reqs[k] for k in got):
            r.done = None  # reported once
        return got

    monkeypatch.setattr(inflight, "_testsome", testsome)
    return seen


@pytest.mark.parametrize("m", [1024, 4096])
def test_a_pipeline_of_m_receives_costs_linear_work(m, asked):
    """Receives from one peer completing in posting order (a pipelined tree) with a send
    in flight: each completion is found by the next look, which asks about at most
    HEAD + 1 requests (all of them once ALL or fewer are left), so the whole pipeline
    asks about O(m)."""
    flight = Inflight()
    reqs = [Req() for _ in range(m)]
    for i, r in enumerate(reqs):
        flight.add(i, r, peer=3)
    send = Req()
    flight.add(m, send)
    for i, r in enumerate(reqs):
        r.done = True
        assert flight.test() == [i]
    assert list(flight.live) == [m]
    assert max(asked) == ALL  # the last ALL in flight are all asked about at once
    assert sum(asked) <= (HEAD + 1) * m + ALL * ALL  # before: m * (m + 1) / 2 and more


def test_an_out_of_order_completion_is_found_within_a_bounded_number_of_idle_looks(asked):
    m = 1000
    flight = Inflight()
    reqs = [Req() for _ in range(m)]
    for i, r in enumerate(reqs):
        flight.add(i, r, peer=i % 3)
    rng = random.Random(5)
    order = list(range(m))
    rng.shuffle(order)
    for i in order:
        reqs[i].done = True
        for _ in range(m // WIDE + 2):
            got = flight.test()
            if got:
                assert got == [i]
                break
        else:
            pytest.fail(f"op {i} never found")
    assert not flight
    assert max(asked) <= max(ALL, 3 * HEAD + WIDE)


def test_few_requests_are_all_tested_at_every_look(asked):
    flight = Inflight()
    reqs = [Req() for _ in range(ALL)]
    for i, r in enumerate(reqs):
        flight.add(i, r, peer=0)
    reqs[ALL - 1].done = True
    assert flight.test() == [ALL - 1]
    assert asked == [ALL]


def test_a_restarted_receive_is_never_asked_about_twice_in_a_look(asked):
    """A receive started again (a dropped leftover) is queued again: one look still asks
    about it once (MPI's Testsome must not see a request twice)."""
    flight = Inflight()
    reqs = [Req() for _ in range(3 * ALL)]
    for i, r in enumerate(reqs):
        flight.add(i, r, peer=0)
    reqs[0].done = True
    assert flight.test() == [0]
    flight.add(0, reqs[0], peer=0)  # started again: now the newest in posting order
    for i in (1, 2, 3, 4, 5):
        flight.drop(i)
    for _ in range(3 * ALL // WIDE + 2):
        flight.test()
    reqs[0].done = True
    found = []
    for _ in range(3 * ALL // WIDE + 2):
        found += flight.test()
    assert found == [0]
