"""Routing on a platform: which links a message crosses, its end-to-end latency and bandwidth.

A platform with a full pairwise matrix has no shared links: every ordered pair is its own
route, with the matrix's latency and bandwidth.  A platform with sparse ``links`` routes every
message along its **lowest-latency path**; the route's bandwidth is the smallest bandwidth on
it (the bottleneck) and the route occupies one *directed-link resource* per link it crosses:
resource ``2k`` is link ``k`` (in the platform's ``links`` order) from its ``u`` to its ``v``,
``2k + 1`` the other direction, so the two directions never contend.

Ties between paths of equal latency are broken by a rule every MPI rank applies identically
(they all derive the same routes, hence the same schedules):

1. lowest total latency, summed from the source link after link in floating point;
2. then the fewest links;
3. then, walking back from the destination, the predecessor nearest to the source (lowest
   latency from the source), then the one with the lowest node index.

This is the order in which a Dijkstra search from the source that pops nodes by
``(latency, links, index)`` settles them (:func:`.reference.dijkstra_routes` is that
search, written plainly: the tests' oracle).  The package computes the same routes much
faster; ``docs/routing.md`` explains how, module by module:

- :mod:`.routes`: :class:`Routes`, the public front;
- :mod:`.graph`: the links as directed edges (resources);
- :mod:`.forest`: the core and the trees hanging off it; :mod:`.tree`: a tree platform;
- :mod:`.core`: one exact search on the core (Dijkstra, the tie rule, bottlenecks, slack,
  the certificate that shares a row between starting latencies);
- :mod:`.rows`: each core row by the cheapest exact way: :mod:`.chains` (rows derived from
  chain ends'), :mod:`.kernel` (searches on the core with its chains contracted);
- :mod:`.batches`: rows of many sources at once (matrices, cost matrices);
  :mod:`.walks`: routes read link by link;
- :mod:`.arrays`: array helpers; :mod:`.tuning`: the table of block sizes, the counters.
"""

from .routes import Routes
from .tuning import Tuning, Work

__all__ = ["Routes", "Tuning", "Work"]
