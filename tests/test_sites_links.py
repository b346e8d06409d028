"""The multi-site timetables played out with the WAN's bytes as a resource
(planners/sitesorder.py ``RouteCosts(links=True)``: a WAN transfer holds the link for its
bytes' time alone, so two senders' messages are timetabled one after the other's bytes,
not at once at half the rate) and with the longest way first (``lead`` 0: the WAN
crossings); ``sites`` and ``site_pairs`` simulate the three play-outs and keep the
fastest (planners/sites.py ``PLAYOUTS``)."""

from __future__ import annotations

import pytest

from hetcoll import simulate
from hetcoll.allbounds import members_bound
from hetcoll.experiments.allreduce_star import platform
from hetcoll.generators import hosts
from hetcoll.planners.sitepairs import site_pairs
from hetcoll.planners.sites import sites
from hetcoll.planners.sitesorder import RouteCosts


def test_a_wan_transfer_holds_the_wan_for_its_bytes_alone():
    """On two-site (a 1 ms, 5 Gbit/s WAN, 625 MB/s): a/2 -> b/1 holds both ports for the
    latency and the bytes, and with ``links`` the WAN's a -> b direction for the bytes
    alone; a transfer within a site holds no link (its links are its ports'); the two
    directions of the WAN are two resources."""
    p = platform("two-site")
    n, i = len(p), p.index
    size = 1 << 20
    plain = RouteCosts(p).of(i("a/2"), i("b/1"), size)
    rows, busy, delay, _ = RouteCosts(p, links=True).of(i("a/2"), i("b/1"), size)
    assert rows[:2] == plain[0] == (i("a/2"), n + i("b/1"))
    assert busy[:2] == plain[1]
    assert delay == plain[2] == pytest.approx(1.01e-3 + size / 625e6)
    assert len(rows) == 3 and rows[2] >= 2 * n
    assert busy[2] == pytest.approx(size / 625e6)
    back = RouteCosts(p, links=True).of(i("b/1"), i("a/2"), size)
    assert len(back[0]) == 3 and back[0][2] != rows[2]
    assert RouteCosts(p, links=True).of(i("a/0"), i("a/1"), size)[0] == (i("a/0"), n + i("a/1"))


@pytest.mark.parametrize(
    ("planner", "collective", "m", "most"),
    [
        (sites, "allgather", 8 << 20, 1.43),  # 1.794 on the ports alone, by place
        (site_pairs, "allgather", 8 << 20, 1.50),  # 1.660
        (site_pairs, "allreduce", 8 << 20, 1.65),  # 1.789
        (site_pairs, "allgather", 64 << 20, 1.39),  # 1.711
    ],
)
def test_on_two_site_within(planner, collective, m, most):
    """The reproduction's two-site platform: the plans' simulated time over the members'
    bound (the latency cut) with the three play-outs (1.411, 1.478, 1.640, 1.377)."""
    p = platform("two-site")
    members = hosts(p)
    each = m if collective == "allreduce" else m // len(members)
    sched = planner(p, members=members, nbytes=each, collective=collective, align=8)
    bound = members_bound(p, collective, m, members).lower_bound
    time = simulate(p, sched).makespan
    assert time == pytest.approx(sched.params["estimate"])
    assert time < most * bound
