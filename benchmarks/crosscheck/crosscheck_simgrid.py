"""Cross-check: replay hetcoll's schedules in SimGrid and compare every node's arrival time.

For each case (platform, cost model, planner, message size) the project's Python plans the
schedule, predicts it with :func:`hetcoll.simulate` and writes a *replay plan*: the SimGrid
platform XML of :func:`hetcoll.export.to_simgrid` and each rank's program ops (kind, peer,
bytes, deps, mailbox of the matching op).  A Python that has SimGrid's bindings (Debian's
``python3-simgrid`` under ``/usr/bin/python3``: the project's venv cannot import it) runs
this same file with ``--replay``: one SimGrid process per case, one actor per rank (its send
port) plus one per receive op, under the project's execution rules:

- a receive is posted when its deps have completed; a send is startable when its deps have
  completed and its matching receive is posted;
- when a rank's port is free it takes the first startable send in program order (none: the
  first to become startable) and owns the port until the send is done;
- the send follows the XML's properties: the sender executes ``hetcoll_exec_before`` (+ per
  byte) flops on its 1 flop/s host, waits ``hetcoll_route_latency[receiver]`` seconds if it
  has that property (``hockney`` with shared contention), then ``put`` (blocking: the port
  is busy until the arrival) or ``put_async`` followed by ``hetcoll_exec_after`` (+ per
  byte) flops (non-blocking: postal); with ``hetcoll_ports`` ``bidirectional`` the
  receiver's receive port is held from the start of the send to the arrival;
- SimGrid times the network part from the XML's links under its ``<config>`` (CM02 without
  factors, no TCP window, no cross-traffic);
- a ``recv_reduce`` completes, once its data are in, after the rank's previous one and then
  ``n * hetcoll_combine_per_byte`` seconds more in a program that reduces (the combine
  rule of docs/simulator.md).

It prints, per platform, model and planner, the largest relative error over the nodes of
the arrival time (SimGrid against hetcoll) for each size, and writes every node's numbers to
``results/crosscheck_simgrid.json``.  On the ``tini`` and ``postal`` platforms the two must
agree to SimGrid's timing precision (about 1e-9 s); on link platforms the ``hockney`` model's
exclusive links and SimGrid's shared bandwidth differ where messages overlap (and, when the
model offers it, ``contention: shared`` is compared too, which must agree).  Exit status 1
when a case of a model that must agree (all but exclusive ``hockney``) does not, naming the
cases.  Without SimGrid it says so (a one-row table, "skipped", and the JSON) and exits 0.

    python benchmarks/crosscheck/crosscheck_simgrid.py                # 1 B and 1 MiB
    python benchmarks/crosscheck/crosscheck_simgrid.py --full         # 1 B .. 8 MiB
    python benchmarks/crosscheck/crosscheck_simgrid.py --simgrid-python /opt/simgrid/bin/python3
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

DEFAULT_PYTHON = os.environ.get("HETCOLL_SIMGRID_PYTHON", "/usr/bin/python3")
#: the default's sizes (what ``make bench`` runs: every platform, model and planner, one
#: unsegmented and one segmented size) and ``--full``'s
SIZES = (1, 1 << 20)
FULL_SIZES = (1, 1 << 10, 64 << 10, 1 << 20, 8 << 20)
SEGMENTS = 16  # a pipelined chain cuts the message into this many segments
#: a case agrees when every node's arrival does to this relative error or absolute time
#: (SimGrid merges events closer than its surf/precision, 1e-9 s by default)
AGREE, AGREE_S = 1e-6, 1e-8
#: zero-time scheduling rounds a port lets pass before it chooses: sends that become
#: startable at the same instant through a chain of zero-time events are then all seen
#: (the simulator breaks such ties by program order)
SETTLE_ROUNDS = 3


# -- the SimGrid side: standard library and simgrid only (runs under the system Python) ------


def replay(plan: dict) -> dict:
    """Run one replay plan in SimGrid; each rank's op completion times and arrival."""
    import xml.etree.ElementTree as ET

    from simgrid import Actor, Engine, Host, Mailbox, Mutex, Semaphore, this_actor

    engine = Engine([sys.argv[0], "--log=root.thres:warning", *plan.get("cfg", [])])
    with tempfile.NamedTemporaryFile("w", suffix=".xml", delete=False) as f:
        f.write(plan["xml"])
    try:
        engine.load_platform(f.name)
    finally:
        os.unlink(f.name)
    zone = ET.fromstring(plan["xml"]).find("zone")
    zprops = {p.get("id"): p.get("value") for p in zone.findall("prop")}
    blocking = zprops.get("hetcoll_send", "blocking") == "blocking"
    ports = zprops.get("hetcoll_ports", "none")
    if ports == "unidirectional":
        raise SystemExit("replay: unidirectional ports are not replayed")
    hprops = {
        h.get("id"): {
            p.get("id"): json.loads(p.get("value"))  # numbers, and hetcoll_route_latency
            for p in h.findall("prop")
        }
        for h in zone.findall("host")
    }

    def cost(host: str, what: str, n: int) -> float:
        props = hprops[host]
        return props.get(f"hetcoll_exec_{what}", 0.0) + n * props.get(
            f"hetcoll_exec_{what}_per_byte", 0.0
        )

    ops = {
        r: [dict(zip(("kind", "peer", "n", "deps", "box", "match"), op, strict=True)) for op in v]
        for r, v in plan["ops"].items()
    }
    done = {r: [None] * len(v) for r, v in ops.items()}
    posted: set[tuple[str, int]] = set()
    waiters: dict[str, list] = {r: [] for r in ops}
    recv_port = {r: Mutex() for r in ops} if ports == "bidirectional" else {}

    def notify(r: str) -> None:
        pending, waiters[r] = waiters[r], []
        for sem in pending:
            sem.release()

    def wait_change(r: str) -> None:
        sem = Semaphore(0)
        waiters[r].append(sem)
        sem.acquire()

    def settle() -> None:
        for _ in range(SETTLE_ROUNDS):
            this_actor.yield_()

    def complete(r: str, i: int) -> None:
        done[r][i] = Engine.clock
        notify(r)

    def startable(r: str, i: int) -> bool:
        op = ops[r][i]
        return all(done[r][d] is not None for d in op["deps"]) and tuple(op["match"]) in posted

    combines = {}  # (rank, recv_reduce) -> the rank's previous recv_reduce, or None
    for r, mine in ops.items():
        prev = None
        for i, op in enumerate(mine):
            if op["kind"] == "recv_reduce":
                combines[(r, i)] = prev
                prev = i

    def receiver(r: str, i: int) -> None:
        op = ops[r][i]
        while not all(done[r][d] is not None for d in op["deps"]):
            wait_change(r)
        posted.add((r, i))
        notify(op["peer"])
        Mailbox.by_name(op["box"]).get()
        if (r, i) in combines:  # one combine at a time, in program order
            prev = combines[(r, i)]
            while prev is not None and done[r][prev] is None:
                wait_change(r)
            combine = op["n"] * hprops[r].get("hetcoll_combine_per_byte", 0.0)
            if plan.get("reduces") and combine > 0:
                this_actor.sleep_for(combine)
        complete(r, i)

    def port(r: str) -> None:
        pending = [i for i, op in enumerate(ops[r]) if op["kind"] == "send"]
        comms = []
        while pending:
            settle()
            pick = next((i for i in pending if startable(r, i)), None)
            if pick is None:
                wait_change(r)
                continue
            pending.remove(pick)
            op = ops[r][pick]
            lock = recv_port.get(op["peer"])
            if lock is not None:
                lock.lock()
            before = cost(r, "before", op["n"])
            if before > 0:
                this_actor.execute(before)
            wait = hprops[r].get("hetcoll_route_latency", {}).get(op["peer"], 0.0)
            if wait > 0:  # shared contention: the route's latency, off the links
                this_actor.sleep_for(wait)
            box = Mailbox.by_name(op["box"])
            if blocking:
                box.put(pick, op["n"])
            else:
                comms.append(box.put_async(pick, op["n"]))
                after = cost(r, "after", op["n"])
                if after > 0:
                    this_actor.execute(after)
            if lock is not None:
                lock.unlock()
            complete(r, pick)
        for comm in comms:
            comm.wait()

    for r, mine in ops.items():
        host = Host.by_name(r)
        Actor.create(f"{r}:port", host, port, r)
        for i, op in enumerate(mine):
            if op["kind"] != "send":
                Actor.create(f"{r}:recv{i}", host, receiver, r, i)
    engine.run()
    missing = [(r, i) for r, v in done.items() for i, t in enumerate(v) if t is None]
    if missing:
        raise SystemExit(f"replay: ops never completed (deadlock?): {missing[:5]}")
    arrival = {
        r: max(
            (t for t, op in zip(done[r], ops[r], strict=True) if op["kind"] != "send"), default=0.0
        )
        for r in ops
    }
    return {"arrival": arrival, "done": done, "clock": Engine.clock}


