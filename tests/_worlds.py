"""Worlds in one process for the engine's loops, without MPI.

- :func:`run_world`: every rank's :class:`~hetcoll.runtime.executor.Executor` on an
  in-memory transport (messages delivered at once), driven by a virtual clock in ns;
  under emulated timing its times are the model's.
- :func:`run_native`: every rank's native loop (:class:`~hetcoll.runtime.fast.FastRun` or
  :class:`~hetcoll.runtime.segments.SegmentRun`) on a :class:`VirtualMPI`: the loops'
  MPI calls on a network that times each message by the platform's cost model
  (rendezvous: a transfer starts once its send is issued and its receive posted; the
  sender's request completes ``send_busy`` later, the receive ``delay`` later), on a clock
  that moves only when every rank waits.  Each rank runs in a thread, one at a time.
"""

from __future__ import annotations

import threading
from collections import defaultdict, deque
from collections.abc import Callable

from hetcoll.program import Program
from hetcoll.runtime.clocks import Host
from hetcoll.runtime.emulation import EmulatedTiming, Emulator
from hetcoll.runtime.executor import DataHandler, Executor, NativeTiming, rank_plan
from hetcoll.runtime.transport import CONTROL_TAGS, HEADER, Bare

__all__ = ["Scratch", "VirtualMPI", "World", "run_native", "run_world"]


class World:
    """Messages between the ranks of one process, matched by (sender, receiver, chunk) in
    order, delivered at once; a virtual clock in ns."""

    def __init__(self) -> None:
        self.now = 0
        self.unexpected: dict[tuple, deque] = defaultdict(deque)  # (dst, src, chunk) -> msgs
        self.waiting: dict[tuple, deque] = defaultdict(deque)  # (dst, src, chunk) -> recvs
        self.done: dict[int, list] = defaultdict(list)
        self.awaited: dict[tuple, deque] = defaultdict(deque)  # (dst, src, chunk) -> sends
        self.cleared: dict[int, list] = defaultdict(list)  # rank -> (send, posted, earliest)

    def clock(self) -> int:
        return self.now


class FakeTransport:
    def __init__(self, world: World, me: int) -> None:
        self.world, self.me = world, me

    def recv(self, i, peer, chunk, buf) -> None:
        queue = self.world.unexpected[(self.me, peer, chunk)]
        if queue:
            self._deliver(i, buf, *queue.popleft())
        else:
            self.world.waiting[(self.me, peer, chunk)].append((i, buf))

    def send(self, i, peer, chunk, buf, start, sent) -> None:
        data = bytes(buf)
        queue = self.world.waiting[(peer, self.me, chunk)]
        if queue:
            j, into = queue.popleft()
            FakeTransport(self.world, peer)._deliver(j, into, data, start, sent)
        else:
            self.world.unexpected[(peer, self.me, chunk)].append((data, start, sent))
        self.world.done[self.me].append((i, 0, 0))

    def _deliver(self, i, buf, data, start, sent) -> None:
        buf[: len(data)] = data
        self.world.done[self.me].append((i, start, sent))

    def poll(self):
        got, self.world.done[self.me] = self.world.done[self.me], []
        return got

    def expect(self, i, peer, chunk) -> None:
        self.world.awaited[(self.me, peer, chunk)].append(i)

    def clear(self, peer, chunk, posted, earliest) -> None:
        i = self.world.awaited[(peer, self.me, chunk)].popleft()
        self.world.cleared[peer].append((i, posted, earliest))

    def cleared(self):
        got, self.world.cleared[self.me] = self.world.cleared[self.me], []
        return got

    def settle(self) -> None:
        pass

    def idle(self, seconds) -> None:  # pragma: no cover - the world never idles a rank
        raise AssertionError("a rank idles in a virtual world")


class Scratch(DataHandler):
    """Sends zeros, receives into scratch memory (for programs that are not byte ranges)."""

    def __init__(self, program: Program) -> None:
        self.chunks = program.chunks

    def send_buffer(self, chunk):
        return memoryview(bytearray(self.chunks[chunk].nbytes))

    def recv_buffer(self, chunk, kind):
        return memoryview(bytearray(self.chunks[chunk].nbytes))


def run_world(platform, program, model=None, handlers=None, timing="emulated"):
    """Run every rank's executor on the in-memory world; each rank's done times (ns)."""
    world = World()
    rank_of = {v: r for r, v in enumerate(platform.ids)}
    emulator = Emulator(platform, list(range(len(platform))), model)
    executors = {}
    for node in program.ops:
        r = rank_of[node]
        if timing == "emulated":
            t = EmulatedTiming(emulator, r, clock=world.clock)
        else:
            t = NativeTiming(clock=world.clock)
        handler = handlers[node] if handlers else Scratch(program)
        executors[node] = Executor(
            rank_plan(program, node, rank_of), handler, FakeTransport(world, r), t
        )
    while True:
        progress = True
        while progress:
            progress = False
            for ex in executors.values():
                while ex.step():
                    progress = True
        if all(ex.remaining == 0 for ex in executors.values()):
            break
        wakes = [w for ex in executors.values() if (w := ex.wake()) is not None]
        assert wakes, "the executors deadlock"
        world.now = min(wakes)
    for ex in executors.values():
        ex.finish()
    return {node: ex.trace for node, ex in executors.items()}


