"""MPI test program: the lone ``Start`` + ``Wait`` of a persistent ``Bcast`` of one message
per tree edge (runtime/direct.py, a ``DirectRequest``: the wrapper's only live persistent
request, nothing else queued) runs nothing of hetcoll but its three frames.
``mpiexec -n K python persistent_direct_lone.py`` (K >= 2).

Traced with ``sys.setprofile`` over several starts, each compared bit for bit with the
root's bytes (``binomial`` and ``fnf``, every root, 1 and 1000 bytes), the progress
thread ended first (its looks now and then would make the path depend on timing):

- the Python calls of one ``Start`` + ``Wait`` are ``DirectRequest.Start``,
  ``DirectRequest.Wait`` and ``DirectBcast.start``, once each (a wait for a message that
  has not arrived yet, ``DirectBcast._wait``, is not looked into: it depends on timing);
- the C functions called from them are the runner's ``acquire``/``release`` and the
  history's ``hash``: no thread identity, no other lock (``progress.guard``), no clock;
- the start's own message is received by one persistent receive, the same request every
  start and inactive after it, never by a ``Recv`` on the progress's communicator (a
  subclass that counts its ``Recv`` calls stands in for it);
- ``last_call`` and the wrapper's call count are as for any planned call.

Then the ways around the lone wait, each with the bytes compared: ``Startall`` (its
start is run in order), a second live request, a thread holding the runner while the
program waits, and a start after the wrapper broke (every rank raises, the request
completes).

Rank 0 prints one JSON line: ``{"ranks": K, "failures": [...]}``.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import numpy as np
from _report import check, report
from mpi4py import MPI

import hetcoll
from hetcoll import HetComm, Platform
from hetcoll.errors import HetcollError
from hetcoll.platform import nodes_from_costs

WORLD = MPI.COMM_WORLD
me, n = WORLD.rank, WORLD.size
FLAT = Platform(nodes_from_costs([1e-6] * n), name="flat")
PACKAGE = str(Path(hetcoll.__file__).parent)  # where hetcoll's own frames come from


def refill(buf: np.ndarray, root: int, seed: int) -> np.ndarray:
    want = np.random.default_rng(seed).integers(0, 256, buf.shape).astype(np.uint8)
    buf[...] = want if me == root else 0xEE
    return want


class CountingComm(MPI.Intracomm):
    """The progress's communicator, its ``Recv`` calls counted."""

    recvs = 0

    def Recv(self, *args, **kwargs):
        type(self).recvs += 1
        return super().Recv(*args, **kwargs)


def traced(run) -> tuple[list[str], list[str]]:
    """The hetcoll functions ``run`` calls and the C functions they call (outside
    ``DirectBcast._wait``, whose looks depend on when the message comes)."""
    calls: list[str] = []
    c_calls: list[str] = []
    inside_wait = [0]

    def profile(frame, event, arg):
        ours = frame.f_code.co_filename.startswith(PACKAGE)
        if event == "call" and ours:
            if frame.f_code.co_name == "_wait":
                inside_wait[0] += 1
            if inside_wait[0] == 0 or frame.f_code.co_name == "_wait":
                calls.append(frame.f_code.co_qualname)
        elif event == "return" and ours and frame.f_code.co_name == "_wait":
            inside_wait[0] -= 1
        elif event == "c_call" and ours and inside_wait[0] == 0:
            c_calls.append(getattr(arg, "__qualname__", repr(arg)))

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return calls, c_calls