# -- the project's side ---------------------------------------------------------------------


def link_platform():
    """A small routed platform: two LANs joined by a WAN link through d and e, per-node
    costs that add per byte, one link of unbounded bandwidth."""
    from hetcoll import Link, Node, Platform

    nodes = (
        Node("a", 5e-6, 1e-9),
        Node("b", 5e-6, 1e-9),
        Node("c", 2e-5, 4e-9),
        Node("d", 1e-6),
        Node("e", 1e-6),
        Node("f", 5e-6, 1e-9),
        Node("g", 2e-5, 4e-9),
        Node("h", 5e-6),
    )
    lan, wan = (1e-5, 1.25e8), (5e-3, 1.25e7)
    links = (
        Link("a", "d", *lan),
        Link("b", "d", *lan),
        Link("c", "d", 1e-5, 2.5e7),
        Link("d", "e", *wan),
        Link("e", "f", *lan),
        Link("e", "g", 1e-5, 2.5e7),
        Link("f", "h", 2e-6),  # bandwidth: unbounded
    )
    return Platform(nodes, links, model="hockney", name="link8: two LANs and a WAN link")


def _shared_hockney():
    """The hockney model with flow-level sharing, when this hetcoll has it."""
    from hetcoll import get_model
    from hetcoll.errors import ModelError

    try:
        return get_model({"name": "hockney", "contention": "shared"})
    except ModelError:
        return None