# -- the native loops on a virtual MPI ------------------------------------------------------------

_TAG_UB = (1 << 31) - 1


class _Message:
    """One message: its ends' requests and, once both are there, its times (ns)."""

    def __init__(self, src: int, dst: int, tag: int, control: bool) -> None:
        self.src, self.dst, self.tag, self.control = src, dst, tag, control
        self.send: _Request | None = None
        self.recv: _Request | None = None
        self.data = b""
        self.sent = self.posted = 0  # when each end was there
        self.start: int | None = None  # the transfer's start, once both ends are there


class _Request:
    """A request of the virtual MPI (persistent or not): active from ``Start`` until a
    test has seen it complete."""

    def __init__(self, mpi: VirtualMPI, rank: int, send: bool, buf, peer: int, tag: int):
        self.mpi, self.rank, self.is_send = mpi, rank, send
        self.buf, self.peer, self.tag = buf, peer, tag
        self.message: _Message | None = None
        self.done_at: int | None = None  # when it completes (None: not yet known)
        self.active = False

    def Start(self) -> None:
        self.mpi.start(self)

    def Test(self) -> bool:
        return self.mpi.test(self)

    def Wait(self) -> None:
        if not self.mpi.test(self):  # pragma: no cover - only complete requests are waited
            raise AssertionError("a virtual request waited for before it completed")

    def Free(self) -> None:
        self.active = False


class _Comm:
    """One rank's view of the virtual MPI: the calls the native loops make."""

    def __init__(self, mpi: VirtualMPI, rank: int) -> None:
        self.mpi, self.rank = mpi, rank

    def Get_attr(self, key):
        return _TAG_UB

    def Iprobe(self, source, tag, status=None) -> bool:
        return False  # no drain notice: no call is ever abandoned here

    def Send_init(self, buf, dest: int, tag: int) -> _Request:
        return _Request(self.mpi, self.rank, True, buf, dest, tag)

    def Recv_init(self, buf, source: int, tag: int) -> _Request:
        return _Request(self.mpi, self.rank, False, buf, source, tag)

    def Issend(self, spec, dest: int, tag: int) -> _Request:
        req = _Request(self.mpi, self.rank, True, spec[0], dest, tag)
        req.Start()
        return req

    def Irecv(self, spec, source: int, tag: int) -> _Request:
        req = _Request(self.mpi, self.rank, False, spec[0], source, tag)
        req.Start()
        return req


