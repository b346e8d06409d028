"""The network as data: nodes with their own costs, links or a pairwise matrix, clusters.

A :class:`Platform` is immutable and validated when built.  Files are JSON or YAML::

    {"model": "tini",
     "nodes": [{"id": "1", "t_ini": 100e-6}, {"id": "2", "t_ini": "300us"}, ...]}

    {"model": "postal",
     "nodes": [{"id": "A", "site": "yonsei"}, {"id": "B"}, ...],
     "latency": [[0, 0.012, ...], [0.012, 0, ...], ...]}

    {"model": "hockney",
     "nodes": [{"id": "a"}, {"id": "b"}, {"id": "c"}],
     "links": [{"u": "a", "v": "b", "latency": "5us", "bandwidth": "1GBps"}, ...]}

    {"model": "nic",
     "nodes": [{"id": "a", "bandwidth": "25Gbps", "latency": "5us"}, ...]}

The last is a star (:mod:`hetcoll.models.nic`): each node's full-duplex NIC into one
non-blocking switch; its pairwise latency ``latency(u) + latency(v)`` and bandwidth
``min(bandwidth(u), bandwidth(v))`` follow from the nodes, so every model that reads a
latency matrix runs on it too.

Times are seconds, sizes bytes, bandwidths bytes per second; strings with units
(``"100us"``, ``"10Gbps"``) are accepted and converted.  Node ids are strings
(integers in a file are converted), kept in file order: that order is the "rank
order" of MPI-style planners such as ``binomial``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ArgumentError, ModelError, PlatformError, UnknownNodeError
from .files import read_document, umask_mode, write_atomic  # noqa: F401  (moved to files.py)
from .platform_document import (
    BUSY_FIELDS,
    NODE_FIELDS,
    TOP_FIELDS,
    DocumentParts,
    document_parts,
    kind_of,
)
from .routing import Routes
from .sizecurve import SizeCurve
from .star import check_star, same_off_diagonal
from .switches import NODE_FIELDS as _SWITCH_NODE_FIELDS
from .switches import TOP_FIELDS as _SWITCH_TOP_FIELDS
from .switches import SwitchNetwork
from .units import check_quantities, check_quantity

__all__ = [
    "Node",
    "Link",
    "Platform",
    "Routes",
    "load_platform",
    "save_platform",
    "builtin_platforms",
]

_DATA = Path(__file__).with_name("data")


@dataclass(frozen=True)
class Node:
    """A process/host and its own communication costs.

    ``t_ini`` is the message initiation cost (seconds per message the node sends) and
    ``t_byte`` the per-byte cost (seconds per byte sent), as in Banikazemi et al. (1998),
    Sec. 3.  ``site`` and ``cluster`` are optional grouping labels (Park et al.), ``host``
    an optional machine name for the MPI runtime.  ``gamma`` is the node's combine cost
    (seconds per byte): what it costs to reduce a received partial result of ``n`` bytes
    into its own, ``n * gamma`` (docs/simulator.md, Combining).  ``bandwidth`` and
    ``latency`` are the node's NIC on a star (bytes/s and seconds; None and 0 elsewhere):
    see :mod:`hetcoll.models.nic`.
    """

    id: str
    t_ini: float = 0.0
    t_byte: float = 0.0
    site: str | None = None
    cluster: str | None = None
    host: str | None = None
    gamma: float = 0.0
    bandwidth: float | None = None
    latency: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id}
        if self.t_ini:
            out["t_ini"] = self.t_ini
        if self.t_byte:
            out["t_byte"] = self.t_byte
        if self.gamma:
            out["gamma"] = self.gamma
        if self.bandwidth is not None:
            out["bandwidth"] = _json_float(self.bandwidth)
        if self.latency:
            out["latency"] = self.latency
        for key in ("site", "cluster", "host"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


@dataclass(frozen=True)
class Link:
    """A point-to-point link: ``latency`` seconds, ``bandwidth`` bytes/s.

    Both directions with the same costs, unless ``directed`` (then only ``u -> v``; give a
    second link for ``v -> u``, possibly with other costs).  A message of ``L`` bytes
    occupies the link ``T(L) = latency + L / bandwidth`` (Beaumont, Marchal & Robert 2004,
    Sec. 2.1).  Optionally the sender is busy ``send_latency + L / send_bandwidth`` and the
    receiver ``recv_latency + L / recv_bandwidth`` (None: not given; the ``multi_port``
    model reads them, see :mod:`hetcoll.models.graph`).
    """

    u: str
    v: str
    latency: float = 0.0
    bandwidth: float = math.inf
    directed: bool = False
    send_latency: float | None = None
    send_bandwidth: float | None = None
    recv_latency: float | None = None
    recv_bandwidth: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"u": self.u, "v": self.v, "latency": self.latency}
        if math.isfinite(self.bandwidth):
            out["bandwidth"] = self.bandwidth
        if self.directed:
            out["directed"] = True
        for key in BUSY_FIELDS:
            value = getattr(self, key)
            if value is not None:
                out[key] = value if math.isfinite(value) else "inf"
        return out


@dataclass(frozen=True, eq=False)
class Platform:
    """A heterogeneous platform: nodes, optional links or pairwise matrices, a default model.

    Parameters
    ----------
    nodes : sequence of Node
        In rank order.  Ids must be unique.
    links : sequence of Link, optional
        A sparse network; messages follow the lowest-latency path.  Must be connected.
    latency, bandwidth : array_like, optional
        Full ``N x N`` pairwise matrices (seconds, bytes/s), asymmetric allowed, zero diagonal
        for latency.  Mutually exclusive with ``links``.
    model : str or mapping, optional
        The default cost model (``"tini"``, ``"hockney"``, ``"postal"`` or
        ``{"name": "postal", "gap": 1e-6}``); see :mod:`hetcoll.models`.
    name : str, optional
    switches : SwitchNetwork, optional
        A switch-based network (Hsu et al. 2005): switches, links between them, the switch
        and the costs of each node; see :mod:`hetcoll.switches`.  Mutually exclusive with
        ``links`` and the matrices.  A node without ``t_ini``/``t_byte`` gets its ``S_c`` and
        ``S_m`` there (its sending cost, eq. 2: what the sender-only model ``tini`` sees).

    Times and bandwidths may be strings with units (``"100us"``, ``"1GBps"``); every one
    goes through :func:`hetcoll.units.check_quantity` (finite, ``>= 0``, at most
    ``MAX_TIME``; bandwidths ``> 0``, infinite allowed).  The bandwidth matrix's diagonal is
    not used and is stored as ``inf``.

    Raises
    ------
    PlatformError
        Duplicate ids, unknown link ends, bad matrices, negative, non-finite or huge costs,
        a disconnected network.
    """

    nodes: tuple[Node, ...]
    links: tuple[Link, ...] = ()
    latency: np.ndarray | None = None
    bandwidth: np.ndarray | None = None
    model: Any = "tini"
    name: str = ""
    switches: SwitchNetwork | None = None
    size_curve: SizeCurve | None = None  # per-byte costs by message size (sizecurve.py)
    _index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        nodes = tuple(
            _checked_node(node, i) for i, node in enumerate(_sequence(self.nodes, "nodes"))
        )
        object.__setattr__(self, "nodes", nodes)
        links = _sequence(self.links, "links")
        object.__setattr__(self, "links", tuple(_checked_link(lk, k) for k, lk in enumerate(links)))
        if not nodes:
            raise PlatformError("nodes: must list at least one node")
        if not isinstance(self.name, str):
            raise PlatformError(f"name: must be a string, got {self.name!r}")
        index: dict[str, int] = {}
        for i, node in enumerate(nodes):
            if node.id in index:
                raise PlatformError(f"nodes[{i}].id: duplicate id {node.id!r}")
            index[node.id] = i
        object.__setattr__(self, "_index", index)
        if self.size_curve is not None and not isinstance(self.size_curve, SizeCurve):
            object.__setattr__(self, "size_curve", SizeCurve.from_list(self.size_curve))
        self._check_links()
        self._check_star()
        self._check_matrices()
        self._check_switches()
        from .models import get_model  # models import platform: late import avoids a cycle

        try:
            object.__setattr__(self, "model", get_model(self.model))
        except ModelError as exc:  # "model: ..." once, whatever get_model's message starts with
            message = str(exc) if str(exc).startswith("model") else f"model: {exc}"
            raise PlatformError(message) from None
        if self.model.name == "nic" and not self.is_star:
            raise PlatformError(
                "model 'nic': a star needs every node's NIC 'bandwidth' "
                '(e.g. {"id": "a", "bandwidth": "25Gbps", "latency": "5us"})'
            )

    # -- validation ---------------------------------------------------------------------------

    def _check_links(self) -> None:
        if not self.links:
            return
        if self.latency is not None or self.bandwidth is not None:
            raise PlatformError("give either 'links' or 'latency'/'bandwidth' matrices, not both")
        seen = set()
        for k, link in enumerate(self.links):
            for end in ("u", "v"):
                if getattr(link, end) not in self._index:
                    raise PlatformError(f"links[{k}].{end}: unknown node {getattr(link, end)!r}")
            if link.u == link.v:
                raise PlatformError(f"links[{k}]: a link from {link.u!r} to itself")
            # an undirected link holds both directions; a directed one only u -> v
            keys = {(link.u, link.v)} if link.directed else {(link.u, link.v), (link.v, link.u)}
            if not seen.isdisjoint(keys):
                raise PlatformError(f"links[{k}]: duplicate link between {link.u!r} and {link.v!r}")
            seen |= keys
        components = self._components()
        if len(components) > 1:
            a, b = components[0], components[1]
            raise PlatformError(
                f"network is disconnected: {len(components)} components, e.g. node "
                f"{self.nodes[b[0]].id!r} cannot reach node {self.nodes[a[0]].id!r}"
            )

    def _check_star(self) -> None:
        derived = check_star(self.nodes, bool(self.links), self.switches is not None)
        if derived is None:
            return
        for name, matrix in zip(("latency", "bandwidth"), derived, strict=True):
            given = getattr(self, name)
            if given is not None and not same_off_diagonal(given, matrix):
                raise PlatformError(
                    f"{name}: a star's matrices follow from its nodes' NICs; give either "
                    "the nodes' 'bandwidth'/'latency' or the matrices, not both"
                )
            object.__setattr__(self, name, matrix)

    @property
    def is_star(self) -> bool:
        """True for a star: every node has a NIC ``bandwidth`` (:mod:`hetcoll.models.nic`)."""
        return self.nodes[0].bandwidth is not None

    def _check_switches(self) -> None:
        if self.switches is None:
            return
        if not isinstance(self.switches, SwitchNetwork):
            raise PlatformError(
                f"switches: must be a SwitchNetwork, got {type(self.switches).__name__}"
            )
        if self.links or self.latency is not None:
            raise PlatformError("give either 'switches' or 'links'/'latency', not both")
        self.switches.check(self.ids)
        # the sender-only view (model tini) of a workstation is its eq. (2) sending cost
        costs = self.switches.costs.tolist()
        nodes = tuple(
            replace(n, t_ini=c[0], t_byte=c[1]) if n.t_ini == 0 and n.t_byte == 0 else n
            for n, c in zip(self.nodes, costs, strict=True)
        )
        object.__setattr__(self, "nodes", nodes)

    def _components(self) -> list[list[int]]:
        parent = list(range(len(self.nodes)))

        def find(x: int) -> int:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for link in self.links:
            a, b = find(self._index[link.u]), find(self._index[link.v])
            if a != b:
                parent[max(a, b)] = min(a, b)
        groups: dict[int, list[int]] = {}
        for i in range(len(self.nodes)):
            groups.setdefault(find(i), []).append(i)
        return sorted(groups.values())

    def _check_matrices(self) -> None:
        n = len(self.nodes)
        for name in ("latency", "bandwidth"):
            value = getattr(self, name)
            if value is None:
                continue
            try:
                matrix = np.array(value, dtype=float)
            except (TypeError, ValueError, OverflowError):
                raise PlatformError(f"{name}: must be an N x N matrix of numbers") from None
            if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
                raise PlatformError(f"{name}: must be a square matrix, got shape {matrix.shape}")
            if matrix.shape[0] != n:
                raise PlatformError(
                    f"{name}: is {matrix.shape[0]} x {matrix.shape[1]} but the platform has "
                    f"{n} nodes"
                )
            if name == "latency":
                check_quantities(matrix, "time", name, error=PlatformError)
                diag = np.flatnonzero(np.diag(matrix) != 0)
                if len(diag):
                    i = diag[0]
                    raise PlatformError(
                        f"latency[{i}][{i}]: diagonal must be 0, got {matrix[i, i]}"
                    )
            else:
                np.fill_diagonal(matrix, np.inf)  # never used: no message goes to itself
                check_quantities(matrix, "bandwidth", name, error=PlatformError)
            matrix.setflags(write=False)
            object.__setattr__(self, name, matrix)
        if self.bandwidth is not None and self.latency is None:
            raise PlatformError("bandwidth: a bandwidth matrix needs a 'latency' matrix too")

    # -- lookup -------------------------------------------------------------------------------

    @cached_property
    def ids(self) -> tuple[str, ...]:
        """Node ids in rank order (computed once: callers index it per transfer)."""
        return tuple(n.id for n in self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._index

    def index(self, node_id: str) -> int:
        """Rank of ``node_id``; :class:`UnknownNodeError` naming the id if it is not here."""
        try:
            return self._index[node_id]
        except (KeyError, TypeError):
            sample = ", ".join(repr(i) for i in self.ids[:6])
            more = ", ..." if len(self) > 6 else ""
            raise UnknownNodeError(
                f"unknown node {node_id!r}: the platform has {len(self)} nodes ({sample}{more})"
            ) from None

    def indices(self, node_ids: Sequence[str]) -> list[int]:
        """Ranks of ``node_ids``, in order (:meth:`index` of each, in one pass)."""
        index = self._index
        try:
            return [index[i] for i in node_ids]
        except (KeyError, TypeError):
            for i in node_ids:
                self.index(i)  # names the first unknown id
            raise

    def node(self, node_id: str) -> Node:
        return self.nodes[self.index(node_id)]

    @cached_property
    def t_ini(self) -> np.ndarray:
        """Per-node message initiation cost (seconds), in rank order."""
        a = np.array([n.t_ini for n in self.nodes], dtype=float)
        a.setflags(write=False)
        return a

    @cached_property
    def t_byte(self) -> np.ndarray:
        """Per-node per-byte sending cost (seconds per byte), in rank order."""
        a = np.array([n.t_byte for n in self.nodes], dtype=float)
        a.setflags(write=False)
        return a

    @cached_property
    def gamma(self) -> np.ndarray:
        """Per-node combine cost (seconds per byte reduced), in rank order."""
        a = np.array([n.gamma for n in self.nodes], dtype=float)
        a.setflags(write=False)
        return a

    @property
    def has_network(self) -> bool:
        """True when the platform describes links or pairwise latencies."""
        return bool(self.links) or self.latency is not None

    def labels(self, level: str) -> tuple[str | None, ...]:
        """The ``site`` or ``cluster`` label of each node, in rank order (None when absent)."""
        if level not in ("site", "cluster", "host"):
            raise ArgumentError(f"level must be 'site', 'cluster' or 'host', got {level!r}")
        return tuple(getattr(n, level) for n in self.nodes)

    # -- routing ------------------------------------------------------------------------------

    @cached_property
    def routes(self) -> Routes:
        """End-to-end latency and bandwidth for every ordered pair, and the routes.

        A matrix platform gives them directly.  A link platform routes along the
        lowest-latency path, ties broken by a rule every rank applies identically (fewest
        links, then the predecessor nearest the source, then the lowest index: see
        :mod:`hetcoll.routing`); bandwidth is the path's bottleneck, and each path is a
        sequence of directed-link resources for contention, read on demand.
        """
        if self.latency is not None:
            return Routes.from_matrices(self.latency, self.bandwidth)
        if not self.links:
            raise PlatformError(
                "the platform has no 'links' and no 'latency' matrix: no network to route on"
            )
        directed = next((k for k, lk in enumerate(self.links) if lk.directed), None)
        if directed is not None:  # routing (hockney, postal) is over undirected links
            raise PlatformError(
                f"links[{directed}] is directed: only the models on the links' digraph "
                "(one_port, one_port_uni, multi_port) take directed links"
            )
        return Routes.from_links(
            len(self.nodes),
            [self._index[lk.u] for lk in self.links],
            [self._index[lk.v] for lk in self.links],
            [lk.latency for lk in self.links],
            [lk.bandwidth for lk in self.links],
        )

    @cached_property
    def digraph(self):
        """The directed graph of links (:class:`hetcoll.digraph.PlatformGraph`): an edge
        ``u -> v`` only where a link says so (a matrix platform: every ordered pair)."""
        from .digraph import PlatformGraph  # its own module: graph algorithms live there

        return PlatformGraph.from_platform(self)

    # -- conversion ---------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict that :meth:`from_dict` reads back to an equal platform."""
        out: dict[str, Any] = {}
        if self.name:
            out["name"] = self.name
        out["model"] = self.model.to_spec()
        out["nodes"] = [n.to_dict() for n in self.nodes]
        if self.links:
            out["links"] = [lk.to_dict() for lk in self.links]
        if self.latency is not None and not self.is_star:  # a star's follow from its nodes
            out["latency"] = self.latency.tolist()
        if self.bandwidth is not None and not self.is_star:
            out["bandwidth"] = [[_json_float(x) for x in row] for row in self.bandwidth.tolist()]
        if self.switches is not None:
            for i, node in enumerate(out["nodes"]):
                if (node.get("t_ini"), node.get("t_byte")) == tuple(self.switches.costs[i, :2]):
                    node.pop("t_ini", None)  # the default: S_c and S_m
                    node.pop("t_byte", None)
                node.update(self.switches.node_fields(i))
            out.update(self.switches.top_fields())
        if self.size_curve is not None:
            out["size_curve"] = self.size_curve.to_list()
        return out

    @classmethod
    def from_dict(cls, data: Any) -> Platform:
        """Build from the file format, checking every field and naming the bad one."""
        return cls._from_parts(document_parts(data))

    @classmethod
    def _from_parts(cls, parts: DocumentParts) -> Platform:
        return cls(
            tuple(Node(**kw) for kw in parts.nodes),
            tuple(Link(**kw) for kw in parts.links),
            parts.latency,
            parts.bandwidth,
            parts.model,
            parts.name,
            parts.switches,
            parts.size_curve,
        )

    def with_model(self, model: Any) -> Platform:
        """The same network with another default cost model."""
        return replace(self, model=model)

    def to_networkx(self):
        """A networkx ``Graph`` (``DiGraph`` when some link is directed or the matrix is
        asymmetric) with SI attributes, that :meth:`from_networkx` reads back to an equal
        platform.

        Node attributes: ``t_ini``, ``t_byte``, ``gamma`` (when not 0), the labels present
        (and a switch platform's ``switch``, ``type``).  Edge attributes: ``latency`` (s),
        ``bandwidth`` (bytes/s), the link's busy times when given, ``directed``, and
        ``link`` (its index in the platform) and ``tail`` (its ``u``), which keep the links'
        order and ends.  In a ``DiGraph`` an undirected link is two edges with
        ``directed=False``.  A matrix platform becomes a complete graph with the end-to-end
        latency and bandwidth of every pair, and its matrices as the graph attributes
        ``latency`` and ``bandwidth`` (a graph of links would route some pairs on shorter
        paths); a switch platform keeps its switches in the graph attributes (``switches``,
        ``switch_links``).
        """
        import networkx as nx

        asym = self.latency is not None and not (
            np.array_equal(self.latency, self.latency.T)
            and (self.bandwidth is None or np.array_equal(self.bandwidth, self.bandwidth.T))
        )
        asym = asym or any(lk.directed for lk in self.links)
        g = nx.DiGraph() if asym else nx.Graph()
        doc = self.to_dict()
        g.graph.update({k: v for k, v in doc.items() if k not in ("nodes", "links")})
        for node in doc["nodes"]:
            attrs = {k: v for k, v in node.items() if k != "id"}
            if self.switches is None:
                attrs.setdefault("t_ini", 0.0)
                attrs.setdefault("t_byte", 0.0)
            g.add_node(node["id"], **attrs)
        for k, lk in enumerate(self.links):
            attrs = {"latency": lk.latency, "bandwidth": lk.bandwidth}
            attrs.update({f: getattr(lk, f) for f in BUSY_FIELDS if getattr(lk, f) is not None})
            attrs.update(directed=lk.directed, link=k, tail=lk.u)
            g.add_edge(lk.u, lk.v, **attrs)
            if asym and not lk.directed:
                g.add_edge(lk.v, lk.u, **attrs)
        if not self.links and self.latency is not None:
            bw = self.routes.bandwidth
            for i, u in enumerate(self.ids):
                for j, v in enumerate(self.ids):
                    if i != j and (asym or i < j):
                        g.add_edge(
                            u, v, latency=float(self.latency[i, j]), bandwidth=float(bw[i, j])
                        )
        return g

    @classmethod
    def from_networkx(
        cls,
        graph,
        *,
        latency: str = "latency",
        bandwidth: str = "bandwidth",
        model: Any = None,
    ) -> Platform:
        """A platform from a networkx graph whose edges carry ``latency``/``bandwidth``
        (links; a ``DiGraph``'s edges are directed links unless ``directed=False``), or
        what :meth:`to_networkx` wrote (its matrices and switches too).  Attributes hetcoll
        does not know are ignored; the values are checked as a platform file's are."""
        if not (hasattr(graph, "nodes") and hasattr(graph, "edges") and hasattr(graph, "graph")):
            raise TypeError(f"from_networkx: expected a networkx graph, got {type(graph).__name__}")
        top = TOP_FIELDS | _SWITCH_TOP_FIELDS
        doc: dict[str, Any] = {
            k: v for k, v in graph.graph.items() if k in top and k not in ("nodes", "links")
        }
        node_fields = (NODE_FIELDS | _SWITCH_NODE_FIELDS) - {"id"}
        doc["nodes"] = [
            {"id": str(v), **{k: x for k, x in d.items() if k in node_fields}}
            for v, d in graph.nodes(data=True)
        ]
        star = any("bandwidth" in n for n in doc["nodes"])
        if "latency" not in doc and not star:  # a matrix or star's complete graph: no links
            doc["links"] = _links_from_networkx(graph, latency, bandwidth)
        if model is not None:
            doc["model"] = model if isinstance(model, str | Mapping) else model.to_spec()
        elif "model" not in doc:
            doc["model"] = "hockney" if doc.get("links") else "tini"
        return cls._from_parts(document_parts(doc))