def scenarios():
    """(label, platform, model or None, root) for every platform and model compared."""
    from hetcoll import load_platform

    link = link_platform()
    out = [
        ("fig1", load_platform("fig1"), None, "1"),
        ("testbed16", load_platform("testbed16"), None, "0"),
        ("park-fig2", load_platform("park-fig2"), None, "A"),
        (
            "park-fig2 LogP",
            load_platform("park-fig2"),
            {"name": "postal", "overhead": 1e-3, "gap": 2e-3, "recv_overhead": 5e-4},
            "A",
        ),
        ("link8", link, None, "a"),
    ]
    shared = _shared_hockney()
    if shared is not None:
        out.append(("link8 shared", link, shared, "a"))
    out.append(("link8 postal", link, "postal", "a"))
    out.append(("fig1 combine", _with_combine(load_platform("fig1")), None, "1"))
    out.append(("park-fig2 combine", _with_combine(load_platform("park-fig2")), None, "A"))
    return out


def _with_combine(platform):
    """``platform`` with a combine cost on every node: 2 ns/B where a node sends faster
    than average, 8 ns/B elsewhere (the reductions' cases exercise the combine rule)."""
    from dataclasses import replace

    from hetcoll import Platform

    mean = platform.t_ini.mean()
    nodes = tuple(replace(n, gamma=2e-9 if n.t_ini <= mean else 8e-9) for n in platform.nodes)
    return Platform(
        nodes,
        platform.links,
        platform.latency,
        platform.bandwidth,
        platform.model,
        f"{platform.name} with combine costs",
    )


#: planners whose rooted schedules are replayed (tini and postal: the exact models)
ROOTED_PLANNERS = ("binomial", "flat", "fnf", "rooted_ls", "rooted_exact")


def schedules(platform, model, root, nbytes):
    """(planner label, schedule) for every applicable tree planner, one pipelined chain and
    the hypercube allreduce planners."""
    from hetcoll import get_model, plan, plan_allreduce
    from hetcoll.errors import HetcollError
    from hetcoll.planners import applicable, hypercube_planners

    name = (get_model(model) if model is not None else platform.model).name
    out = []
    for method in applicable("bcast", name, len(platform)):
        try:
            out.append((method, plan(platform, root, method=method, model=model, nbytes=nbytes)))
        except HetcollError:
            continue
    if nbytes >= SEGMENTS << 10:  # pipelined: segments of at least 1 KiB
        seg = nbytes // SEGMENTS
        schedule = plan(
            platform, root, method="chain", model=model, nbytes=nbytes, segment_size=seg
        )
        out.append((f"chain, {SEGMENTS} segments", schedule))
    if name in ("tini", "postal"):
        out += _rooted(platform, model, root, nbytes)
    for method in hypercube_planners():
        if method in ("blind", "eff_cube_ls"):
            out.append(
                (
                    f"allreduce:{method}",
                    plan_allreduce(platform, method=method, model=model, nbytes=nbytes),
                )
            )
    return out


