"""One-port and multi-port models on the directed graph of links (Beaumont, Marchal &
Robert 2004, Sec. 2).

A transfer of ``L`` bytes over the edge ``u -> v`` occupies the link for
``T_uv(L) = latency + L / bandwidth`` (Sec. 2.1).  The models differ in what the nodes can
do at the same time:

============  ===========================================================================
name          model
============  ===========================================================================
one_port      bidirectional one-port (Sec. 2.3, 3.1): a node sends to one neighbour and
              receives from one at a time; sender and receiver are busy ``T_uv``
one_port_uni  unidirectional one-port: a single port for sending *and* receiving
multi_port    multi-port (Sec. 2.2, 3.2): the sender is busy ``send_u`` (serialised), the
              link ``T_uv`` (links in parallel); a tree node's period is
              ``max(k_u send_u, max_i T_{u,v_i})``
============  ===========================================================================

Only adjacent nodes talk: a transfer between nodes with no edge must be relayed, store and
forward, by the nodes of a path (planners record the relays in the schedule, see
:attr:`hetcoll.schedule.Flow.relays`); the simulator refuses a direct one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ModelError
from .base import BoundModel, CostModel

__all__ = ["OnePortModel", "OnePortUniModel", "MultiPortModel"]


def _needs_network(name: str, platform) -> None:
    if not platform.has_network:
        raise ModelError(
            f"model {name!r} needs links (latency, bandwidth): give 'links' or a 'latency' "
            "matrix in the platform"
        )


@dataclass(frozen=True)
class OnePortModel(CostModel):
    """Bidirectional one-port on the links' digraph (Beaumont et al. 2004, Sec. 2.3, 3.1).

    A transfer of ``L`` bytes over ``u -> v`` keeps ``u``'s send port, ``v``'s receive port
    and the link busy ``T_uv(L) = latency + L / bandwidth``; ``v`` holds the data when it
    ends.  A pipelined tree's throughput is ``1 / max_u max(sum_children T_uv, T_parent,u)``
    slices per second.
    """

    name = "one_port"
    summary = "bidirectional one-port on the links' digraph: sender and receiver busy T_uv"

    def _bind(self, platform) -> BoundModel:
        _needs_network(self.name, platform)
        return _BoundGraph(self, platform)


@dataclass(frozen=True)
class OnePortUniModel(CostModel):
    """Unidirectional one-port (Sec. 2.3): as ``one_port``, with one port per node for
    sending and receiving, so a node's period is ``T_parent,u + sum_children T_uv``."""

    name = "one_port_uni"
    summary = "unidirectional one-port on the links' digraph: one port to send and receive"

    def _bind(self, platform) -> BoundModel:
        _needs_network(self.name, platform)
        bound = _BoundGraph(self, platform)
        bound.unidirectional = True
        return bound


@dataclass(frozen=True)
class MultiPortModel(CostModel):
    """Multi-port (Bar-Noy et al., Banikazemi et al.; Beaumont et al. Sec. 2.2, 3.2).

    A transfer of ``L`` bytes over ``u -> v`` keeps the link busy ``T_uv(L)`` (the receiver
    holds the data at its end) but the sender only ``send_uv(L)``: the link's
    ``send_latency + L / send_bandwidth`` if it gives them, else the node's
    ``t_ini + L t_byte`` if it has one, else ``T_uv(L)``.  The receiver is busy
    ``recv_latency + L / recv_bandwidth`` before the end when the link gives them (else not
    at all).  Links work in parallel; each is one resource per direction.
    """

    name = "multi_port"
    summary = "multi-port: sender busy send_u, links T_uv in parallel (Bar-Noy; Beaumont 3.2)"

    def _bind(self, platform) -> BoundModel:
        _needs_network(self.name, platform)
        return _BoundGraph(self, platform)


class _BoundGraph(BoundModel):
    def __init__(self, model: CostModel, platform) -> None:
        super().__init__(model, platform)
        self.graph = platform.digraph
        self.multi_port = model.name == "multi_port"
        self._ids = platform.ids
        self._cache: dict[float, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    # -- per edge -------------------------------------------------------------------------

    def edge_costs(self, nbytes: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(T, send, recv)`` per edge for ``nbytes``-byte messages (read-only arrays)."""
        key = float(nbytes)
        if key not in self._cache:
            g = self.graph
            t = g.times(key)
            if self.multi_port:
                node = self.platform.t_ini + key * self.platform.t_byte
                has_node = (self.platform.t_ini > 0) | (self.platform.t_byte > 0)
                fallback = np.where(has_node[g.src], node[g.src], t)
                link_send = g.send_lat + key * np.nan_to_num(g.send_inv, nan=0.0)
                send = np.where(np.isnan(g.send_lat), fallback, link_send)
                link_recv = g.recv_lat + key * np.nan_to_num(g.recv_inv, nan=0.0)
                recv = np.where(np.isnan(g.recv_lat), 0.0, link_recv)
            else:
                send = recv = t
            for a in (t, send, recv):
                a.setflags(write=False)
            self._cache[key] = (t, send, recv)
        return self._cache[key]

    def _edge(self, u: int, v: int) -> int:
        e = self.graph.edge(u, v)
        if e is None:
            raise ModelError(
                f"model {self.model.name!r}: no link from {self._ids[u]!r} to {self._ids[v]!r}; "
                "a transfer between them must be relayed by the nodes of a path (plan it "
                "with a planner, which records the relays)"
            )
        return e

    def send_busy(self, u: int, v: int, nbytes: int) -> float:
        return float(self.edge_costs(nbytes)[1][self._edge(u, v)])

    def delay(self, u: int, v: int, nbytes: int) -> float:
        return float(self.edge_costs(nbytes)[0][self._edge(u, v)])

    def recv_busy(self, u: int, v: int, nbytes: int) -> float:
        return float(self.edge_costs(nbytes)[2][self._edge(u, v)])

    def path(self, u: int, v: int) -> tuple[int, ...]:
        # one-port: the ports already serialise everything the link carries; multi-port: the
        # link (one direction) is the resource that makes a node's sends overlap, not stack
        return (self._edge(u, v),) if self.multi_port else ()

    def resource_name(self, resource: int) -> tuple[str, str]:
        g = self.graph
        return self._ids[int(g.src[resource])], self._ids[int(g.dst[resource])]

    def relay_path(self, u: int, v: int, nbytes: int) -> tuple[int, ...] | None:
        if self.graph.edge(u, v) is not None:
            return None
        return self.graph.shortest_path(u, v, nbytes)

    # -- planner estimates: store and forward along shortest paths ---------------------------

    def delay_matrix(self, nbytes: int) -> np.ndarray:
        d = self.graph.distances(nbytes)
        g = self.graph
        d[g.src, g.dst] = self.edge_costs(nbytes)[0]  # exact on the edges (no tiny floor)
        np.fill_diagonal(d, 0.0)
        return d

    def send_matrix(self, nbytes: int) -> np.ndarray:
        """Busy time of the first hop: the edge's own when there is one, else the cheapest
        send of the node (a relayed path starts with one of its edges)."""
        g = self.graph
        send = self.edge_costs(nbytes)[1]
        first = np.full(self.n, math.inf)
        np.minimum.at(first, g.src, send)
        first[np.isinf(first)] = 0.0
        m = np.repeat(first[:, None], self.n, axis=1)
        m[g.src, g.dst] = send
        np.fill_diagonal(m, 0.0)
        return m
