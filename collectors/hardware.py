"""What ran the server, as a run records it: from the options (`--gpu`, `--gpu-count`) or from
NVML; and the telemetry the options ask for."""

from __future__ import annotations

from dataclasses import dataclass

from fleetplan.collectors.errors import CollectError
from fleetplan.collectors.options import HardwareOptions
from fleetplan.collectors.telemetry import Telemetry, open_telemetry


@dataclass(frozen=True)
class Hardware:
    """What ran the server: from the user (`--gpu`, `--gpu-count`) or from NVML."""

    label: str
    count: int

    @classmethod
    def resolve(cls, gpu: str | None, count: int | None, telemetry: Telemetry) -> Hardware:
        if gpu is not None:
            return cls(gpu, count or (len(telemetry.gpus) if telemetry.gpus else 1))
        if telemetry.gpus:
            names = sorted({g.name for g in telemetry.gpus})
            if len(names) > 1:
                raise CollectError(f"this host mixes GPUs ({', '.join(names)}): pass --gpu")
            return cls(names[0], count or len(telemetry.gpus))
        raise CollectError(
            "no GPU is visible to NVML here and none was named: pass --gpu and --gpu-count "
            "(the GPUs the server runs on)"
        )


def telemetry_for(options: HardwareOptions) -> Telemetry:
    """NVML telemetry unless `--telemetry off`; the caller closes it."""
    if options.telemetry == "off":
        return Telemetry("not measured: --telemetry off")
    return open_telemetry()
