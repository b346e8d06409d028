"""Write a platform for other tools: SimGrid platform XML, networkx node-link JSON.

SimGrid (https://simgrid.org) lets a user cross-check a hetcoll prediction in an
independent simulator.  The export follows the version 4.1 platform format:

- every node becomes a ``<host>`` (speed ``1Gf``: hetcoll models no computation);
- a link platform becomes one ``<link>`` per link (``latency`` in s, ``bandwidth`` in
  ``Bps`` — bytes per second; SimGrid's ``bps`` would be bits) and an explicit ``<route>``
  per ordered pair along hetcoll's own lowest-latency route, so both tools route alike;
- a matrix platform becomes one link per ordered pair carrying that pair's latency and
  bandwidth (``symmetrical="NO"`` routes, so asymmetric matrices survive);
- per-node sending costs (``t_ini``, ``t_byte``) have no SimGrid equivalent.  They are
  encoded as a private link ``<node>_out`` (latency ``t_ini``, bandwidth ``1 / t_byte``)
  placed first on every route leaving the node: the arrival times of single messages match;
  a node's sends then share that link's bandwidth instead of queueing one after another as
  the ``tini`` model has it.

For a comparable SimGrid run use ``--cfg=network/model:CM02 --cfg=network/TCP-gamma:0``
(plain latency + size / bandwidth, no TCP window).
"""

from __future__ import annotations

import json
import math
from typing import Any
from xml.sax.saxutils import quoteattr

from .platform import Platform

__all__ = ["to_simgrid", "to_node_link", "SIMGRID_CONFIG"]

#: The SimGrid options under which its network model is the plain latency + n / bandwidth.
SIMGRID_CONFIG = ("--cfg=network/model:CM02", "--cfg=network/TCP-gamma:0")
_HUGE_BW = 1e15  # bytes/s standing for "infinite" (SimGrid needs a finite bandwidth)


def _bw(bytes_per_s: float) -> str:
    return f"{float(min(bytes_per_s, _HUGE_BW))!r}Bps"  # repr: the shortest exact decimal


def _lat(seconds: float) -> str:
    return f"{float(seconds)!r}s"


def to_simgrid(platform: Platform) -> str:
    """The platform as SimGrid v4.1 platform XML (see the module docstring for the mapping).

    O(N^2) routes for N nodes.

    Examples
    --------
    >>> from hetcoll import load_platform
    >>> xml = to_simgrid(load_platform("fig1"))
    >>> '<link id="6_out" bandwidth="1000000000000000.0Bps" latency="0.0001s"/>' in xml
    True
    """
    ids = platform.ids
    out = [
        "<?xml version='1.0'?>",
        '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
        '<platform version="4.1">',
        f"  <!-- exported by hetcoll from {_comment(platform.name or 'a platform')}; model "
        f"{_comment(json.dumps(platform.model.to_spec()))} -->",
        '  <zone id="world" routing="Full">',
    ]
    out += [f'    <host id={quoteattr(i)} speed="1Gf"/>' for i in ids]
    private = {}
    for node in platform.nodes:
        if node.t_ini or node.t_byte:
            name = f"{node.id}_out"
            private[node.id] = name
            bw = 1.0 / node.t_byte if node.t_byte else math.inf
            out.append(
                f'    <link id={quoteattr(name)} bandwidth="{_bw(bw)}" '
                f'latency="{_lat(node.t_ini)}"/>'
            )
    routes: list[str] = []
    if platform.links:
        names = []
        for k, lk in enumerate(platform.links):
            name = f"l{k}_{lk.u}_{lk.v}"
            names.append(name)
            out.append(
                f'    <link id={quoteattr(name)} bandwidth="{_bw(lk.bandwidth)}" '
                f'latency="{_lat(lk.latency)}"/>'
            )
        r = platform.routes
        for a, u in enumerate(ids):
            for b, v in enumerate(ids):
                if a != b:
                    hops = [names[res // 2] for res in r.path(a, b)]
                    routes.append(_route(u, v, private.get(u), hops))
    elif platform.latency is not None:
        bw = platform.routes.bandwidth
        for a, u in enumerate(ids):
            for b, v in enumerate(ids):
                if a == b:
                    continue
                name = f"p_{u}_{v}"
                out.append(
                    f'    <link id={quoteattr(name)} bandwidth="{_bw(bw[a, b])}" '
                    f'latency="{_lat(platform.latency[a, b])}"/>'
                )
                routes.append(_route(u, v, private.get(u), [name]))
    else:  # sender costs only: a free link carries what leaves a node without costs
        out.append(f'    <link id="free" bandwidth="{_bw(math.inf)}" latency="0.0s"/>')
        for u in ids:
            for v in ids:
                if u != v:
                    routes.append(_route(u, v, private.get(u), [] if u in private else ["free"]))
    out += routes
    out += ["  </zone>", "</platform>", ""]
    return "\n".join(out)


def _comment(text: str) -> str:
    return text.replace("--", "- -")  # "--" may not appear inside an XML comment


def _route(src: str, dst: str, first: str | None, hops: list[str]) -> str:
    links = ([first] if first else []) + hops
    ctn = "".join(f"<link_ctn id={quoteattr(n)}/>" for n in links)
    return f'    <route src={quoteattr(src)} dst={quoteattr(dst)} symmetrical="NO">{ctn}</route>'


def to_node_link(platform: Platform) -> dict[str, Any]:
    """networkx node-link data of :meth:`Platform.to_networkx` (``edges="edges"``, SI units),
    ready for ``json.dump``; ``networkx.node_link_graph(data, edges="edges")`` reads it."""
    import networkx as nx

    from .report import to_jsonable

    return to_jsonable(nx.node_link_data(platform.to_networkx(), edges="edges"))
