"""Stars of NICs with a few speeds (model ``nic``) and multi-site platforms: stars or link
graphs joined by WAN links.

A star is the single non-blocking switch with per-node full-duplex NIC rates of the
bandwidth-optimal allgather/allreduce literature (Zhao & Krishnamurthy 2023, ForestColl:
a ring is 1.50x-1.88x off the optimum on one switch with two or three NIC speeds).  A
multi-site platform is a link graph (``hockney`` with shared, max-min contention by
default): each star site becomes a switch node with one link per host (the host's NIC:
its latency and bandwidth, each direction a resource, so full duplex), each link-graph
site keeps its links, and the sites' gateways (a star's switch, a link graph's first node
unless given) are joined by WAN links.  Switch nodes carry no ``site`` label and take no
part in a collective: pass :func:`hosts` as its members.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import ArgumentError
from ..platform import Link, Node, Platform
from ..rng import as_rng
from ..units import check_quantity

__all__ = ["hosts", "multisite_platform", "star_platform"]

#: a switch node's id within its site
SWITCH = "switch"


def star_platform(
    n: int,
    speeds: Sequence[float | str] = ("25Gbps", "10Gbps"),
    latency: float | str = "5us",
    seed: int | np.random.Generator | None = None,
    *,
    name: str | None = None,
) -> Platform:
    """A star of ``n`` nodes (model ``nic``) whose NICs take the ``speeds`` in turn.

    The nodes are split as evenly as the speeds allow, the first speeds taking the extra
    nodes, in rank order (``"0"``.. the fastest first when ``speeds`` are sorted); with a
    ``seed`` the assignment is shuffled (the counts stay).  Every NIC has ``latency``.

    Examples
    --------
    >>> p = star_platform(5, ("25Gbps", "10Gbps"))
    >>> [round(node.bandwidth * 8 / 1e9) for node in p.nodes], p.model.name
    ([25, 25, 25, 10, 10], 'nic')
    """
    n = int(check_quantity(n, "count", "n", positive=True))
    if isinstance(speeds, str | bytes) or not isinstance(speeds, Sequence) or not speeds:
        raise ArgumentError(f"speeds: must be a non-empty list of bandwidths, got {speeds!r}")
    rates = [check_quantity(s, "bandwidth", f"speeds[{i}]") for i, s in enumerate(speeds)]
    lat = check_quantity(latency, "time", "latency")
    per = [n // len(rates) + (i < n % len(rates)) for i in range(len(rates))]
    nic = np.repeat(np.array(rates, dtype=float), per)
    if seed is not None:
        nic = nic[as_rng(seed).permutation(n)]
    nodes = tuple(Node(str(i), bandwidth=float(b), latency=lat) for i, b in enumerate(nic))
    label = name or f"star n={n} speeds={'/'.join(str(s) for s in speeds)}"
    return Platform(nodes, model="nic", name=label)


def multisite_platform(
    sites: Mapping[str, Platform],
    wan: Sequence[tuple[str, str, float | str, float | str]],
    *,
    gateways: Mapping[str, str] | None = None,
    model: Any = None,
    name: str = "multi-site",
) -> Platform:
    """Sites joined by WAN links, as one link-graph platform.

    Parameters
    ----------
    sites : mapping of site name to Platform
        Each a star (:func:`star_platform` or a ``nic`` file: a switch node
        ``"<site>/switch"`` and one link per host with its NIC's latency and bandwidth) or
        a link graph (its links kept).  Host ids become ``"<site>/<id>"`` with ``site``
        set to the site's name.
    wan : list of (site, site, latency, bandwidth)
        The WAN links between the sites' gateways; they must connect every site.
    gateways : mapping of site name to a node id of that site, optional
        A link-graph site's gateway (default its first node); a star's is its switch.
    model : optional
        Default ``{"name": "hockney", "contention": "shared"}``: max-min fair sharing of
        every link direction, as the ``nic`` model shares a star's NICs.

    Examples
    --------
    >>> a = star_platform(2, ("10Gbps",))
    >>> p = multisite_platform({"a": a, "b": a}, [("a", "b", "10ms", "1Gbps")])
    >>> hosts(p)
    ['a/0', 'a/1', 'b/0', 'b/1']
    >>> round(p.routes.pair(p.index("a/0"), p.index("b/1"))[0] * 1e3, 3)
    10.01
    """
    if not isinstance(sites, Mapping) or not sites:
        raise ArgumentError("sites: must map at least one site name to a platform")
    gateways = dict(gateways or {})
    nodes: list[Node] = []
    links: list[Link] = []
    gate: dict[str, str] = {}
    for site, platform in sites.items():
        if not isinstance(site, str) or not site or "/" in site:
            raise ArgumentError(
                f"sites: a site name is a non-empty string without '/', got {site!r}"
            )
        if not isinstance(platform, Platform):
            raise ArgumentError(
                f"sites[{site!r}]: must be a Platform, got {type(platform).__name__}"
            )
        gate[site] = _add_site(site, platform, gateways.pop(site, None), nodes, links)
    if gateways:
        raise ArgumentError(f"gateways: unknown site {next(iter(gateways))!r}")
    for k, item in enumerate(wan):
        if not isinstance(item, Sequence) or len(item) != 4:
            raise ArgumentError(f"wan[{k}]: must be (site, site, latency, bandwidth), got {item!r}")
        a, b, lat, bw = item
        for end in (a, b):
            if end not in gate:
                raise ArgumentError(f"wan[{k}]: unknown site {end!r}")
        links.append(
            Link(
                gate[a],
                gate[b],
                check_quantity(lat, "time", f"wan[{k}].latency"),
                check_quantity(bw, "bandwidth", f"wan[{k}].bandwidth"),
            )
        )
    model = {"name": "hockney", "contention": "shared"} if model is None else model
    return Platform(tuple(nodes), tuple(links), model=model, name=name)


def hosts(platform: Platform) -> list[str]:
    """The ids of a multi-site platform's hosts (nodes with a ``site``), in rank order: the
    members of its collectives (switch nodes only route)."""
    return [node.id for node in platform.nodes if node.site is not None]


def _add_site(
    site: str, platform: Platform, gateway: str | None, nodes: list[Node], links: list[Link]
) -> str:
    """Append ``platform``'s hosts (and a star's switch) and links; return its gateway."""
    ids = {i: f"{site}/{i}" for i in platform.ids}
    for node in platform.nodes:
        nodes.append(
            Node(
                ids[node.id],
                node.t_ini,
                node.t_byte,
                site=site,
                cluster=node.cluster,
                host=node.host,
                gamma=node.gamma,
            )
        )
    if platform.is_star:
        if gateway is not None:
            raise ArgumentError(f"gateways[{site!r}]: a star's gateway is its switch")
        switch = f"{site}/{SWITCH}"
        nodes.append(Node(switch))
        for node in platform.nodes:
            links.append(Link(ids[node.id], switch, node.latency, float(node.bandwidth)))
        return switch
    if not platform.links:
        raise ArgumentError(f"sites[{site!r}]: must be a star or a link graph")
    for lk in platform.links:
        links.append(Link(ids[lk.u], ids[lk.v], lk.latency, lk.bandwidth, lk.directed))
    gateway = platform.ids[0] if gateway is None else gateway
    if gateway not in ids:
        raise ArgumentError(f"gateways[{site!r}]: unknown node {gateway!r}")
    return ids[gateway]
