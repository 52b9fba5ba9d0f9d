"""`python -m turnlens ...`: the `turnlens` console script."""

import sys

from .cli import main

sys.exit(main())
