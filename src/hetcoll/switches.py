"""Switch-based irregular networks: switches with ports, links between them, up*/down* routing.

Hsu et al. (2005), Sec. 1 and 3: workstations hang on switches (8 ports each in the paper);
switches are joined by bidirectional links, whose two directions are used at once without
contending; a message crosses the switch-to-switch links of its route by wormhole routing.
A :class:`SwitchNetwork` is that structure, attached to a :class:`~hetcoll.platform.Platform`
as ``platform.switches``::

    {"model": "switch",
     "switches": [{"id": "x0", "ports": 8}, {"id": "x1"}],
     "switch_links": [["x0", "x1"]],
     "nodes": [{"id": "w0", "switch": "x0", "type": 1},
               {"id": "w1", "switch": "x1", "S_c": "90us", "S_m": "0.4us",
                "R_c": "140us", "R_m": "0.06us"}]}

A workstation has a speed ``type`` (1 fastest .. 8 slowest: the paper's Table 1,
:data:`SPEED_TYPES`) or its own costs ``S_c``, ``R_c`` (seconds per message) and ``S_m``,
``R_m`` (seconds per byte; one flit is one byte, see :mod:`hetcoll.models.switch`).

**up*/down* routing** (Autonet; Schroeder et al. 1991): a breadth-first spanning tree of
the switch graph from a *root switch*; every link's *up* end is the end nearer the root
(ties: the switch listed first in the file); a legal route crosses zero or more links
upwards, then zero or more downwards.  Two route choices:

- ``"shortest"``: the shortest legal route (fewest switch-to-switch hops) -- what an
  up*/down* network does;
- ``"tree"``: the path in the spanning tree (up to the lowest common ancestor, then down),
  a legal route that never takes a cross link.

**Root choice**: ``routing_root`` in the file if given, else the *centre* of the switch
graph (the switch with the smallest eccentricity; ties: the switch listed first), which
makes the spanning tree as shallow as possible and so keeps legal routes short.  (Autonet
elects the switch with the smallest id; with the centre, no shortest legal route is longer
than twice the graph's radius.)

Determinism (every MPI rank must derive the same routes): the spanning tree is the
breadth-first search from the root that tries a switch's neighbours in file order (a switch's
parent is the first switch that reaches it); the shortest legal route is the one found by a
breadth-first search over (switch, phase) states, phase 0 while the route may still go up,
phase 1 once it went down, that tries up moves before down moves and each in file order of
the next switch; when the all-up and the up-then-down routes to a switch are equally short,
the all-up one.  Routes are computed with :func:`scipy.sparse.csgraph.breadth_first_order`
once per source switch that is asked for.

Directed-link resources (what a route holds, for link contention): link ``k`` of
``switch_links`` from its first to its second switch is resource ``2k``, the other direction
``2k + 1``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from .errors import PlatformError
from .units import _describe as _kind  # the one wording of a wrong value
from .units import check_quantity

__all__ = [
    "SPEED_TYPES",
    "COST_FIELDS",
    "DEFAULT_PORTS",
    "SwitchNetwork",
    "UpDownRouting",
    "ROUTE_CHOICES",
    "switch_network_from_dict",
    "tree_path",
]

#: Table 1 of Hsu et al.: per speed type, ``(S_c, S_m, R_c, R_m)`` in seconds (per message)
#: and seconds per byte (per flit of one byte).  Type 1 is the fastest.
SPEED_TYPES: dict[int, tuple[float, float, float, float]] = {
    1: (60.0e-6, 0.05e-6, 110.0e-6, 0.03e-6),
    2: (90.0e-6, 0.40e-6, 140.0e-6, 0.06e-6),
    3: (120.0e-6, 0.80e-6, 170.0e-6, 0.48e-6),
    4: (150.0e-6, 1.60e-6, 200.0e-6, 0.96e-6),
    5: (180.0e-6, 2.40e-6, 230.0e-6, 1.92e-6),
    6: (300.0e-6, 3.20e-6, 360.0e-6, 2.20e-6),
    7: (400.0e-6, 3.80e-6, 500.0e-6, 2.80e-6),
    8: (500.0e-6, 4.20e-6, 600.0e-6, 3.20e-6),
}
#: A workstation's own costs, in the order of :data:`SPEED_TYPES`' tuples.
COST_FIELDS = ("S_c", "S_m", "R_c", "R_m")
#: Ports of a switch when the file does not say (the paper's switches have 8).
DEFAULT_PORTS = 8
#: Route choices of :class:`UpDownRouting`.
ROUTE_CHOICES = ("shortest", "tree")
#: Fields a switch platform adds to a node and to the top level of a platform file.
NODE_FIELDS = frozenset({"switch", "type", *COST_FIELDS})
TOP_FIELDS = frozenset({"switches", "switch_links", "routing_root"})


@dataclass(frozen=True, eq=False)
class SwitchNetwork:
    """Switches, the links between them and the switch each workstation hangs on.

    Parameters
    ----------
    ids : sequence of str
        Switch ids, in file order (the order that breaks routing ties).
    ports : sequence of int
        Each switch's port count; workstations plus switch links may not exceed it.
    links : sequence of (str, str)
        Bidirectional switch-to-switch links, in file order.
    attach : sequence of str
        The switch of each workstation, in the platform's rank order.
    costs : array_like, shape (N, 4)
        Each workstation's ``S_c, S_m, R_c, R_m`` (seconds, seconds per byte).
    types : sequence of int or None
        Each workstation's speed type (Table 1), or None when it gave its own costs.
    routing_root : str, optional
        The up*/down* root switch; None for the default (the graph's centre).

    Built and checked by :func:`switch_network_from_dict` (file data) or by the
    :class:`~hetcoll.platform.Platform` that receives it (:meth:`check`).
    """

    ids: tuple[str, ...]
    ports: tuple[int, ...]
    links: tuple[tuple[str, str], ...]
    attach: tuple[str, ...]
    costs: np.ndarray
    types: tuple[int | None, ...]
    routing_root: str | None = None
    _index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("ids", "ports", "links", "attach", "types"):
            value = getattr(self, name)
            if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
                raise PlatformError(f"switches: {name} must be a list, got {value!r}")
            object.__setattr__(self, name, tuple(value))
        object.__setattr__(self, "links", tuple(tuple(lk) for lk in self.links))
        costs = np.array(self.costs, dtype=float).reshape(len(self.attach), len(COST_FIELDS))
        costs.setflags(write=False)
        object.__setattr__(self, "costs", costs)
        object.__setattr__(self, "_index", {s: i for i, s in enumerate(self.ids)})

    # -- validation ---------------------------------------------------------------------------

    def check(self, node_ids: Sequence[str]) -> None:
        """Refuse what the paper's networks cannot be: one line naming the culprit.

        Duplicate or clashing ids, a workstation on an unknown switch, a bad link, a switch
        with more attachments (workstations and links) than ports, a disconnected switch
        graph, an unknown routing root.
        """
        if not self.ids:
            raise PlatformError("switches: must list at least one switch")
        if len(self.attach) != len(node_ids) or len(self.types) != len(node_ids):
            raise PlatformError(
                f"switches: {len(self.attach)} attachments for {len(node_ids)} workstations"
            )
        nodes = set(node_ids)
        for i, (sid, ports) in enumerate(zip(self.ids, self.ports, strict=True)):
            if not isinstance(sid, str) or not sid:
                raise PlatformError(f"switches[{i}].id: must be a non-empty string, got {sid!r}")
            if self._index[sid] != i:
                raise PlatformError(f"switches[{i}].id: duplicate id {sid!r}")
            if sid in nodes:
                raise PlatformError(f"switches[{i}].id: {sid!r} is also a workstation's id")
            if isinstance(ports, bool) or not isinstance(ports, int) or ports < 1:
                raise PlatformError(f"switches[{i}].ports: must be an integer >= 1, got {ports!r}")
        seen: set[frozenset[str]] = set()
        for k, link in enumerate(self.links):
            if len(link) != 2:
                raise PlatformError(f"switch_links[{k}]: must be a pair of switch ids")
            for end in link:
                if end not in self._index:
                    raise PlatformError(f"switch_links[{k}]: unknown switch {end!r}")
            if link[0] == link[1]:
                raise PlatformError(f"switch_links[{k}]: a link from {link[0]!r} to itself")
            key = frozenset(link)
            if key in seen:
                raise PlatformError(
                    f"switch_links[{k}]: duplicate link between {link[0]!r} and {link[1]!r}"
                )
            seen.add(key)
        for i, sid in enumerate(self.attach):
            if sid not in self._index:
                raise PlatformError(
                    f"nodes[{i}].switch: unknown switch {sid!r} (switches: "
                    f"{', '.join(self.ids[:6])}{', ...' if len(self.ids) > 6 else ''})"
                )
        used = self.workstation_count + self.degree
        for i in np.flatnonzero(used > np.asarray(self.ports)):
            raise PlatformError(
                f"switch {self.ids[i]!r}: {used[i]} attachments ({self.workstation_count[i]} "
                f"workstations, {self.degree[i]} switch links) but {self.ports[i]} ports"
            )
        far = np.flatnonzero(self.distances[0] < 0)
        if len(far):
            raise PlatformError(
                f"switch graph is disconnected: switch {self.ids[far[0]]!r} cannot reach "
                f"switch {self.ids[0]!r}"
            )
        if self.routing_root is not None and self.routing_root not in self._index:
            raise PlatformError(f"routing_root: unknown switch {self.routing_root!r}")

    # -- structure ----------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.ids)

    def index(self, switch_id: str) -> int:
        try:
            return self._index[switch_id]
        except (KeyError, TypeError):
            raise PlatformError(f"unknown switch {switch_id!r}") from None

    @cached_property
    def switch_of(self) -> np.ndarray:
        """The switch index of each workstation, in rank order."""
        a = np.array([self._index[s] for s in self.attach], dtype=np.intp)
        a.setflags(write=False)
        return a

    @cached_property
    def link_ends(self) -> np.ndarray:
        """``(k, 2)`` switch indices of each link, in file order."""
        a = np.array([[self._index[x], self._index[y]] for x, y in self.links], dtype=np.intp)
        a = a.reshape(len(self.links), 2)
        a.setflags(write=False)
        return a

    @cached_property
    def neighbours(self) -> tuple[tuple[int, ...], ...]:
        """Each switch's neighbours, in file order of the neighbour (ascending index)."""
        adj: list[set[int]] = [set() for _ in self.ids]
        for a, b in self.link_ends.tolist():
            adj[a].add(b)
            adj[b].add(a)
        return tuple(tuple(sorted(s)) for s in adj)

    @cached_property
    def degree(self) -> np.ndarray:
        """External degree: the number of neighbouring switches (Hsu et al., Sec. 4)."""
        return np.array([len(n) for n in self.neighbours], dtype=np.intp)

    @cached_property
    def workstation_count(self) -> np.ndarray:
        """Internal degree: the number of workstations on each switch (Hsu et al., Sec. 4)."""
        return np.bincount(self.switch_of, minlength=len(self.ids)).astype(np.intp)

    def members(self, switch: int) -> list[int]:
        """Workstation indices on switch ``switch``, in rank order."""
        return np.flatnonzero(self.switch_of == switch).tolist()

    @cached_property
    def distances(self) -> np.ndarray:
        """``S x S`` hop counts of the switch graph (-1 between components)."""
        from scipy.sparse.csgraph import shortest_path

        d = shortest_path(self.graph(), unweighted=True, directed=False)
        out = np.where(np.isfinite(d), d, -1).astype(np.intp)
        out.setflags(write=False)
        return out

    def graph(self):
        """The switch graph as a symmetric CSR matrix (sorted indices)."""
        from scipy.sparse import csr_matrix

        ends = self.link_ends
        s = len(self.ids)
        rows = np.concatenate([ends[:, 0], ends[:, 1]])
        cols = np.concatenate([ends[:, 1], ends[:, 0]])
        m = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(s, s))
        m.sort_indices()
        return m

    @cached_property
    def root(self) -> int:
        """The up*/down* root switch's index (see the module docstring for the choice)."""
        if self.routing_root is not None:
            return self._index[self.routing_root]
        ecc = self.distances.max(axis=1)
        return int(np.flatnonzero(ecc == ecc.min())[0])

    @cached_property
    def routing(self) -> UpDownRouting:
        return UpDownRouting(self)

    # -- file format --------------------------------------------------------------------------

    def node_fields(self, i: int) -> dict[str, Any]:
        """What workstation ``i`` adds to its node in a platform file."""
        out: dict[str, Any] = {"switch": self.attach[i]}
        if self.types[i] is not None:
            out["type"] = self.types[i]
        else:
            out.update(zip(COST_FIELDS, self.costs[i].tolist(), strict=True))
        return out

    def top_fields(self) -> dict[str, Any]:
        """What the network adds to the top level of a platform file."""
        out: dict[str, Any] = {
            "switches": [
                {"id": s} if p == DEFAULT_PORTS else {"id": s, "ports": p}
                for s, p in zip(self.ids, self.ports, strict=True)
            ],
            "switch_links": [list(lk) for lk in self.links],
        }
        if self.routing_root is not None:
            out["routing_root"] = self.routing_root
        return out


