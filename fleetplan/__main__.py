"""`python -m fleetplan` runs the command line."""

import sys

from fleetplan.cli import main

sys.exit(main())
