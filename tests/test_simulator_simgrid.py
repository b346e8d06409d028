"""SimGrid itself replays exported platforms and schedules
(benchmarks/crosscheck/crosscheck_simgrid.py) and finds hetcoll's arrival times, node by node,
wherever the models agree: always under ``tini`` and ``postal`` (reductions and gathers with
combine costs too), and under ``hockney`` while no two messages share a link at once.
Skipped when no Python with SimGrid's bindings is found (Debian: python3-simgrid); then the
script says so and exits 0."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from hetcoll import load_platform, plan, plan_allreduce, simulate

_SCRIPT = (
    Path(__file__).resolve().parents[1] / "benchmarks" / "crosscheck" / "crosscheck_simgrid.py"
)
_spec = importlib.util.spec_from_file_location("crosscheck_simgrid", _SCRIPT)
crosscheck = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(crosscheck)

needs_simgrid = pytest.mark.skipif(
    not crosscheck.simgrid_available(crosscheck.DEFAULT_PYTHON),
    reason=f"SimGrid's Python bindings are not importable by {crosscheck.DEFAULT_PYTHON}",
)

LOGP = {"name": "postal", "overhead": 1e-3, "gap": 2e-3, "recv_overhead": 5e-4}
MIB = 1 << 20
SHARED = {"name": "hockney", "contention": "shared"}


def _cases():
    fig1, testbed, park = (load_platform(n) for n in ("fig1", "testbed16", "park-fig2"))
    link = crosscheck.link_platform()
    return [
        ("fig1 fnf", fig1, None, plan(fig1, "1", method="fnf", nbytes=MIB)),
        ("fig1 optimal", fig1, None, plan(fig1, "1", method="optimal", nbytes=64 << 10)),
        (
            "testbed16 chain, 16 segments",
            testbed,
            None,
            plan(testbed, "0", method="chain", nbytes=MIB, segment_size=64 << 10),
        ),
        ("testbed16 allreduce", testbed, None, plan_allreduce(testbed, nbytes=MIB)),
        ("park-fig2 hlot", park, None, plan(park, "A", method="hlot")),
        (
            "park-fig2 LogP gap_aware",
            park,
            LOGP,
            plan(park, "A", method="gap_aware", model=LOGP, nbytes=64 << 10),
        ),
        ("link8 postal fnf", link, "postal", plan(link, "a", method="fnf", model="postal")),
        (
            "link8 postal chain, 8 segments",
            link,
            "postal",
            plan(link, "a", method="chain", model="postal", nbytes=MIB, segment_size=MIB // 8),
        ),
        # shared contention: flows of different route latencies share the WAN link
        # equally in both tools (CM02 would weigh their shares by route latency)
        (
            "link8 shared fnf 1 KiB",
            link,
            SHARED,
            plan(link, "a", method="fnf", model=SHARED, nbytes=1 << 10),
        ),
        (
            "link8 shared allreduce 1 MiB",
            link,
            SHARED,
            plan_allreduce(link, method="blind", model=SHARED, nbytes=MIB),
        ),
        # hockney: one-port sends in sequence share no link
        ("link8 hockney flat", link, None, plan(link, "a", method="flat", nbytes=MIB)),
        ("link8 hockney chain", link, None, plan(link, "a", method="chain", nbytes=MIB)),
        *_rooted_cases(),
    ]


def _rooted_cases():
    """Reductions, gathers and their compositions, with combine costs (tini, postal)."""
    fig1 = crosscheck._with_combine(load_platform("fig1"))
    park = crosscheck._with_combine(load_platform("park-fig2"))
    return [
        (
            f"{name} {collective} {method}",
            p,
            model,
            plan(
                p,
                None if collective == "allreduce" else root,
                method=method,
                model=model,
                nbytes=nbytes,
                collective=collective,
            ),
        )
        for name, p, model, root in (
            ("fig1+gamma", fig1, None, "1"),
            ("park-fig2+gamma", park, None, "A"),
            ("park-fig2+gamma LogP", park, LOGP, "A"),
        )
        for collective, method, nbytes in (
            ("reduce", "binomial", MIB),
            ("reduce", "rooted_ls", 64 << 10),
            ("gather", "rooted_exact", 8 << 10),
            ("allreduce", "rooted_ls", MIB),
        )
    ]


@needs_simgrid
@pytest.mark.parametrize("case", _cases(), ids=lambda c: c[0])
def test_simgrid_finds_every_nodes_arrival(case):
    _, platform, model, schedule = case
    predicted = simulate(platform, schedule, model).arrival
    replayed = crosscheck.run_replay(
        crosscheck.DEFAULT_PYTHON,
        crosscheck.replay_plan(platform, model, schedule),
        timeout=120,
    )["arrival"]
    assert replayed.keys() == predicted.keys()
    for node, t in predicted.items():
        assert replayed[node] == pytest.approx(t, rel=1e-12, abs=1e-15), node
