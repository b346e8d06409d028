"""Hsu et al. (2005) eq. (1)-(5): workstations on switches, wormhole routing, link contention.

One transfer of ``m`` bytes from workstation ``u`` to ``v`` whose up*/down* route crosses
``d`` switch-to-switch links costs (Hsu et al., Sec. 3)::

    T_ptp     = O_send + O_trans + O_receive                                    (1)
    O_send    = S_c(u) + S_m(u) m                                               (2)
    O_receive = R_c(v) + R_m(v) m                                               (4)
    O_trans   = X_trans m d + (X_switch m + 2 X_port) (d + 1)                   (5)

**Units.**  The paper counts messages in *flits* (2048 and 10240 in Sec. 6).  A flit here
is **one byte**, as in Myrinet, the wormhole network the paper cites ([2]): then the "per
byte" of eq. (2)-(5) and the "per flit" of a message agree, Table 1's ``S_m``, ``R_m`` read
as microseconds per byte, and ``nbytes`` is the message in flits.

**Parameters** (Sec. 6: "fast Ethernet switch ... 100 Mbps bandwidth and 8 usec/port"):

- ``x_trans`` = 80 ns per byte on a switch-to-switch link (8 bits at 100 Mbps);
- ``x_port`` = 8 us per switch port (a switch is entered and left through two ports);
- ``x_switch`` = 8 ns per byte through a switch: the paper gives no value; we take a switch
  fabric ten times as fast as a port (1 Gbps, the backplane of an 8-port fast Ethernet
  switch), so that crossing a switch costs less than crossing a link.

**Occupancy** (what the simulator does with it): the sender's port is busy ``O_send``; the
receiver's port is busy the ``O_receive`` that ends at the arrival ``T_ptp`` after the
start.  With ``contention="exclusive"`` (default) the transfer holds every directed
switch-to-switch link of its route while its flits are in the network, and a transfer that
needs a held link waits.  ``link_hold`` says when that is:

- ``"wire"`` (default): from the end of ``O_send`` until the tail reaches the receiver, the
  ``O_trans`` of eq. (5) -- ``[s + O_send, s + O_send + O_trans)`` for a transfer that
  starts at ``s``.  ``O_send`` and ``O_receive`` are work at the workstations (copying,
  protocol processing: Banikazemi et al.'s node overheads, which eq. (1) adds to the
  network's ``O_trans``); in wormhole routing the header flit enters the network only when
  the sender injects the message, and the path is free again once the tail flit has been
  consumed by the receiving interface (Ni & McKinley 1993, as Hsu et al. Sec. 2.1 cite it).
- ``"whole"``: from the start to the arrival, ``O_send`` and ``O_receive`` included
  (circuit switching's window, as the ``hockney`` model holds links): it serialises
  transfers on a link for as long as the workstations work, which with Table 1's numbers
  is most of a transfer.

With ``contention="none"`` links never delay anything (what
:func:`hetcoll.contention.contention` uses to list the overlaps a schedule would cause).
The two directions of a link never contend.  ``routes`` picks the up*/down* route:
``"shortest"`` legal route (default) or the path along the spanning ``"tree"``
(:mod:`hetcoll.switches`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ModelError
from ..switches import ROUTE_CHOICES
from .base import BoundModel, CostModel

__all__ = ["SwitchModel", "X_TRANS", "X_SWITCH", "X_PORT"]

#: 8 bits at 100 Mbps (fast Ethernet, Sec. 6), seconds per byte on a switch-to-switch link.
X_TRANS = 8 / 100e6
#: Seconds per byte through a switch: a 1 Gbps fabric (our choice; the paper gives none).
X_SWITCH = 8 / 1e9
#: Seconds per switch port (Sec. 6: 8 us per port).
X_PORT = 8e-6
CONTENTION = ("exclusive", "none")
#: When an exclusive transfer holds its route: while its flits are in the network, or all of it.
LINK_HOLD = ("wire", "whole")


@dataclass(frozen=True)
class SwitchModel(CostModel):
    """Hsu et al. eq. (1)-(5) on a switch platform: node overheads plus per-hop switch costs.

    See the module docstring for the formulas, the units (one flit = one byte) and the
    default parameters (fast Ethernet, 8 us per port, a 1 Gbps switch fabric).
    """

    name = "switch"
    summary = "Hsu eq. (1)-(5): O_send + O_trans(d hops) + O_receive, links held during O_trans"
    x_trans: float = X_TRANS
    x_switch: float = X_SWITCH
    x_port: float = X_PORT
    routes: str = "shortest"
    contention: str = "exclusive"
    link_hold: str = "wire"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.routes not in ROUTE_CHOICES:
            raise ModelError(
                f"model 'switch': routes must be one of {', '.join(ROUTE_CHOICES)}, "
                f"got {self.routes!r}"
            )
        if self.contention not in CONTENTION:
            raise ModelError(
                f"model 'switch': contention must be one of {', '.join(CONTENTION)}, "
                f"got {self.contention!r}"
            )
        if self.link_hold not in LINK_HOLD:
            raise ModelError(
                f"model 'switch': link_hold must be one of {', '.join(LINK_HOLD)}, "
                f"got {self.link_hold!r}"
            )

    def _bind(self, platform) -> BoundModel:
        if platform.switches is None:
            raise ModelError(
                "model 'switch' needs a switch platform: give 'switches' and each node's "
                "'switch' in the platform"
            )
        return BoundSwitch(self, platform)


class BoundSwitch(BoundModel):
    """:class:`SwitchModel` on a platform: eq. (1)-(5) per transfer, routes as resources."""

    def __init__(self, model: SwitchModel, platform) -> None:
        super().__init__(model, platform)
        net = platform.switches
        self.net = net
        self.routing = net.routing
        self.choice = model.routes
        self.exclusive = model.contention == "exclusive"
        self.wire = model.link_hold == "wire"
        c = net.costs
        self._s_c, self._s_m, self._r_c, self._r_m = (c[:, k] for k in range(4))
        self._sw = net.switch_of
        self._hops = self.routing.hops(model.routes)
        self._x = (model.x_trans, model.x_switch, model.x_port)
        # plain lists for the scalar methods (the simulator calls them per transfer)
        self._costs = c.tolist()
        self._sw_list = self._sw.tolist()
        self._hops_rows = self._hops.tolist()
        self._paths: dict[tuple[int, int], tuple[int, ...]] = {}
        self._matrix: tuple[int, np.ndarray] | None = None

    # -- eq. (1)-(5) ------------------------------------------------------------------------------

    def o_send(self, u: int, nbytes: int) -> float:
        """Eq. (2)."""
        c = self._costs[u]
        return c[0] + c[1] * nbytes

    def o_receive(self, v: int, nbytes: int) -> float:
        """Eq. (4)."""
        c = self._costs[v]
        return c[2] + c[3] * nbytes

    def hops(self, u: int, v: int) -> int:
        """``d``: switch-to-switch links on the route from ``u``'s switch to ``v``'s."""
        return self._hops_rows[self._sw_list[u]][self._sw_list[v]]

    def o_trans(self, d, nbytes: int):
        """Eq. (5) for ``d`` hops (a number or an array)."""
        x_trans, x_switch, x_port = self._x
        return x_trans * nbytes * d + (x_switch * nbytes + 2 * x_port) * (d + 1)

    def send_busy(self, u: int, v: int, nbytes: int) -> float:
        return self.o_send(u, nbytes)

    def recv_busy(self, u: int, v: int, nbytes: int) -> float:
        return self.o_receive(v, nbytes)

    def delay(self, u: int, v: int, nbytes: int) -> float:
        """Eq. (1): ``T_ptp``."""
        return float(
            self.o_send(u, nbytes)
            + self.o_trans(self.hops(u, v), nbytes)
            + self.o_receive(v, nbytes)
        )

    # -- routes ---------------------------------------------------------------------------------

    def route(self, u: int, v: int) -> tuple[int, ...]:
        """Switch indices from ``u``'s switch to ``v``'s (both included)."""
        return self.routing.route(self._sw_list[u], self._sw_list[v], self.choice)

    def route_ids(self, u: int, v: int) -> list[str]:
        """The switch ids a transfer from ``u`` to ``v`` crosses, in order."""
        ids = self.net.ids
        return [ids[x] for x in self.route(u, v)]

    def links(self, u: int, v: int) -> tuple[int, ...]:
        """The directed-link resources of the route, whatever the contention setting."""
        key = (self._sw_list[u], self._sw_list[v])
        found = self._paths.get(key)
        if found is None:
            found = self.routing.resources(self.routing.route(*key, self.choice))
            self._paths[key] = found
        return found

    def path(self, u: int, v: int) -> tuple[int, ...]:
        return self.links(u, v) if self.exclusive else ()

    def link_window(self, u: int, v: int, nbytes: int) -> tuple[float, float] | None:
        """``(O_send, O_trans)`` under ``link_hold="wire"``: the flits are in the network
        from the end of the sender's overhead until the tail reaches the receiver; None
        (start to arrival) under ``"whole"``."""
        if not self.wire:
            return None
        return self.o_send(u, nbytes), float(self.o_trans(self.hops(u, v), nbytes))

    def resource_name(self, resource: int) -> tuple[str, str]:
        """The ``(from, to)`` switch ids of a directed-link resource."""
        a, b = self.routing.resource_ends(resource)
        return self.net.ids[a], self.net.ids[b]

    # -- vectorised estimates for planners ------------------------------------------------------

    def send_matrix(self, nbytes: int) -> np.ndarray:
        row = self._s_c + self._s_m * nbytes
        return np.broadcast_to(row[:, None], (self.n, self.n))

    def delay_matrix(self, nbytes: int) -> np.ndarray:
        """``T_ptp`` for every pair, with the scalar method's floating-point operations
        (read-only; kept for the last size asked)."""
        if self._matrix is not None and self._matrix[0] == nbytes:
            return self._matrix[1]
        sw = self._sw
        trans = self.o_trans(np.arange(int(self._hops.max()) + 1), nbytes)  # per hop count
        m = (self._s_c + self._s_m * nbytes)[:, None] + trans[self._hops][np.ix_(sw, sw)]
        m += (self._r_c + self._r_m * nbytes)[None, :]
        np.fill_diagonal(m, 0.0)
        m.setflags(write=False)
        self._matrix = (nbytes, m)
        return m

    def node_cost(self, nbytes: int) -> np.ndarray:
        """``O_send``: how long a node's port is busy per send (its speed as a sender)."""
        return self._s_c + self._s_m * nbytes