def _rooted(platform, model, root, nbytes):
    """(label, schedule) for reduce and gather to ``root`` (and scatter from it, and a
    reduce then a broadcast) by the rooted planners and broadcast planners run backwards."""
    from hetcoll import plan
    from hetcoll.errors import HetcollError

    out = []
    for collective in ("reduce", "gather", "scatter", "allreduce"):
        for method in ROOTED_PLANNERS:
            if method == "rooted_exact" and len(platform) > 8:
                continue
            try:
                sched = plan(
                    platform,
                    None if collective == "allreduce" else root,
                    method=method,
                    model=model,
                    nbytes=max(nbytes // len(platform), 1) if collective == "gather" else nbytes,
                    collective=collective,
                )
            except HetcollError:
                continue
            out.append((f"{collective}:{method}", sched))
    return out


def replay_plan(platform, model, schedule) -> dict:
    from hetcoll.export import to_simgrid

    program = schedule.program()
    matches = program.matches()
    ops = {}
    for r, mine in program.ops.items():
        rows = []
        for i, op in enumerate(mine):
            peer_r, peer_i = matches[(r, i)]
            send = (r, i) if op.kind == "send" else (peer_r, peer_i)
            rows.append(
                [
                    op.kind,
                    op.peer,
                    program.chunks[op.chunk].nbytes,
                    list(op.deps),
                    f"{send[0]}#{send[1]}",
                    [peer_r, peer_i],
                ]
            )
        ops[r] = rows
    return {"xml": to_simgrid(platform, model), "ops": ops, "reduces": program.reduces}


def run_replay(python: str, plan: dict, timeout: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp, "plan.json"), Path(tmp, "out.json")
        src.write_text(json.dumps(plan))
        proc = subprocess.run(
            [python, __file__, "--replay", str(src), "--out", str(dst)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"SimGrid replay failed: {proc.stderr.strip()[-2000:]}")
        return json.loads(dst.read_text())


def _relerr(simgrid: float, hetcoll: float) -> float:
    if hetcoll == 0:
        return abs(simgrid)
    return abs(simgrid - hetcoll) / hetcoll


def simgrid_available(python: str) -> bool:
    try:
        proc = subprocess.run([python, "-c", "import simgrid"], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def _fmt(err: float | None) -> str:
    if err is None:
        return "-"
    if err == 0:
        return "0"
    if err < 1e-3:
        return f"{err:.0e}"
    return f"{100 * err:.1f}%"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replay", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--full", action="store_true", help="sizes 1 B, 1 KiB, 64 KiB, 1 MiB, 8 MiB")
    ap.add_argument(
        "--simgrid-python",
        default=DEFAULT_PYTHON,
        help="a Python that imports simgrid (default %(default)s)",
    )
    ap.add_argument(
        "--cfg",
        action="append",
        default=[],
        metavar="OPTION:VALUE",
        help="an extra SimGrid option for every replay (e.g. surf/precision:1e-12)",
    )
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", default="results/crosscheck_simgrid.json")
    args = ap.parse_args(argv)
    if args.replay:
        result = replay(json.loads(Path(args.replay).read_text()))
        Path(args.out).write_text(json.dumps(result))
        return 0
    if not simgrid_available(args.simgrid_python):
        from hetcoll.files import write_atomic
        from hetcoll.report import format_table

        why = f"SimGrid's Python bindings are not importable by {args.simgrid_python}"
        print(format_table(["cross-check", "result"], [["SimGrid replay", f"skipped: {why}"]]))
        print("(Debian: apt-get install python3-simgrid)")
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        write_atomic(args.json, json.dumps({"benchmark": "crosscheck_simgrid", "skipped": why}))
        return 0
    return crosscheck(args)


def crosscheck(args) -> int:
    from hetcoll.files import write_atomic

    sizes = FULL_SIZES if args.full else SIZES
    cases = _cases(sizes)
    cfg = [f"--cfg={c}" for c in args.cfg]

    def one(case):
        return run_replay(args.simgrid_python, {**case.pop("plan"), "cfg": cfg}, timeout=600)

    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        outcomes = list(pool.map(one, cases))
    records = [_record(case, out) for case, out in zip(cases, outcomes, strict=True)]
    print(_error_table(records, sizes))
    print()
    summary = _summary(records)
    print(_summary_table(summary))
    doc = {
        "benchmark": "crosscheck_simgrid",
        "simgrid_python": args.simgrid_python,
        "simgrid_options": cfg,
        "agree_below": {"relative": AGREE, "seconds": AGREE_S},
        "sizes": list(sizes),
        "summary": summary,
        "cases": records,
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    write_atomic(args.json, json.dumps(doc, indent=1) + "\n")
    print(f"\nwrote {args.json}")
    wrong = [r for r in records if not r["agree"] and must_agree(r["model"])]
    for r in wrong[:10]:
        print(
            f"disagree: {r['platform']} {r['planner']} {_size(r['nbytes'])}: node "
            f"{r['worst_node']} off by {_fmt(r['max_relative_error'])}"
        )
    if wrong:
        print(f"{len(wrong)} case(s) disagree where the models must agree")
    return 1 if wrong else 0


def must_agree(model) -> bool:
    """Whether SimGrid must reproduce ``model``'s times: every model but ``hockney`` with
    exclusive links, whose queueing differs from SimGrid's shared bandwidth by design
    wherever messages overlap on a link."""
    name, contention = (model, None) if isinstance(model, str) else (
        model.get("name"), model.get("contention")
    )  # fmt: skip
    return not (name == "hockney" and contention in (None, "exclusive"))


def _cases(sizes) -> list[dict]:
    """Every (scenario, size, schedule) with hetcoll's prediction and its replay plan."""
    from hetcoll import simulate

    cases = []
    for label, platform, model, root in scenarios():
        for nbytes in sizes:
            for planner, schedule in schedules(platform, model, root, nbytes):
                pred = simulate(platform, schedule, model)
                cases.append(
                    {
                        "platform": label,
                        "model": pred.model,
                        "planner": planner,
                        "nbytes": nbytes,
                        "hetcoll": pred.arrival,
                        "plan": replay_plan(platform, model, schedule),
                    }
                )
    return cases


def _record(case: dict, out: dict) -> dict:
    errors = {r: _relerr(out["arrival"][r], t) for r, t in case["hetcoll"].items()}
    worst = max(errors, key=errors.get)
    gap = max(abs(out["arrival"][r] - t) for r, t in case["hetcoll"].items())
    return {
        **case,
        "simgrid": out["arrival"],
        "relative_error": errors,
        "max_relative_error": errors[worst],
        "worst_node": worst,
        "max_abs_error": gap,
        "agree": errors[worst] <= AGREE or gap <= AGREE_S,
    }


def _error_table(records: list[dict], sizes) -> str:
    from hetcoll.report import format_table

    table: dict[tuple[str, str], dict[int, float]] = {}
    for rec in records:
        table.setdefault((rec["platform"], rec["planner"]), {})[rec["nbytes"]] = rec[
            "max_relative_error"
        ]
    rows = [
        [label, planner, *(_fmt(by_size.get(n)) for n in sizes)]
        for (label, planner), by_size in table.items()
    ]
    return format_table(
        ["platform", "planner", *(_size(n) for n in sizes)],
        rows,
        title="SimGrid vs hetcoll: largest relative error of a node's arrival time",
    )


def _summary(records: list[dict]) -> list[dict]:
    out: dict[str, dict] = {}
    for rec in records:
        row = out.setdefault(
            rec["platform"],
            {"platform": rec["platform"], "model": rec["model"], "cases": 0, "agree": 0},
        )
        row["cases"] += 1
        row["agree"] += rec["agree"]
        row["worst"] = max(row.get("worst", 0.0), rec["max_relative_error"])
        row["worst_s"] = max(row.get("worst_s", 0.0), rec["max_abs_error"])
    return list(out.values())


def _summary_table(summary: list[dict]) -> str:
    from hetcoll.report import format_table

    rows = [
        [
            s["platform"],
            json.dumps(s["model"], separators=(",", ":")),
            s["cases"],
            s["agree"],
            _fmt(s["worst"]),
            f"{s['worst_s']:.1e}",
        ]
        for s in summary
    ]
    headers = ["platform", "model", "cases", "agree", "worst", "worst (s)"]
    note = (
        f"agree: every node within {AGREE:g} relative or {AGREE_S:g} s; worst: largest "
        "relative error of a node, and largest difference in seconds"
    )
    return format_table(headers, rows) + "\n" + note


def _size(n: int) -> str:
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


if __name__ == "__main__":
    sys.exit(main())