def _links_from_networkx(graph, latency: str, bandwidth: str) -> list[dict[str, Any]]:
    """Link records from a graph's edges (see :meth:`Platform.from_networkx`), in the order
    of their ``link`` index when every edge has one, an undirected link once."""
    directed_graph = graph.is_directed()
    found: list[tuple[Any, dict[str, Any]]] = []
    seen: set[Any] = set()
    for n, (u, v, d) in enumerate(graph.edges(data=True)):
        u, v = str(u), str(v)
        undirected = not directed_graph or d.get("directed") is False
        if d.get("tail") is not None and str(d["tail"]) == v and undirected:
            u, v = v, u  # the link's own ends (a Graph reports them in its own order)
        key = d.get("link", ("edge", n))
        if undirected and directed_graph:
            key = d.get("link", ("pair", min(u, v), max(u, v)))
            if key in seen:
                continue  # the other direction of an undirected link
            seen.add(key)
        lat, bw = d.get(latency), d.get(bandwidth)
        link: dict[str, Any] = {
            "u": u,
            "v": v,
            "latency": 0.0 if lat is None else lat,  # JSON writes inf as null
            "bandwidth": "inf" if bw is None or bw == math.inf else bw,
        }
        if not undirected:
            link["directed"] = True
        for f in BUSY_FIELDS:
            if f in d:  # given (None: JSON's infinity)
                link[f] = "inf" if d[f] is None or d[f] == math.inf else d[f]
        found.append((key, link))
    if found and all(isinstance(k, int) for k, _ in found):
        found.sort(key=lambda item: item[0])
    return [link for _, link in found]


