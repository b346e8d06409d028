"""MPI test program: calls on which the ranks disagree end in MismatchError on every rank.

``mpiexec -n 4 python -m mpi4py mismatch.py SET CHECK OUT``; ``SET`` is ``types`` or
``mixed``, ``CHECK`` the wrapper's ``check``.  Each scenario is one call on which the ranks
disagree, on a wrapper of its own, followed by an agreed ``Bcast`` whose data are checked
(``after``) and ``close()``; a rank whose disagreeing call was a broadcast's root may only
learn of it in one of those (it only sent).  Each rank writes ``{"rank", "events":
[[scenario, call, outcome, data right], ...]}`` to ``OUT.<rank>``, where ``call`` is
``"call"``, ``"after"`` or ``"close"`` and ``outcome`` ``"ok"`` or ``"MismatchError"``.

``types``: the same size, another datatype (type-punned data if nothing checked it):
``Bcast`` of float64 against int64, of 8 float32 against 4 float64, with buffer specs, of
32 KiB (bare segments), a ``multicast`` whose members disagree, an ``Allgather``; and two
calls whose datatypes match under another spelling (``[buf, MPI.DOUBLE]`` against a plain
float64 array, ``MPI.LONG`` against ``MPI.INT64_T``), which must succeed.

``mixed``: one rank calls ``multicast`` while the others call ``Bcast`` (the multicast's
root, a member, a non-member; 64 B and 64 KiB).  Timeout 20 s with the default
``on_timeout="abort"``: a timeout ends the job with a non-zero code.
"""

from __future__ import annotations

import sys

import numpy as np
from _report import write_events
from mpi4py import MPI

from hetcoll import HetComm, Platform
from hetcoll.errors import MismatchError
from hetcoll.platform import nodes_from_costs

WORLD = MPI.COMM_WORLD
me, n = WORLD.rank, WORLD.size


def attempt(events: list, scenario: str, call: str, run, check=None) -> None:
    try:
        run()
        events.append([scenario, call, "ok", None if check is None else bool(check())])
    except MismatchError as exc:
        events.append([scenario, call, "MismatchError", str(exc)])


def after(events: list, hc: HetComm, scenario: str) -> None:
    buf = np.arange(100, dtype=np.uint8) if me == 0 else np.zeros(100, np.uint8)
    attempt(
        events, scenario, "after", lambda: hc.Bcast(buf, 0), lambda: (buf == np.arange(100)).all()
    )


def scenario(events: list, name: str, run, check=None) -> None:
    """``run(hc)`` on a wrapper of its own, then an agreed call and ``close()``."""
    with HetComm(WORLD, PLATFORM, "binomial", timeout=20, check=CHECK) as hc:
        attempt(events, name, "call", lambda: run(hc), check)
        after(events, hc, name)
        attempt(events, name, "close", hc.close)


def types(events: list) -> None:
    def bcast(name, root, mine, theirs, spec=None):
        buf = mine() if me == root else theirs()
        want = mine()
        datatype = None if spec is None else spec(me == root)
        arg = buf if datatype is None else [buf, datatype]
        right = lambda: buf.tobytes() == want.tobytes() if me != root else True  # noqa: E731
        scenario(events, name, lambda hc: hc.Bcast(arg, root), right)

    bcast("f64/i64", 0, lambda: np.arange(16) + 0.5, lambda: np.zeros(16, np.int64))
    bcast("8f32/4f64", 1, lambda: np.arange(8, dtype=np.float32), lambda: np.zeros(4))
    bcast(
        "spec f64/i64",
        0,
        lambda: np.arange(16) + 0.5,
        lambda: np.zeros(16, np.int64),
        lambda root: MPI.DOUBLE if root else MPI.INT64_T,
    )
    bcast("32KiB f64/i64", 2, lambda: np.arange(4096) + 0.5, lambda: np.zeros(4096, np.int64))
    # multicast: members 0, 1, 2 (root 0); rank 1 gives int64, rank 3 is not a member
    if me == 3:
        buf = None
    else:
        buf = (np.arange(16) + 0.5) if me == 0 else np.zeros(16, np.int64 if me == 1 else float)
    scenario(events, "multicast", lambda hc: hc.multicast(buf, 0, [0, 1, 2]))
    kind = np.float64 if me == 1 else np.int64
    send, recv = np.ones(4, dtype=kind), np.zeros(4 * n, dtype=kind)
    scenario(events, "Allgather", lambda hc: hc.Allgather(send, recv))
    # the same signature spelled differently: must work
    bcast(
        "agree spec/plain",
        0,
        lambda: np.arange(16) + 0.5,
        lambda: np.zeros(16),
        lambda root: MPI.DOUBLE if root else None,
    )
    bcast(
        "agree LONG/INT64_T",
        3,
        lambda: np.arange(16, dtype=np.int64),
        lambda: np.zeros(16, np.int64),
        lambda root: MPI.LONG if root else MPI.INT64_T,
    )


def mixed(events: list) -> None:
    def case(name, who, nbytes, members):
        buf = (np.arange(nbytes) % 251).astype(np.uint8) if me == 0 else np.zeros(nbytes, np.uint8)
        if me == who:
            mine = buf if members is None or me in members else None
            run = lambda hc: hc.multicast(mine, 0, members or range(n))  # noqa: E731
        else:
            run = lambda hc: hc.Bcast(buf, 0)  # noqa: E731
        scenario(events, name, run)

    case("member vs Bcast", 1, 64, None)
    case("root vs Bcast", 0, 64, None)
    case("member of two vs Bcast", 2, 64, [0, 2])
    case("non-member vs Bcast", 3, 64, [0, 1])
    case("member vs 64 KiB Bcast", 1, 64 * 1024, None)
    case("root vs 64 KiB Bcast", 0, 64 * 1024, None)


def reuse(events: list) -> None:
    """A disagreement on a root leaves messages nobody receives (rank 1 sends as the root of
    its own tree); after close(), a new wrapper's first calls take root 1's messages on the
    same tags, which must be the new ones (MPI gives a freed communicator's context to a
    later one)."""
    for k in range(3):
        buf = np.zeros(100, np.uint8)
        scenario(events, f"disagree {k}", lambda hc, buf=buf: hc.Bcast(buf, 1 if me == 1 else 0))
        want = (np.arange(100) + k).astype(np.uint8)
        with HetComm(WORLD, PLATFORM, "binomial", timeout=20, check=CHECK) as hc:
            for j in range(3):
                got = want.copy() if me == 1 else np.zeros(100, np.uint8)
                attempt(events, f"fresh {k}", f"call {j}", lambda hc=hc, got=got: hc.Bcast(got, 1),
                        lambda got=got, want=want: (got == want).all())  # fmt: skip


PLATFORM = Platform(nodes_from_costs([1e-6 * (1 + r % 3) for r in range(n)]), model="tini")
CHECK = sys.argv[2]


def main() -> None:
    which, out = sys.argv[1], sys.argv[3]
    events: list = []
    {"types": types, "mixed": mixed, "reuse": reuse}[which](events)
    write_events(out, events)


if __name__ == "__main__":
    main()