class VirtualMPI:
    """A network of ``size`` ranks timed by ``emulator.costs`` (see the module docstring),
    and the conductor that runs one rank at a time on its virtual clock.  Messages match
    by (source, destination, tag) in order, as MPI's do.  Control messages (tags below
    :data:`~hetcoll.runtime.transport.CONTROL_TAGS`: call headers) take no time and
    complete at their sender at once (eager).  ``transfers`` records every data message
    as ``(src, dst, tag, start, payload bytes)`` in the order the transfers were set."""

    def __init__(self, emulator: Emulator, size: int) -> None:
        self.emulator, self.size = emulator, size
        self.now = 0
        self.version = 0  # moves whenever a rank's call changes something
        self.unmatched: dict[tuple[int, int, int], deque[_Message]] = defaultdict(deque)
        self.waiting: list[_Request] = []  # requests whose completion time is set, not seen
        self.transfers: list[tuple[int, int, int, int, int]] = []
        self.turn: int | None = None
        self.cond = threading.Condition()
        self.host = Host(self.clock, self.sleep, self.testsome)

    def comm(self, rank: int) -> _Comm:
        return _Comm(self, rank)

    def clock(self) -> int:
        return self.now

    # -- the network ------------------------------------------------------------------------

    def start(self, req: _Request) -> None:
        self.version += 1
        req.active, req.done_at, req.message = True, None, None
        control = req.tag < CONTROL_TAGS
        src, dst = (req.rank, req.peer) if req.is_send else (req.peer, req.rank)
        key = (src, dst, req.tag)
        queue = self.unmatched[key]
        side = "send" if req.is_send else "recv"
        message = next((m for m in queue if getattr(m, side) is None), None)
        if message is None:
            message = _Message(src, dst, req.tag, control)
            queue.append(message)
        setattr(message, side, req)
        req.message = message
        if req.is_send:
            message.data = bytes(req.buf)
            message.sent = self.now
            if control:  # eager: the sender is done at once
                req.done_at = self.now
                self.waiting.append(req)
        else:
            message.posted = self.now
        if message.send is not None and message.recv is not None:
            queue.remove(message)
            self._transfer(message)

    def _transfer(self, m: _Message) -> None:
        """Both ends are there: the transfer starts (rendezvous) and its ends' times are set."""
        m.start = max(m.sent, m.posted)
        nbytes = len(m.data) - (HEADER if m.tag < Bare.base else 0)
        if m.control:
            busy = delay = 0
        else:
            busy, delay, _ = self.emulator.costs(m.src, m.dst, max(nbytes, 0))
            self.transfers.append((m.src, m.dst, m.tag, m.start, nbytes))
        if m.send.done_at is None:
            m.send.done_at = m.start + busy
            self.waiting.append(m.send)
        m.recv.done_at = m.start + delay
        self.waiting.append(m.recv)

    def test(self, req: _Request) -> bool:
        if not req.active:
            return req.done_at is not None  # an inactive persistent request tests true
        if req.done_at is None or req.done_at > self.now:
            return False
        self.version += 1
        req.active = False
        if not req.is_send:  # the data lands in the receive buffer
            data = req.message.data
            req.buf[: len(data)] = data
        return True

    def testsome(self, requests: list) -> list[int]:
        return [k for k, r in enumerate(requests) if self.test(r)]

    # -- the conductor ----------------------------------------------------------------------

    def sleep(self, seconds: float = 0.0) -> None:
        """A rank waits: the next rank runs (and the clock moves once all wait)."""
        me = self.turn
        with self.cond:
            self.turn = None
            self.cond.notify_all()
            self.cond.wait_for(lambda: self.turn == me)

    def run(self, bodies: dict[int, Callable[[], None]]) -> None:
        """Run ``bodies[rank]()`` for every rank, one at a time, until all have returned;
        the first exception of a rank is raised here."""
        errors: list[BaseException] = []
        alive = dict.fromkeys(bodies)

        def thread(rank: int) -> None:
            with self.cond:
                self.cond.wait_for(lambda: self.turn == rank)
            try:
                bodies[rank]()
            except BaseException as exc:
                errors.append(exc)
            with self.cond:
                alive.pop(rank, None)
                self.version += 1
                self.turn = None
                self.cond.notify_all()

        threads = [threading.Thread(target=thread, args=(r,), daemon=True) for r in bodies]
        for th in threads:
            th.start()
        while alive and not errors:
            before = self.version
            for rank in list(alive):
                with self.cond:
                    self.turn = rank
                    self.cond.notify_all()
                    self.cond.wait_for(lambda: self.turn is None)
                if errors:
                    break
            if self.version == before and alive and not errors:
                due = [r.done_at for r in self.waiting if r.active and r.done_at > self.now]
                if not due:
                    raise AssertionError(f"the virtual world deadlocks at {self.now} ns")
                self.now = min(due)
        if errors:
            raise errors[0]
        for th in threads:
            th.join(timeout=10)


class _Notices:
    """What a native loop asks of the wrapper's notices: nothing ever happens here."""

    def __init__(self) -> None:
        self.stale: frozenset[int] = frozenset()
        self.early: dict = {}

    def check(self, seq: int, what) -> None:
        pass


class _Owner:
    """The settings a native loop takes from its ``ScheduleComm``."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.notices = _Notices()
        self.timeout = 1e6  # s: virtual time never gets near it
        self.spin, self.poll, self.spin_given = 20e-6, 20e-6, False
        self.ranks_on_host = 1  # a virtual host: never paced (segments.paced)
        self.on_timeout = "raise"
        self._rest = host.sleep
        self.strays = None  # no look for unmatched messages: nothing strays here


def run_native(platform, program: Program, loop: type, model=None):
    """Run ``program`` with every rank's native ``loop`` (FastRun or SegmentRun) on a
    :class:`VirtualMPI`: ``(done, transfers)``, each rank's op completion times (ns) and the
    network's transfers ``(src, dst, tag, start, bytes)``."""
    rank_of = {v: r for r, v in enumerate(platform.ids)}
    mpi = VirtualMPI(Emulator(platform, list(range(len(platform))), model), len(platform))
    runs, bodies = {}, {}
    for node in program.ops:
        r = rank_of[node]
        plan = rank_plan(program, node, rank_of)
        run = loop.compile(mpi.comm(r), plan, _Owner(mpi.host))
        assert type(run) is loop, f"{loop.__name__} does not take rank {node!r}'s plan"
        run.rest = mpi.host.sleep
        handler = Scratch(program)
        runs[node] = run
        bodies[r] = lambda run=run, handler=handler: run.run(handler, 1, 7, "a call", None)
    mpi.run(bodies)
    return {node: list(run.done) for node, run in runs.items()}, mpi.transfers