# -- helpers -----------------------------------------------------------------------------------


def _json_float(x: float) -> float | str:
    return x if math.isfinite(x) else "inf"


def _sequence(value: Any, where: str) -> Sequence[Any]:
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise PlatformError(f"{where}: must be a list, got {kind_of(value)}")
    return tuple(value)


def _checked_node(node: Any, i: int) -> Node:
    """``node`` with its costs through the one validator (strings with units converted)."""
    if not isinstance(node, Node):
        raise PlatformError(
            f"nodes[{i}]: must be a Node, got {kind_of(node)} (Platform.from_dict reads file data)"
        )
    if not isinstance(node.id, str) or not node.id:
        raise PlatformError(f"nodes[{i}].id: must be a non-empty string, got {node.id!r}")
    for key in ("site", "cluster", "host"):
        label = getattr(node, key)
        if label is not None and not isinstance(label, str):
            raise PlatformError(f"nodes[{i}].{key}: must be a string, got {kind_of(label)}")
    t_ini = check_quantity(node.t_ini, "time", f"nodes[{i}].t_ini", error=PlatformError)
    t_byte = check_quantity(node.t_byte, "time", f"nodes[{i}].t_byte", error=PlatformError)
    gamma = check_quantity(node.gamma, "time", f"nodes[{i}].gamma", error=PlatformError)
    latency = check_quantity(node.latency, "time", f"nodes[{i}].latency", error=PlatformError)
    bandwidth = node.bandwidth
    if bandwidth is not None:
        where = f"nodes[{i}].bandwidth"
        bandwidth = check_quantity(bandwidth, "bandwidth", where, error=PlatformError)
    same = (t_ini, t_byte, gamma, latency, bandwidth)
    if all(a is b for a, b in zip(same, _node_numbers(node), strict=True)):
        return node
    return replace(
        node, t_ini=t_ini, t_byte=t_byte, gamma=gamma, latency=latency, bandwidth=bandwidth
    )


