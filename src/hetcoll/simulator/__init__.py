"""The simulator: the one place that turns a schedule into the times a user sees.

:func:`simulate` lowers a :class:`~hetcoll.schedule.Schedule` to its per-rank program and runs
it under a cost model as a discrete-event simulation, with the rules the engine follows
(``DEVELOPING.md``, "one rule shared by the simulator and the engine"):

- a send is *startable* at ``t`` when its dependencies have completed by ``t`` and its
  matching receive is posted by ``t`` (rendezvous);
- **send order**: a rank has one send port.  When it is free at ``F`` the rank takes, among
  its sends startable at ``F``, the *first in program order*; if none is, the first to
  become startable (ties: program order).  The taken send owns the port: the transfer
  starts at ``S = max(F, receiver's receive port free, route links free)``, the sender
  waits holding its port (a later send never overtakes it), and the port is busy until
  ``S + send_busy``;
- the receiver's receive port (for models that have one; a single port per node for
  unidirectional one-port models) is busy for the ``recv_busy`` that ends at the arrival,
  and the receive completes at the arrival ``S + delay``;
- resources are granted in start-time order; at equal times a transfer that has waited
  longer (taken its port earlier) goes first, then the lower node index.

**Link contention** is the model's (``BoundModel.contention``):

- ``"exclusive"``: a transfer holds every directed link of its route during its *link
  window* (``BoundModel.link_window``) and a transfer that needs a held link waits for it,
  holding its sender's port.  The window is the whole transfer, start to arrival, latency
  included (circuit switching: ``hockney``, the graph models), unless the model says
  otherwise: the ``switch`` model's wormhole holds the route only while the flits are in
  the network, from the end of the sender's overhead ``O_send`` until the tail reaches
  the receiver (``link_hold="wire"``, :mod:`hetcoll.models.switch`): node overheads are
  work at the workstations and keep no link, so a transfer is placed at the earliest
  start whose window finds its route free;
- ``"shared"``: flow level, as SimGrid's CM02: node costs and latency occupy no link, then
  the bytes flow at a rate given by max-min fair sharing of each directed link's bandwidth
  among the flows crossing it at that moment (progressive filling, recomputed whenever a
  flow ends and after the flows that start at one instant); sender and receiver ports are
  busy until the arrival, except under a model with ``concurrent_sends`` (``nic``): there
  the send port is busy only ``send_busy`` from the start (the sender's own work per
  message) and the rank's next send may start while the flow goes on, its flows sharing
  the rank's links.

Every :class:`Transfer` says what held back its start (``blocked_by``: the transfer that
completed its last dependency or held the port or link it waited for; ``blocked_on``: which).

Complexity: a program of M operations costs O(M log M) time plus the total length of the
routes its transfers cross (each link of a route is looked at twice), and O(M + N) memory
besides the routes; costs and routes are computed once per distinct (sender, receiver,
size) with numpy.  When some route is longer than 64 links, exclusive bookings are kept
per transfer instead of per link (:class:`~hetcoll.simulator.links.RouteBooks`): placing
a transfer costs O(P + B (W + log B)) numpy work for a route of P links spanning W 64-link
words and B transfers in progress, however many bookings it waits behind.  Under ``"shared"``
contention every flow end, and the flows that start at one instant, also bring the
max-min fair rates of the flows in progress up to date (flows of one route and cap share
a rate; the rounds of progressive filling before the first the change alters are kept:
:class:`~hetcoll.simulator.fairshare.FairShares`; O(C P) per round for C such classes of
P links, plus O(F) numpy work for F flows), and a port released by a flow lets every
transfer waiting for it try again.  Concurrent collectives (several flows, several
buffers) share every node's ports.

Modules: ``predict`` (:func:`simulate`, :func:`simulate_program`: the front door, which
takes a shortcut where it applies), ``events`` (the event loop, any program,
any contention), ``tree`` (the one-tree shortcut: one tree, no links, bit for bit the
event loop's answer), ``timetable`` (the timetable shortcut: a multi-tree timetable under
two ports per node and no links, bit for bit the event loop's answer), ``ordered`` (the
send-order shortcut: each node's sends listed, under a port per link, bit for bit the
event loop's answer), ``links`` (exclusive bookings of ports and links), ``fairshare``
(max-min fair rates under shared contention), ``costs`` (the model asked once per distinct
transfer; throughput from the bottleneck), ``rate`` (the steady-state rate of a pipelined
run), ``results`` (:class:`Prediction`, :class:`Transfer`).
"""

from __future__ import annotations

from .fairshare import max_min_rates
from .predict import simulate, simulate_program, simulate_within
from .rate import SteadyState, steady_state
from .results import BLOCKERS, Prediction, Transfer

__all__ = [
    "BLOCKERS",
    "Prediction",
    "SteadyState",
    "Transfer",
    "max_min_rates",
    "simulate",
    "simulate_program",
    "simulate_within",
    "steady_state",
]
