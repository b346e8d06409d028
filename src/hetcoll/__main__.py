"""``python -m hetcoll``: the same as the ``hetcoll`` command."""

import sys

from .cli import main

sys.exit(main())