def _node_numbers(node: Node) -> tuple[Any, ...]:
    """A node's numbers in :func:`_checked_node`'s order."""
    return (node.t_ini, node.t_byte, node.gamma, node.latency, node.bandwidth)


def _checked_link(link: Any, k: int) -> Link:
    if not isinstance(link, Link):
        raise PlatformError(f"links[{k}]: must be a Link, got {kind_of(link)}")
    for end in ("u", "v"):
        if not isinstance(getattr(link, end), str):
            raise PlatformError(f"links[{k}].{end}: must be a node id, got {getattr(link, end)!r}")
    latency = check_quantity(link.latency, "time", f"links[{k}].latency", error=PlatformError)
    bandwidth = check_quantity(
        link.bandwidth, "bandwidth", f"links[{k}].bandwidth", error=PlatformError
    )
    if not isinstance(link.directed, bool):
        raise PlatformError(f"links[{k}].directed: must be true or false, got {link.directed!r}")
    busy = {
        key: check_quantity(
            getattr(link, key),
            "bandwidth" if key.endswith("bandwidth") else "time",
            f"links[{k}].{key}",
            error=PlatformError,
        )
        for key in BUSY_FIELDS
        if getattr(link, key) is not None
    }
    if (
        latency is link.latency
        and bandwidth is link.bandwidth
        and all(v is getattr(link, key) for key, v in busy.items())
    ):
        return link
    return replace(link, latency=latency, bandwidth=bandwidth, **busy)


