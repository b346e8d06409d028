"""``mpiexec -n N python -m mpi4py -m hetcoll.jobs SPEC.json OUT.json`` (see :mod:`.ranks`)."""

import sys

from .ranks import main

sys.exit(main())
