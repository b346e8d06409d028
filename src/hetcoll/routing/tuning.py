"""The routing search's tuning table, and the counters of the work it did.

Every constant that sizes a block, a batch or a table is a field of :class:`Tuning`, here
and nowhere else.  None of them changes a result: each only trades time for memory (or
one kind of memory for another), and the property tests run with the smallest values
(blocks of one row, batches of one source) to prove it.  The defaults were chosen on the
benchmark platforms of ``benchmarks/simulated/bench_simulator.py`` (``b random 5000``:
5000 nodes, a core of 2721 nodes of which 1159 are outside chains); rerun it after
changing one.

Why memory matters as much as time: a process pays the kernel a page fault, and the
zeroing of the page, for every page it touches for the first time, and numpy backs
every array of 128 KiB or more with fresh pages from the kernel (and advises 2 MiB
pages from 4 MiB up).  So a loop that allocates a new 40 MB temporary per batch spends
much of its time in the kernel; blocks small enough to stay in the cache, or buffers
reused batch after batch, avoid it.  That is the point of most rows below.

================== ========= ================================================================
field              default   what it trades, and why this value
================== ========= ================================================================
core_elements      2**22     Starts per batch of core searches (``k x E`` temporaries, at
                             most 32 MB each).  Large on purpose: many small batches each
                             allocate fresh memory (on ``b random 5000`` batches of 2**19
                             touch 1.3 GB over the cost matrix, 2**22 0.7 GB).
edge_rows_elements 2**18     Rows x edges per block of the tie test, the slack and the
                             check of kernel rows: 2 MB temporaries, in the cache's reach
                             and below the 4 MiB from which numpy asks for huge pages.
end_elements       2**22     Entries of chain ends' rows kept to derive inner nodes' rows
                             from (5 to 20 bytes each: 20 to 80 MB at most).  More room
                             means fewer searches; 2**22 keeps every end of the benchmark
                             platforms.
kernel_share       0.75      Searches from nodes outside chains run on the kernel (chains
                             contracted) when it has at most this share of the core's nodes;
                             above it the kernel saves too little Dijkstra work to pay for
                             checking its rows.
kernel_table       2**22     Kernel node pairs up to which a table (2 or 4 bytes a pair)
                             gives each pair's link; beyond it a binary search in the
                             sorted links (slower per lookup, no N**2 memory).
along_rows         64        Rows per block when summing along trees and in pointer
                             doubling (the pointers of a block stay in the cache).
along_elements     2**18     (column, core node) entries per group of runs summed along
                             attachments' trees: 2 MB temporaries reused group after group
                             instead of tens of MB of fresh memory per batch.
descent_elements   2**17     Row entries per block of a level of the descents into the
                             trees: 1 MB temporaries (a whole level is 5 MB per batch on
                             ``b random 5000``).
tree_elements      2**21     Sources per batch (``tree_elements // N``) when filling rows
                             of every node: node-major arrays of 20 bytes per entry, 40 MB
                             a batch, reused batch after batch; also core rows per block
                             when computing core rows on demand.
cost_rows          512       Rows per block when adding a cost matrix's terms from the
                             built matrices (cache-sized temporaries).
long_climb         64        Climbs at least this long are copied into routes one slice per
                             route; shorter ones by one vectorised index over all of them
                             (whose size grows with the climbs' total length).
run_chunk          2**20     Links per chunk when copying a tree's routes from heavy-path
                             runs: bounds the index temporaries (8 MB each).
transpose_block    256       Columns per block of a transposing copy; with
transpose_tile     512       rows per tile: a strided copy tile by tile stays in the cache.
cost_tile          128       Tile of the in-place transposition of a tree's cost matrix
                             (two 128 KB tiles at a time).
rank_types         8, 16 bit The unsigned types tried, smallest first, for ranks stored per
                             entry (kept bottlenecks as ranks of the links' bandwidths, an
                             edge's place among its head's incoming edges, a tree's
                             bottlenecks): 1 or 2 bytes instead of 8.  Past them, floats or
                             64-bit integers.
================== ========= ================================================================
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Tuning", "Work", "DEFAULT"]


@dataclass(frozen=True)
class Tuning:
    """Block, batch and table sizes of the routing search (see the module's table).
    Results never depend on them; tests shrink them to exercise every block boundary."""

    core_elements: int = 1 << 22
    edge_rows_elements: int = 1 << 18
    end_elements: int = 1 << 22
    kernel_share: float = 0.75
    kernel_table: int = 1 << 22
    along_rows: int = 64
    along_elements: int = 1 << 18
    descent_elements: int = 1 << 17
    tree_elements: int = 1 << 21
    cost_rows: int = 512
    long_climb: int = 64
    run_chunk: int = 1 << 20
    transpose_block: int = 256
    transpose_tile: int = 512
    cost_tile: int = 128
    rank_types: tuple[type, ...] = (np.uint8, np.uint16)

    def rank_dtype(self, n: int) -> type | None:
        """The first of :attr:`rank_types` that holds ``n`` ranks (0 .. n - 1), or None."""
        for kind in self.rank_types:
            if n <= int(np.iinfo(kind).max) + 1:
                return kind
        return None


DEFAULT = Tuning()


@dataclass
class Work:
    """What the search did for one :class:`~hetcoll.routing.Routes`, counted as it goes:
    which of its exact shortcuts were taken (tests check that the shortcuts they mean to
    exercise are; a benchmark can tell why a platform is slow).

    ``searched``: core rows found by a search (Dijkstra on the kernel, then checked, or
    on the core); ``derived``: core rows derived from their chains' ends' rows;
    ``shared``: sources in trees that took their attachment's core row (certified);
    ``runs``: runs of neighbouring columns summed along one attachment's tree, in
    ``run_groups`` groups; ``kept_rows``: core predecessor rows kept for routes.
    """

    searched: int = 0
    derived: int = 0
    shared: int = 0
    runs: int = 0
    run_groups: int = 0
    kept_rows: int = 0