# -- files -------------------------------------------------------------------------------------


def builtin_platforms() -> dict[str, Path]:
    """The platforms shipped with hetcoll (``fig1``, ``testbed16``, ...): name -> file."""
    return {p.stem: p for p in sorted(_DATA.glob("*.json"))}


def load_platform(source: str | os.PathLike | Mapping | Platform) -> Platform:
    """Load a platform from a JSON/YAML file, a built-in name, a dict, or pass one through.

    A path that does not exist but names a built-in platform (``fig1``, ``testbed16``) loads
    that one.  Errors are :class:`PlatformError` prefixed with the file name.
    """
    if isinstance(source, Platform):
        return source
    if isinstance(source, Mapping):
        return Platform.from_dict(source)
    if not isinstance(source, str | os.PathLike):
        raise TypeError(
            f"load_platform: expected a file name, a built-in name, a mapping or a Platform, "
            f"got {type(source).__name__}"
        )
    path = Path(source)
    if not path.exists() and str(source) in builtin_platforms():
        path = builtin_platforms()[str(source)]
    elif not path.exists():
        names = ", ".join(builtin_platforms())
        raise PlatformError(f"{source}: no such file (built-in platforms: {names})")
    try:
        return Platform.from_dict(read_document(path, PlatformError))
    except PlatformError as exc:
        raise PlatformError(f"{path.name}: {exc}") from None


