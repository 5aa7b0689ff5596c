"""Exit codes, the same for every `fleetplan` command (scripts and CI rely on them)."""

from __future__ import annotations

EXIT_OK = 0
# The command ran, but something it was given or measured is not good: a file or scenario was
# rejected, a measured level is incomplete, a campaign host failed.
EXIT_PROBLEMS = 1
# `fleetplan plan`: no fleet meets the targets. (argparse exits 2 too, for a malformed command.)
EXIT_INFEASIBLE = 2
# The command could not start: the warehouse, a server, a cluster or another resource is unusable.
EXIT_CANNOT_START = 3
# Stopped by Ctrl-C (128 + SIGINT); what was measured so far is kept.
EXIT_INTERRUPTED = 130
