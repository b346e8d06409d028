"""Write a platform for other tools: SimGrid platform XML, networkx node-link JSON.

SimGrid (https://simgrid.org) lets a user cross-check a hetcoll prediction in an
independent simulator.  :func:`to_simgrid` writes a version 4.1 platform for one cost model
(the platform's, or the one given) such that ONE message of ``n`` bytes from ``u`` to ``v``
takes, in SimGrid under :data:`SIMGRID_OPTIONS` (the XML sets them in its ``<config>``),
exactly the model's ``delay(u, v, n)`` and keeps its sender busy exactly
``send_busy(u, v, n)``:

    arrival   = exec_before(u, n) + [SimGrid: route latency + n / route bottleneck bandwidth]
    send_busy = exec_before(u, n) + [the route time when the send blocks] + exec_after(u, n)

The route part is what SimGrid computes from the XML's links.  The per-node parts are the
sender's own costs: they add to the route's time (``t_ini + n t_byte`` and ``n / beta`` are
summed, never a bottleneck of each other), and no SimGrid link adds a per-byte cost, so they
are written as properties of the sender's ``<host>``, for the program that replays messages
to apply:

``hetcoll_exec_before`` (s), ``hetcoll_exec_before_per_byte`` (s/B)
    The sender executes ``exec_before + n * exec_before_per_byte`` flops on its host before
    it puts the message (hosts compute 1 flop/s, so x flops last x seconds); the message
    waits for it.
``hetcoll_exec_after`` (s), ``hetcoll_exec_after_per_byte`` (s/B)
    After putting the message without waiting for it, the sender executes this many flops:
    its port is busy meanwhile, the message travels on its own.
``hetcoll_combine_per_byte`` (s/B)
    The node's combine cost ``gamma``: a replay of a program that reduces holds each
    ``recv_reduce`` for ``n * gamma`` seconds after its data arrived and the rank's
    previous ``recv_reduce`` completed (docs/simulator.md, Combining; a wait, not a
    computation: combining holds no port).
``hetcoll_route_latency`` (JSON: receiver id -> s)
    After ``exec_before``, the sender waits this long (its port held) before it puts a
    message to that receiver: the route's latency, taken off the links (``hockney`` with
    ``contention: "shared"`` on a link platform only, see below).

An absent property is 0.  Zone properties say how a replay uses them:
``hetcoll_model`` (the model spec as JSON), ``hetcoll_send`` (``blocking``: the sender waits
until the message has arrived, i.e. ``put``; ``nonblocking``: ``put_async``, then
``exec_after``) and ``hetcoll_ports`` (``none``: no receive port; ``bidirectional``: a host
receives one message at a time, the receive lasting the whole transfer; ``unidirectional``:
one port for sending and receiving).

Per model:

- ``tini``: ``exec_before = t_ini + n t_byte``, blocking; the network is free (the model
  ignores links): every route is one shared zero-latency ``free`` link of unbounded bandwidth.
- ``hockney``: ``exec_before = t_ini + n t_byte``, blocking, receive port.  A link platform
  becomes one ``SPLITDUPLEX`` link per link (each direction its own resource, as hetcoll's
  link contention has it) and an explicit route per ordered pair along hetcoll's own route;
  a matrix platform one link per ordered pair.  With ``contention: "shared"`` (max-min fair
  sharing, equal shares) the links of a link platform carry no latency and each sender
  waits its route's latency itself (``hetcoll_route_latency``) before it puts the message:
  CM02 divides a link's bandwidth among its flows in inverse proportion to their route
  latency (a flow's "sharing penalty"; 1 for a zero-latency route), so with the latencies
  on the links flows of different latencies would not get equal shares.  A flow's latency
  occupies no bandwidth in either tool, so the single message's time is unchanged.
- ``postal``: ``exec_after = overhead + gap + n t_byte``, non-blocking; ``t_ini`` is not part
  of the model and is not exported.  The model has no contention (a message never slows
  another), so every ordered pair gets its own ``FATPIPE`` link with the latency and
  bottleneck bandwidth of hetcoll's route, on link platforms too: under CM02 a flow's rate
  is weighted by its route latency, so flows that share even a ``FATPIPE`` link slow each
  other when their latencies differ.  ``recv_overhead`` is the latency of one more link,
  ``recv_overhead``, at the end of every route.

The other models (``switch``, ``one_port``, ``one_port_uni``, ``multi_port``) have no
encoding here: :func:`to_simgrid` refuses them with a :class:`~hetcoll.errors.ModelError`.

Units are always written (``s``; ``Bps`` is bytes per second, SimGrid's ``bps`` would be
bits).  SimGrid needs a finite bandwidth and fails on a route whose only bandwidth is
``inf``: an infinite bandwidth is written ``1e+300Bps``, and ``n / 1e300`` is below half an
ulp of any latency above 1e-268 s, so SimGrid's time is bit for bit the latency (and below
1e-284 s when the latency is 0).  Messages that overlap in time are where the tools may
differ: SimGrid shares a link's bandwidth between flows (CM02: in inverse proportion to
their route latency), hetcoll's ``hockney`` holds links exclusively.
``benchmarks/crosscheck/crosscheck_simgrid.py`` replays whole schedules (docs/simgrid.md).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any
from xml.sax.saxutils import quoteattr

from .errors import ModelError
from .models import CostModel, get_model
from .platform import Platform

__all__ = [
    "to_simgrid",
    "to_node_link",
    "SIMGRID_CONFIG",
    "SIMGRID_OPTIONS",
    "SIMGRID_INF_BANDWIDTH",
]

#: SimGrid options under which one message alone on its route takes the sum of the route's
#: latencies plus size / its smallest bandwidth: CM02 without corrective factors (1, 1, no
#: RTT weighting), no TCP window bound, and no ACK cross-traffic (which adds 5 % of every
#: flow to the reverse route: on a link shared by both directions, +5 % on every transfer).
#: The exported XML sets them in its ``<config>``; a command line ``--cfg`` overrides them.
SIMGRID_OPTIONS = {
    "network/model": "CM02",
    "network/latency-factor": "1",
    "network/bandwidth-factor": "1",
    "network/weight-S": "0",
    "network/TCP-gamma": "0",
    "network/crosstraffic": "0",
}
#: the same as command-line options
SIMGRID_CONFIG = tuple(f"--cfg={k}:{v}" for k, v in SIMGRID_OPTIONS.items())
#: bytes/s written for an infinite bandwidth (see the module docstring: exact in doubles)
SIMGRID_INF_BANDWIDTH = 1e300
#: the models the XML encodes (the others are refused in one line)
SIMGRID_MODELS = ("tini", "hockney", "postal")


@dataclass
class _Net:
    """What the XML holds besides the hosts: links, routes, host and zone properties."""

    links: list[tuple[str, float, float, str]] = field(default_factory=list)  # id, lat, bw, policy
    routes: dict[tuple[int, int], list[tuple[str, str | None]]] = field(default_factory=dict)
    before: list[tuple[float, float]] = field(default_factory=list)  # per node: s, s/B
    after: list[tuple[float, float]] = field(default_factory=list)
    route_latency: dict[int, dict[str, float]] = field(default_factory=dict)  # sender's waits
    send: str = "blocking"
    ports: str = "none"
    notes: list[str] = field(default_factory=list)


def to_simgrid(platform: Platform, model: Any = None) -> str:
    """The platform as SimGrid v4.1 platform XML for ``model`` (default: the platform's).

    One message alone matches the model's ``delay`` and ``send_busy`` exactly under the
    options the XML's ``<config>`` sets (:data:`SIMGRID_OPTIONS`), once the sender applies
    its host's ``hetcoll_exec_*`` properties (module docstring).

    Raises
    ------
    ModelError
        If the model does not apply to the platform (e.g. ``postal`` without a network).

    Notes
    -----
    O(N^2 h) for N nodes and routes of h hops: every ordered pair gets its route.

    Examples
    --------
    >>> from hetcoll import load_platform
    >>> xml = to_simgrid(load_platform("fig1"))
    >>> '<prop id="hetcoll_exec_before" value="0.0001"/>' in xml
    True
    """
    cost_model = get_model(model) if model is not None else platform.model
    if cost_model.name not in SIMGRID_MODELS:
        raise ModelError(
            f"SimGrid export: no encoding for model {cost_model.name!r} (the XML encodes "
            f"{', '.join(SIMGRID_MODELS)}: give --model with one of them, or export networkx, "
            "json or yaml)"
        )
    cost_model.bind(platform)  # the model's own check that the platform has what it needs
    net = _encode(platform, cost_model)
    ids = platform.ids
    out = [
        "<?xml version='1.0'?>",
        '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
        '<platform version="4.1">',
        _header(platform, cost_model, net),
        "  <config>",
        *(_prop(k, v, "    ") for k, v in SIMGRID_OPTIONS.items()),
        "  </config>",
        '  <zone id="world" routing="Full">',
        _prop("hetcoll_model", _spec(cost_model), "    "),
        _prop("hetcoll_send", net.send, "    "),
        _prop("hetcoll_ports", net.ports, "    "),
    ]
    names = (
        "hetcoll_exec_before",
        "hetcoll_exec_before_per_byte",
        "hetcoll_exec_after",
        "hetcoll_exec_after_per_byte",
        "hetcoll_combine_per_byte",
    )
    gamma = platform.gamma.tolist()
    for i, node_id in enumerate(ids):
        values = (*net.before[i], *net.after[i], gamma[i])
        props = [
            (name, repr(float(value))) for name, value in zip(names, values, strict=True) if value
        ]
        if net.route_latency.get(i):
            props.append(("hetcoll_route_latency", json.dumps(net.route_latency[i])))
        if props:
            out.append(f'    <host id={quoteattr(node_id)} speed="1f">')
            out += [_prop(name, value, "      ") for name, value in props]
            out.append("    </host>")
        else:
            out.append(f'    <host id={quoteattr(node_id)} speed="1f"/>')
    for name, lat, bw, policy in net.links:
        out.append(
            f"    <link id={quoteattr(name)} bandwidth={quoteattr(_bw(bw))} "
            f'latency="{float(lat)!r}s" sharing_policy="{policy}"/>'
        )
    for (a, b), hops in net.routes.items():
        ctn = "".join(
            f"<link_ctn id={quoteattr(n)}" + (f' direction="{d}"/>' if d else "/>") for n, d in hops
        )
        out.append(
            f"    <route src={quoteattr(ids[a])} dst={quoteattr(ids[b])} "
            f'symmetrical="NO">{ctn}</route>'
        )
    out += ["  </zone>", "</platform>", ""]
    return "\n".join(out)


def _encode(platform: Platform, model: CostModel) -> _Net:
    n = len(platform)
    net = _Net()
    node_costs = list(zip(platform.t_ini.tolist(), platform.t_byte.tolist(), strict=True))
    zero = [(0.0, 0.0)] * n
    if model.name == "tini":
        net.before, net.after = node_costs, zero
        net.links.append(("free", 0.0, math.inf, "FATPIPE"))
        net.routes = {(a, b): [("free", None)] for a in range(n) for b in range(n) if a != b}
        net.notes.append("The tini model ignores the network: every route is the free link.")
        return net
    if model.name == "hockney":
        net.before, net.after = node_costs, zero
        net.ports = model.ports
        shared = model.contention == "shared" and bool(platform.links)
        _network(platform, net, latency_on_links=not shared)
        if shared:
            net.notes += [
                "Messages that overlap on a link share its bandwidth equally (max-min fair), as",
                "in hetcoll's shared contention: the links carry no latency (CM02 would weigh",
                "shares by route latency); host u waits hetcoll_route_latency[v] seconds (its",
                "property, JSON; absent = 0) after before(u, n) and before it puts the message,",
                "so the route time is that wait plus size / the route's smallest bandwidth.",
            ]
        else:
            net.notes += [
                "Messages that overlap on a link share its bandwidth in SimGrid (CM02: in",
                "inverse proportion to their route latency); hetcoll's hockney contention is",
                "the model's.",
            ]
        return net
    if model.name == "postal":
        busy = model.overhead + model.gap
        net.before = zero
        net.after = [(busy, t_byte) for _, t_byte in node_costs]
        net.send = "nonblocking"
        # the model has no contention: every pair gets its own FATPIPE link (under CM02 flows
        # that share even a FATPIPE link slow each other when their route latencies differ)
        _pairs(platform, net, "FATPIPE")
        if model.recv_overhead:
            net.links.append(("recv_overhead", model.recv_overhead, math.inf, "FATPIPE"))
            for hops in net.routes.values():
                hops.append(("recv_overhead", None))
        if platform.t_ini.any():
            net.notes.append("t_ini is not part of the postal model: it is not exported.")
        if model.recv_overhead:
            net.notes.append("Every route ends with the recv_overhead link.")
        return net
    raise AssertionError(f"no SimGrid encoding for {model.name!r}")  # pragma: no cover


def _network(platform: Platform, net: _Net, latency_on_links: bool = True) -> None:
    """hetcoll's links, each direction its own resource (SPLITDUPLEX), and hetcoll's own
    routes over them; a matrix platform gets one link per ordered pair (:func:`_pairs`).
    Without ``latency_on_links`` the links have latency 0 and each sender waits its route's
    latency (``net.route_latency``)."""
    if not platform.links:
        _pairs(platform, net, "SHARED")  # a pair link carries one direction only
        return
    n = len(platform)
    names = [f"l{k}_{lk.u}_{lk.v}" for k, lk in enumerate(platform.links)]
    for name, lk in zip(names, platform.links, strict=True):
        net.links.append(
            (name, lk.latency if latency_on_links else 0.0, lk.bandwidth, "SPLITDUPLEX")
        )
    routes = platform.routes
    if not latency_on_links:
        lat, ids = routes.latency, platform.ids
        net.route_latency = {
            a: {ids[b]: float(lat[a, b]) for b in range(n) if b != a and lat[a, b] > 0}
            for a in range(n)
        }
    for a in range(n):
        for b in range(n):
            if a != b:
                # resource 2k is link k from its u to its v (UP), 2k + 1 the way back
                net.routes[(a, b)] = [
                    (names[res // 2], "DOWN" if res % 2 else "UP") for res in routes.path(a, b)
                ]


def _pairs(platform: Platform, net: _Net, policy: str) -> None:
    """One link per ordered pair with the pair's end-to-end latency and bottleneck bandwidth
    (hetcoll's routes), used by that pair's messages only."""
    n = len(platform)
    ids = platform.ids
    lat, bw = platform.routes.latency, platform.routes.bandwidth
    for a in range(n):
        for b in range(n):
            if a != b:
                name = f"p{a}_{b}_{ids[a]}_{ids[b]}"
                net.links.append((name, float(lat[a, b]), float(bw[a, b]), policy))
                net.routes[(a, b)] = [(name, None)]


def _header(platform: Platform, model: CostModel, net: _Net) -> str:
    options = [f"{k}:{v}" for k, v in SIMGRID_OPTIONS.items()]
    lines = [
        f"Exported by hetcoll from {platform.name or 'a platform'!r}",
        f"for the cost model {_spec(model)}.",
        "The <config> below sets the SimGrid options that match the model:",
        "  " + " ".join(options[:3]),
        "  " + " ".join(options[3:]),
        "With them, one message alone on its route takes the sum of the route's latencies",
        "plus size / the route's smallest bandwidth (the route time).",
        "One message of n bytes from u to v started at time s, as the model has it:",
    ]
    if net.send == "blocking":
        lines += [
            "host u executes before(u, n) = hetcoll_exec_before + n * hetcoll_exec_before_per_byte",
            "flops (its properties, absent = 0; hosts compute 1 flop/s, so as many seconds), then",
            "puts the message and waits for it: it arrives at s + before(u, n) + route time,",
            "and u is free again then.",
        ]
    else:
        lines += [
            "host u puts the message without waiting for it (put_async): it arrives at",
            "s + route time; u executes after(u, n) = hetcoll_exec_after + n *",
            "hetcoll_exec_after_per_byte flops (its properties, absent = 0; hosts compute",
            "1 flop/s, so as many seconds) and is free again at s + after(u, n).",
        ]
    lines += [
        {
            "none": "Receivers have no port: several messages may arrive at once.",
            "bidirectional": "A host receives one message at a time (receive port), "
            "while it sends.",
            "unidirectional": "A host sends or receives one message at a time (one port).",
        }[net.ports],
        *net.notes,
        "An infinite bandwidth is written 1e+300Bps: n / 1e300 vanishes next to any latency.",
    ]
    body = "\n       ".join(_comment(line) for line in lines)
    return f"  <!-- {body} -->"


def _spec(model: CostModel) -> str:
    spec = model.to_spec()
    return json.dumps(spec if isinstance(spec, dict) else {"name": spec})


def _prop(name: str, value: str, indent: str) -> str:
    return f"{indent}<prop id={quoteattr(name)} value={quoteattr(value)}/>"


def _bw(bytes_per_s: float) -> str:
    value = bytes_per_s if math.isfinite(bytes_per_s) else SIMGRID_INF_BANDWIDTH
    return f"{float(value)!r}Bps"  # repr: the shortest exact decimal


def _comment(text: str) -> str:
    return text.replace("--", "- -")  # "--" may not appear inside an XML comment


def to_node_link(platform: Platform) -> dict[str, Any]:
    """networkx node-link data of :meth:`Platform.to_networkx` (``edges="edges"``, SI units),
    ready for ``json.dump``; ``networkx.node_link_graph(data, edges="edges")`` reads it."""
    import networkx as nx

    from .report import to_jsonable

    return to_jsonable(nx.node_link_data(platform.to_networkx(), edges="edges"))