def lone(algo: str) -> None:
    hc = HetComm(WORLD, FLAT, algo, timeout=60, on_timeout="raise")
    progress = None
    starts = 0
    for root in range(n):
        for size in (1, 1000):
            buf = np.zeros(size, np.uint8)
            req = hc.Bcast_init(buf, root)
            what = f"{algo} root {root} {size} B"
            check(type(req).__name__ == "DirectRequest", f"{what}: {type(req).__name__}")
            progress = hc._progress
            if progress.thread.is_alive():  # its looks (which take the runner now and
                # then) would send a wait the long way round at random: this program's
                # thread runs every start itself
                check(progress.stop(30), "the progress thread did not end")
            counting = CountingComm(progress.comm)
            CountingComm.recvs = 0
            progress.comm, original = counting, progress.comm
            receive = getattr(getattr(req, "direct", None), "receive", None)
            check(receive is not None, f"{what}: no persistent receive of the start's message")
            try:
                for k in range(6):
                    want = refill(buf, root, 1000 * root + 10 * size + k)
                    calls, c_calls = traced(lambda r=req: (r.Start(), r.Wait()))
                    starts += 1
                    check(buf.tobytes() == want.tobytes(), f"{what}, start {k}: the bytes")
                    outside = [c for c in calls if c != "DirectBcast._wait"]
                    check(
                        outside
                        == ["DirectRequest.Start", "DirectRequest.Wait", "DirectBcast.start"],
                        f"{what}, start {k}: hetcoll ran {calls}",
                    )
                    allowed = {"lock.acquire", "lock.release", "hash"}
                    check(set(c_calls) <= allowed, f"{what}, start {k}: C calls {c_calls}")
                    if receive is not None:
                        check(req.direct.receive is receive, f"{what}: another receive request")
                        check(receive.Get_status(), f"{what}: the receive left active")
                check(CountingComm.recvs == 0, f"{what}: {CountingComm.recvs} Recv calls")
            finally:
                progress.comm = original
            last = hc.last_call
            check(
                (last.collective, last.algorithm, last.root) == ("Bcast_init", algo, root),
                f"{what}: last_call {last}",
            )
            req.Free()
    check(hc._seq == starts, f"{algo}: {hc._seq} calls counted, not {starts}")
    hc.close()


def around() -> None:
    """The ways around the lone wait: the same bytes."""
    hc = HetComm(WORLD, FLAT, "binomial", timeout=60, on_timeout="raise")
    buf, other = np.zeros(100, np.uint8), np.zeros(10, np.uint8)
    req = hc.Bcast_init(buf, n - 1)
    for k in range(3):  # Startall: the start runs in order, found by Iprobe
        want = refill(buf, n - 1, 50 + k)
        MPI.Prequest.Startall([req])
        req.Wait()
        check(buf.tobytes() == want.tobytes(), f"Startall + Wait {k}")
    second = hc.Bcast_init(other, 0)  # two live requests: the order is looked for
    for k in range(3):
        want, want_other = refill(buf, n - 1, 60 + k), refill(other, 0, 70 + k)
        second.Start()
        req.Start()
        req.Wait()
        second.Wait()
        check(buf.tobytes() == want.tobytes(), f"two live requests {k}: the first")
        check(other.tobytes() == want_other.tobytes(), f"two live requests {k}: the second")
    second.Free()
    progress = hc._progress
    for k in range(3):  # another thread holds the runner while the program waits
        want = refill(buf, n - 1, 80 + k)
        held, release = threading.Event(), threading.Event()

        def hold(held=held, release=release) -> None:
            with progress.runner:
                held.set()
                release.wait(10)

        holder = threading.Thread(target=hold)
        holder.start()
        held.wait(10)
        req.Start()
        threading.Timer(0.02, release.set).start()
        req.Wait()
        holder.join()
        check(buf.tobytes() == want.tobytes(), f"a wait while the runner was held {k}")
    WORLD.Barrier()
    hc._broken = "a test's earlier error"  # every rank: the next start raises
    req.Start()
    try:
        req.Wait()
        check(False, "a start of a broken wrapper returned")
    except HetcollError as exc:
        check("unusable" in str(exc), f"the error: {exc}")
    check(req.Get_status(), "the broken start's request left active")
    req.Free()
    hc._release()


def main() -> None:
    for algo in ("binomial", "fnf"):
        lone(algo)
    around()
    report()


if __name__ == "__main__":
    main()
