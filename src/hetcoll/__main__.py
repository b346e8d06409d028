"""``python -m hetcoll``: the same as the ``hetcoll`` command."""

import sys

from .cli import main

# the guard matters under ``python -m mpi4py.futures -m hetcoll``: its workers import this
# module (as ``__worker__``) and must not run the command line again
if __name__ == "__main__":
    sys.exit(main())
