"""``butterfly_pipelined``'s phased cut on the fewest owners (:func:`hetcoll.planners.butterfly.
fewest_owners`, ``cut="owners"``): where ``T* = M / b_min`` the fast NICs have time to
spare, so a few of them can own every share, each NIC then carrying ``2 (N - 1)`` flows per
owner instead of per member, and the simulator's budget of messages cuts every share into
more segments (a shorter fill and drain)."""

from __future__ import annotations

import pytest

from hetcoll import plan, simulate
from hetcoll.generators.stars import star_platform
from hetcoll.planners.butterfly import BUSY, balanced_shares, fewest_owners
from test_recursive import check_result

KW = {"method": "butterfly_pipelined", "collective": "allreduce"}
FAST = ("100Gbps", "25Gbps", "10Gbps")


def t_star(rates, m: int) -> float:
    return max(m / min(rates), 2 * (len(rates) - 1) * m / sum(rates))


@pytest.mark.parametrize(("n", "owners"), [(8, 2), (16, 4), (64, 16)])
def test_a_quarter_of_a_star_of_100_25_10_owns_every_share(n, owners):
    """The fastest NICs own the shares, in proportion to their rates, each busy at most
    ``BUSY T*`` each way; the shares are whole elements and sum to the vector."""
    rates = [node.bandwidth for node in star_platform(n, FAST).nodes]
    m = (1 << 20) + 24
    shares = fewest_owners(rates, m, 8)
    assert shares is not None and sum(shares) == m
    own = [u for u, s in enumerate(shares) if s]
    assert len(own) == owners and {rates[u] for u in own} == {max(rates)}
    assert all(s % 8 == 0 for s in shares[:-1])
    busy = max((m + (n - 2) * shares[u]) / rates[u] for u in own)
    assert busy <= BUSY * t_star(rates, m) * 1.001
    # the members that own nothing still bound the time: the shares' fluid time is T*
    fluid = max((m + (n - 2) * s) / r for s, r in zip(shares, rates, strict=True))
    assert fluid == pytest.approx(t_star(rates, m), rel=1e-12)


def test_none_where_every_nic_binds_or_one_owner_would_do():
    """25/10 Gbit/s: no fast NIC has time to spare; four NICs of 100/25/10, where one owner
    would do, but its leads would have no other flow to cover them."""
    assert fewest_owners([25e8, 25e8, 10e8, 10e8] * 2, 1 << 20) is None
    assert fewest_owners([1e10, 25e8, 1e9, 1e9], 1 << 20) is None
    assert balanced_shares([25e8, 10e8, 10e8], 100) == [100, 0, 0]


def test_eight_nodes_of_100_25_10_at_1_mib_within_8_percent_of_t_star():
    """The default plan takes the phased cut on two owners: 1.071 ``T*`` (on the balanced
    shares' six owners, 1.094), its data right on every rank."""
    p = star_platform(8, FAST)
    m = 1 << 20
    s = plan(p, None, **KW, nbytes=m, options={"align": 8})
    owners = [f for f in s.flows if f.kind == "reduce" and f.nbytes]
    assert (s.chain, len(owners)) == ("peer", 2)
    assert s.params["bound"] == t_star([node.bandwidth for node in p.nodes], m)
    t = simulate(p, s).makespan
    assert s.params["estimate"] == t < 1.08 * s.params["bound"]
    check_result(plan(p, None, **KW, nbytes=4096, segment_size=512, options={"cut": "owners"}))


def test_owners_cut_on_every_share_in_as_many_segments():
    """``cut="owners"`` with a segment size: the owners' shares in that many segments."""
    p = star_platform(8, FAST)
    s = plan(p, None, **KW, nbytes=1 << 16, segment_size=1 << 12, options={"cut": "owners"})
    reduce = [f for f in s.flows if f.kind == "reduce" and f.nbytes]
    assert len(reduce) == 2 and s.params["segments"] == 8
    assert all(f.chunks == 8 for f in reduce)