class UpDownRouting:
    """up*/down* routes of a :class:`SwitchNetwork` (rules in the module docstring).

    ``route(a, b, choice)`` is the tuple of switch indices from ``a`` to ``b`` (both
    included); ``hops(choice)`` the ``S x S`` matrix of switch-to-switch hops;
    ``resources(route)`` the directed-link resources a route holds.
    """

    def __init__(self, net: SwitchNetwork) -> None:
        self.net = net
        self.n = len(net.ids)
        self.root = net.root
        self.level = net.distances[self.root]  # BFS distance from the root
        ends = net.link_ends
        self._resource = {}
        for k, (a, b) in enumerate(ends.tolist()):
            self._resource[(a, b)] = 2 * k
            self._resource[(b, a)] = 2 * k + 1
        self._rows: dict[int, np.ndarray] = {}  # source switch -> predecessor row (states)
        self._cache: dict[tuple[int, int, str], tuple[int, ...]] = {}
        self._tables: dict[str, np.ndarray] = {}

    # -- the spanning tree and the link orientation ---------------------------------------------

    def is_up(self, a: int, b: int) -> bool:
        """Whether crossing the link from ``a`` to ``b`` goes up (towards the root)."""
        la, lb = self.level[a], self.level[b]
        return bool(lb < la or (lb == la and b < a))

    @cached_property
    def parent(self) -> np.ndarray:
        """Each switch's parent in the BFS spanning tree (the root's is -1)."""
        from scipy.sparse.csgraph import breadth_first_order

        _, pred = breadth_first_order(
            self.net.graph(), self.root, directed=True, return_predecessors=True
        )
        pred = np.where(pred < 0, -1, pred).astype(np.intp)
        pred.setflags(write=False)
        return pred

    @cached_property
    def depth(self) -> np.ndarray:
        """Each switch's depth in the spanning tree (its BFS level)."""
        return self.level

    @cached_property
    def _states(self):
        """The (switch, phase) state graph: state ``x`` is phase 0 (may still go up),
        ``x + S`` phase 1 (went down); CSR with sorted indices, so a breadth-first search
        tries up moves (to phase-0 states) before down moves, each by switch index."""
        from scipy.sparse import csr_matrix

        s = self.n
        rows, cols = [], []
        for a, b in self.net.link_ends.tolist():
            for x, y in ((a, b), (b, a)):
                if self.is_up(x, y):
                    rows.append(x)
                    cols.append(y)
                else:
                    rows += [x, x + s]
                    cols += [y + s, y + s]
        m = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(2 * s, 2 * s))
        m.sort_indices()
        return m

    def _row(self, a: int) -> np.ndarray:
        row = self._rows.get(a)
        if row is None:
            from scipy.sparse.csgraph import breadth_first_order

            _, row = breadth_first_order(self._states, a, directed=True, return_predecessors=True)
            self._rows[a] = row
        return row

    @cached_property
    def _state_hops(self) -> np.ndarray:
        """``S x 2S`` hops from each switch (phase 0) to every state (-1: unreachable)."""
        from scipy.sparse.csgraph import shortest_path

        d = shortest_path(self._states, unweighted=True, indices=np.arange(self.n))
        return np.where(np.isfinite(d), d, -1).astype(np.intp)

    @cached_property
    def _hops_shortest(self) -> np.ndarray:
        s = self.n
        d = self._state_hops.astype(float)
        d[d < 0] = np.inf
        out = np.minimum(d[:, :s], d[:, s:]).astype(np.intp)
        out.setflags(write=False)
        return out

    @cached_property
    def _hops_tree(self) -> np.ndarray:
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import shortest_path

        kids = np.flatnonzero(self.parent >= 0)
        t = csr_matrix((np.ones(len(kids)), (kids, self.parent[kids])), shape=(self.n, self.n))
        out = shortest_path(t, unweighted=True, directed=False).astype(np.intp)
        out.setflags(write=False)
        return out

    def hops(self, choice: str = "shortest") -> np.ndarray:
        """``S x S`` switch-to-switch hops of the routes (read-only)."""
        _check_choice(choice)
        return self._hops_shortest if choice == "shortest" else self._hops_tree

    # -- routes ---------------------------------------------------------------------------------

    def route(self, a: int, b: int, choice: str = "shortest") -> tuple[int, ...]:
        """Switch indices from ``a`` to ``b``, both included (``(a,)`` when equal)."""
        key = (a, b, choice)
        found = self._cache.get(key)
        if found is None:
            _check_choice(choice)
            found = self._shortest(a, b) if choice == "shortest" else self._tree(a, b)
            self._cache[key] = found
        return found

    def _shortest(self, a: int, b: int) -> tuple[int, ...]:
        if a == b:
            return (a,)
        s = self.n
        pred = self._row(a)
        # the search reaches b in phase 0 (all up) and/or 1: the nearer, phase 0 on ties
        up = self._walk(pred, b, a)
        down = self._walk(pred, b + s, a)
        path = down if up is None or (down is not None and len(down) < len(up)) else up
        assert path is not None  # a connected graph always has a legal route
        return tuple(x % s for x in path)

    @staticmethod
    def _walk(pred: np.ndarray, target: int, source: int) -> list[int] | None:
        path = [target]
        x = target
        while x != source:
            x = int(pred[x])
            if x < 0:
                return None
            path.append(x)
        path.reverse()
        return path

    def _tree(self, a: int, b: int) -> tuple[int, ...]:
        return tree_path(self.parent, self.depth, a, b)

    def resources(self, route: Sequence[int]) -> tuple[int, ...]:
        """The directed-link resources a route of switch indices holds."""
        res = self._resource
        return tuple(res[(route[i], route[i + 1])] for i in range(len(route) - 1))

    @property
    def pad(self) -> int:
        """A resource id no route holds (2 x the number of links): padding in tables."""
        return 2 * len(self.net.links)

    @cached_property
    def resource_matrix(self) -> np.ndarray:
        """``S x S``: the resource of the directed link from ``x`` to ``y`` (-1: no link)."""
        m = np.full((self.n, self.n), -1, dtype=np.int32)
        for (a, b), r in self._resource.items():
            m[a, b] = r
        m.setflags(write=False)
        return m

    def route_table(self, choice: str = "shortest") -> np.ndarray:
        """``S x S x D``: the resources of every route (:meth:`route` order), padded with
        :attr:`pad`; ``D`` is the longest route (at least 1).  O(S^2 D) memory, vectorised
        walks along the breadth-first predecessors (the same routes as :meth:`route`)."""
        found = self._tables.get(choice)
        if found is not None:
            return found
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import breadth_first_order

        s = self.n
        hops = self.hops(choice)
        depth = max(int(hops.max()), 1)
        out = np.full((s, s, depth), self.pad, dtype=np.int32)
        res = self.resource_matrix
        if choice == "shortest":
            graph = self._states
            st = self._state_hops
            # the nearer of the two states of b; phase 0 on ties (as route())
            d0 = np.where(st[:, :s] < 0, np.iinfo(np.intp).max, st[:, :s])
            d1 = np.where(st[:, s:] < 0, np.iinfo(np.intp).max, st[:, s:])
            target = np.where(d0 <= d1, np.arange(s), np.arange(s) + s)
        else:
            kids = np.flatnonzero(self.parent >= 0)
            graph = csr_matrix(
                (
                    np.ones(2 * len(kids)),
                    (np.r_[kids, self.parent[kids]], np.r_[self.parent[kids], kids]),
                ),
                shape=(s, s),
            )
            graph.sort_indices()
            target = np.broadcast_to(np.arange(s), (s, s))
        cols = np.arange(s)
        for a in range(s):
            if choice == "shortest":
                pred = self._row(a)
            else:
                pred = breadth_first_order(graph, a, directed=False, return_predecessors=True)[1]
            cur = np.array(target[a], dtype=np.intp)
            length = hops[a]
            for k in range(depth):
                live = length > k
                if not live.any():
                    break
                c = cur[live]
                prev = pred[c]
                out[a, cols[live], length[live] - 1 - k] = res[prev % s, c % s]
                cur[live] = prev
        out.setflags(write=False)
        self._tables[choice] = out
        return out

    def resource_ends(self, resource: int) -> tuple[int, int]:
        """The ``(from, to)`` switch indices of a directed-link resource."""
        a, b = self.net.link_ends[resource // 2].tolist()
        return (a, b) if resource % 2 == 0 else (b, a)

    def is_legal(self, route: Sequence[int]) -> bool:
        """Whether ``route`` crosses only links, up ones first and then down ones."""
        down = False
        for x, y in itertools.pairwise(route):
            if (x, y) not in self._resource:
                return False
            if self.is_up(x, y):
                if down:
                    return False
            else:
                down = True
        return True


def tree_path(parent: Sequence[int], depth: Sequence[int], a: int, b: int) -> tuple[int, ...]:
    """The path from ``a`` to ``b`` in a rooted tree (``parent``, ``depth`` per node): up to
    the lowest common ancestor, then down.  O(length)."""
    left, right = [a], [b]
    x, y = a, b
    while depth[x] > depth[y]:
        x = int(parent[x])
        left.append(x)
    while depth[y] > depth[x]:
        y = int(parent[y])
        right.append(y)
    while x != y:
        x, y = int(parent[x]), int(parent[y])
        left.append(x)
        right.append(y)
    right.pop()  # the common ancestor is already in ``left``
    return tuple(left + right[::-1])


def _check_choice(choice: str) -> None:
    if choice not in ROUTE_CHOICES:
        raise PlatformError(f"routes: must be one of {', '.join(ROUTE_CHOICES)}, got {choice!r}")


# -- file data ----------------------------------------------------------------------------------


def switch_network_from_dict(
    data: Mapping[str, Any], raw_nodes: Sequence[Mapping[str, Any]]
) -> SwitchNetwork | None:
    """The :class:`SwitchNetwork` a platform file describes, or None when it has no switches.

    Reads the top-level ``switches``, ``switch_links``, ``routing_root`` and each node's
    ``switch``, ``type`` or ``S_c, S_m, R_c, R_m``; every field is checked and a bad one is
    named (``nodes[3].type: must be a speed type 1..8, got 9``).
    """
    if "switches" not in data:
        for key in ("switch_links", "routing_root"):
            if key in data:
                raise PlatformError(f"{key}: the platform lists no 'switches'")
        for i, raw in enumerate(raw_nodes):
            extra = sorted(NODE_FIELDS & set(raw))
            if extra:
                raise PlatformError(
                    f"nodes[{i}].{extra[0]}: only for switch platforms (the platform lists "
                    "no 'switches')"
                )
        return None
    raw_switches = data["switches"]
    if not isinstance(raw_switches, list) or not raw_switches:
        raise PlatformError('switches: must be a non-empty list of {"id": ..., "ports": ...}')
    ids, ports = [], []
    for i, raw in enumerate(raw_switches):
        where = f"switches[{i}]"
        if not isinstance(raw, Mapping):
            raise PlatformError(f"{where}: must be an object, got {_kind(raw)}")
        extra = sorted(set(raw) - {"id", "ports"})
        if extra:
            raise PlatformError(f"{where}.{extra[0]}: unknown field (expected one of: id, ports)")
        if "id" not in raw:
            raise PlatformError(f"{where}.id: missing")
        ids.append(_switch_id(raw["id"], f"{where}.id"))
        ports.append(_ports(raw.get("ports", DEFAULT_PORTS), f"{where}.ports"))
    raw_links = data.get("switch_links", [])
    if not isinstance(raw_links, list):
        raise PlatformError(
            f"switch_links: must be a list of [switch, switch] pairs, got {_kind(raw_links)}"
        )
    links = []
    for k, raw in enumerate(raw_links):
        if not isinstance(raw, list) or len(raw) != 2:
            raise PlatformError(
                f"switch_links[{k}]: must be a [switch, switch] pair, got {_kind(raw)}"
            )
        links.append(tuple(_switch_id(x, f"switch_links[{k}]") for x in raw))
    root = data.get("routing_root")
    if root is not None:
        root = _switch_id(root, "routing_root")
    attach, costs, types = [], [], []
    for i, raw in enumerate(raw_nodes):
        where = f"nodes[{i}]"
        if "switch" not in raw:
            raise PlatformError(
                f"{where}.switch: missing (every workstation of a switch platform hangs on a "
                "switch)"
            )
        attach.append(_switch_id(raw["switch"], f"{where}.switch"))
        kind, values = _node_costs(raw, where)
        types.append(kind)
        costs.append(values)
    return SwitchNetwork(
        tuple(ids), tuple(ports), tuple(links), tuple(attach), costs, tuple(types), root
    )


def _node_costs(raw: Mapping[str, Any], where: str) -> tuple[int | None, tuple[float, ...]]:
    given = [f for f in COST_FIELDS if f in raw]
    if "type" in raw:
        if given:
            raise PlatformError(
                f"{where}.{given[0]}: give either a speed 'type' or the costs "
                f"{', '.join(COST_FIELDS)}, not both"
            )
        t = raw["type"]
        if isinstance(t, bool) or not isinstance(t, int) or t not in SPEED_TYPES:
            raise PlatformError(
                f"{where}.type: must be a speed type 1..{len(SPEED_TYPES)} (Hsu et al. Table 1), "
                f"got {_kind(t)}"
            )
        return t, SPEED_TYPES[t]
    if not given:
        raise PlatformError(
            f"{where}: give a speed 'type' (1..{len(SPEED_TYPES)}, Hsu et al. Table 1) or the "
            f"costs {', '.join(COST_FIELDS)}"
        )
    missing = [f for f in COST_FIELDS if f not in raw]
    if missing:
        raise PlatformError(f"{where}.{missing[0]}: missing (give all of {', '.join(COST_FIELDS)})")
    return None, tuple(
        check_quantity(raw[f], "time", f"{where}.{f}", error=PlatformError) for f in COST_FIELDS
    )


def _switch_id(value: Any, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise PlatformError(f"{where}: must be a switch id (a string), got {_kind(value)}")
    text = str(value)
    if not text:
        raise PlatformError(f"{where}: must be a non-empty switch id")
    return text


def _ports(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PlatformError(f"{where}: must be an integer >= 1, got {_kind(value)}")
    n = int(check_quantity(value, "count", where, error=PlatformError, positive=True))
    return n
