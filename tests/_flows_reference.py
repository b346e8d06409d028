"""The shared-contention flow loop as it was before its state went into arrays: every
flow's end in the heap, its rate and bytes left in dicts, updated one flow at a time (the
flows that begin at one instant in one update, those that end at one instant in another,
as the event loop does).
``tests/test_simulator_fairshare.py`` runs the event loop with it in place of
:class:`hetcoll.simulator.events._Flows` and compares the runs bit for bit."""

from __future__ import annotations

import heapq

import numpy as np

from hetcoll.simulator.events import _FLOW_BEGIN, _FLOW_END, _INF
from hetcoll.simulator.fairshare import max_min_rates


class ReferenceFlows:
    def __init__(self, sim, records, events, finish) -> None:
        self.sim = sim
        self.records = records
        self.events = events
        self.finish = finish
        self.capacity = sim.bound.capacity()
        self.active: dict[int, None] = {}
        self.remaining: dict[int, float] = {}
        self.rate: dict[int, float] = {}
        self.since: dict[int, float] = {}
        self.version: dict[int, int] = {}

    def begin(self, idx: int, now: float) -> None:
        g = self.records[idx][0]
        self.remaining[idx] = float(self.sim.c_bytes[self.sim.cost[g]])
        self.rate[idx] = 0.0
        self.since[idx] = now
        self.version[idx] = 0
        self.active[idx] = None
        events = self.events  # flows that begin at one instant share one solve
        while events and events[0][1] == _FLOW_END:
            _, _, i, version = events[0]
            if self.version.get(i) == version and i in self.active:
                break
            heapq.heappop(events)  # stale: end() would ignore it
        else:
            if events and events[0][0] == now and events[0][1] == _FLOW_BEGIN:
                return
        self._reshare(now)

    def end(self, idx: int, version: int, now: float) -> None:
        if self.version.get(idx) != version or idx not in self.active:
            return
        del self.active[idx]
        for d in (self.remaining, self.rate, self.since, self.version):
            del d[idx]
        self.finish(idx, now)
        events = self.events  # flows that end at one instant share one solve
        while events and events[0][1] == _FLOW_END:
            _, _, i, version = events[0]
            if self.version.get(i) == version and i in self.active:
                if events[0][0] == now:
                    return
                break
            heapq.heappop(events)  # stale: end() would ignore it
        self._reshare(now)

    def _reshare(self, now: float) -> None:
        flows = list(self.active)
        if not flows:
            return
        sim = self.sim
        paths, caps = [], []
        for idx in flows:
            c = sim.cost[self.records[idx][0]]
            path = sim.c_path[c]
            paths.append(np.asarray(path if path is not None else (), dtype=np.int64))
            caps.append(sim.c_cap[c])
        rates = max_min_rates(paths, np.array(caps), self.capacity)
        for idx, rate in zip(flows, rates.tolist(), strict=True):
            old = self.rate[idx]
            if rate == old and old > 0:
                continue
            self.remaining[idx] = max(0.0, self.remaining[idx] - old * (now - self.since[idx]))
            self.since[idx] = now
            self.rate[idx] = rate
            self.version[idx] += 1
            rem = self.remaining[idx]
            finish = now if rem == 0 or rate == _INF else now + rem / rate
            heapq.heappush(self.events, (finish, _FLOW_END, idx, self.version[idx]))