def platform_text(platform: Platform, fmt: str = "json") -> str:
    """The platform file's text, ``fmt`` ``"json"`` or ``"yaml"``."""
    data = platform.to_dict()
    if fmt == "yaml":
        import yaml

        return yaml.safe_dump(data, sort_keys=False)
    return json.dumps(data, indent=1) + "\n"


def save_platform(platform: Platform, path: str | os.PathLike) -> None:
    """Write ``platform`` as JSON (or YAML for ``.yaml``/``.yml``) by
    :func:`hetcoll.files.write_atomic`: atomically, following symlinks, through to a device."""
    if not isinstance(platform, Platform):
        raise TypeError(f"save_platform: expected a Platform, got {type(platform).__name__}")
    yaml_suffix = Path(path).suffix.lower() in (".yaml", ".yml")
    write_atomic(path, platform_text(platform, "yaml" if yaml_suffix else "json"))


def nodes_from_costs(
    t_ini: Iterable[float], t_byte: Iterable[float] | float = 0.0, ids: Iterable[str] | None = None
) -> tuple[Node, ...]:
    """Nodes ``"0".."N-1"`` (or ``ids``) with the given costs: a shortcut for generators."""
    t_ini = [float(x) for x in t_ini]
    if isinstance(t_byte, int | float):
        t_byte = [float(t_byte)] * len(t_ini)
    ids = [str(i) for i in range(len(t_ini))] if ids is None else list(ids)
    return tuple(Node(i, a, b) for i, a, b in zip(ids, t_ini, t_byte, strict=True))
