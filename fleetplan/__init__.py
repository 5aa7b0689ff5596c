"""fleetplan: plan LLM inference fleets of consumer and datacenter GPUs from measured benchmarks.

The shared core lives here: the data contract (`fleetplan.contract`), canonical GPU ids
(`fleetplan.gpus`), latency statistics (`fleetplan.stats`), project errors and the command line.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("fleetplan")
except PackageNotFoundError:  # running from a checkout without an install
    __version__ = "0.0.0+unknown"
