"""GPU telemetry in GenAI-Perf and AIPerf exports, where it was on: the GPU's name, how many,
the energy (the energy counter's rise over the profiling window, DCGM's energy, reported in MJ)
and the mean power.

Telemetry sees every GPU of the host, not the server's: a model served on one GPU of an
8-GPU machine shows seven GPUs with no memory used and no utilisation (a real AIPerf export of
gpt-oss-20b on 8x A100 SXM). A GPU idle throughout (0 % utilisation and under `IDLE_GB` of
memory, where the file has either figure) is not counted, nor its energy or power; a GPU with
neither figure counts."""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from fleetplan.warehouse.importers.base import finite
from fleetplan.warehouse.importers.genai_perf.metrics import Metric

# AIPerf names them after its DCGM mapping (energy in MJ); older and forked exporters prefix them.
_ENERGY_NAMES = ("energy_consumption", "nvidia_energy_consumption", "nvidia_total_gpu_energy")
_POWER_NAMES = ("gpu_power_usage", "nvidia_power_usage")
# Case matters: mJ is not MJ. No unit means the tools' documented MJ; an unknown unit, unknown
# energy.
_ENERGY_UNITS = {"MJ": 1e6, "kJ": 1e3, "J": 1.0, "mJ": 1e-3, "Wh": 3600.0, "kWh": 3.6e6}


# Memory a GPU holds without serving: the driver's and a monitor's own (a model's weights are GBs).
IDLE_GB = 1.0


class Telemetry(NamedTuple):
    energy_j: float | None = None
    power_w: float | None = None
    gpu_label: str | None = None
    gpu_count: int | None = None
    idle: int = 0  # GPUs seen idle throughout, left out of the count, the energy and the power

    def note(self) -> str | None:
        """Said on import where idle GPUs were left out."""
        if not self.idle:
            return None
        seen = (self.gpu_count or 0) + self.idle
        return (
            f"GPU telemetry saw {seen} GPUs; {self.idle} of them were idle throughout (0 % "
            f"utilisation, under {IDLE_GB:g} GB of memory used), so the server is taken as the "
            f"{self.gpu_count} that served, and only their energy and power are counted"
        )


def telemetry(export: dict, file: str) -> Telemetry:
    """What the export's GPU telemetry says; all None without telemetry."""
    data = export.get("telemetry_data")
    if isinstance(data, dict):  # AIPerf: telemetry_data.endpoints.<ep>.gpus.gpu_N
        return _aiperf(data, file)
    stats = export.get("telemetry_stats")
    if isinstance(stats, dict):  # GenAI-Perf: telemetry_stats.<metric>.gpuN
        return _genai_perf(stats)
    return Telemetry()


def _aiperf(data: dict, file: str) -> Telemetry:
    gpus: list[dict] = []
    endpoints = data.get("endpoints")
    for endpoint in endpoints.values() if isinstance(endpoints, dict) else []:
        found = endpoint.get("gpus") if isinstance(endpoint, dict) else None
        if isinstance(found, dict):
            gpus += [g for g in found.values() if isinstance(g, dict)]
    every = len(gpus)
    gpus = [g for g in gpus if not _idle(_avgs(g.get("metrics")))]
    energies, powers = [], []
    for gpu in gpus:
        metrics = gpu.get("metrics") if isinstance(gpu.get("metrics"), dict) else {}
        energy = _first_metric(metrics, _ENERGY_NAMES, file)
        power = _first_metric(metrics, _POWER_NAMES, file)
        low, high, factor = energy.stat("min"), energy.stat("max"), _energy_factor(energy)
        if low is not None and high is not None and factor is not None and high >= low:
            energies.append((high - low) * factor)
        if power.stat("avg") is not None:
            powers.append(power.stat("avg"))
    names = sorted({str(g.get("gpu_name")) for g in gpus if g.get("gpu_name")})
    return Telemetry(
        sum(energies) if energies and len(energies) == len(gpus) else None,
        sum(powers) if powers and len(powers) == len(gpus) else None,
        names[0] if len(names) == 1 else None,
        len(gpus) or None,
        every - len(gpus),
    )


def _genai_perf(stats: dict) -> Telemetry:
    """telemetry_stats.<metric>.<gpu>: `gpu0: {avg, min, max}` (GenAI-Perf 0.0.x), or `0:
    avg` (GenAI-Perf 25.x, the average alone, so no energy counter's rise)."""
    by_gpu: dict[str, dict[str, Any]] = {}
    for metric, values in stats.items():
        for key, value in _dict(values).items():
            if re.fullmatch(r"(gpu)?\d+", str(key)):
                by_gpu.setdefault(str(key).removeprefix("gpu"), {})[metric] = value
    serving = {g: m for g, m in by_gpu.items() if not _idle(_avgs(m))}
    unit = _energy_unit(_dict(stats.get("energy_consumption")).get("unit"))
    joules, watts = [], []
    for metrics in serving.values():
        energy = metrics.get("energy_consumption")
        if unit is not None and isinstance(energy, dict):
            low, high = finite(energy.get("min")), finite(energy.get("max"))
            if low is not None and high is not None and high >= low:
                joules.append((high - low) * unit)
        power = _avg(metrics.get("gpu_power_usage"))
        if power is not None:
            watts.append(power)
    energies = [m for m in serving.values() if "energy_consumption" in m]
    return Telemetry(
        sum(joules) if energies and len(joules) == len(serving) else None,
        sum(watts) if watts and len(watts) == len(serving) else None,
        None,
        len(serving) or None,
        len(by_gpu) - len(serving),
    )


def _avg(value: Any) -> float | None:
    """A per-GPU figure's average: {"avg": ...} or the number itself."""
    return finite(value.get("avg")) if isinstance(value, dict) else finite(value)


def _avgs(metrics: Any) -> dict[str, float | None]:
    return {name: _avg(value) for name, value in _dict(metrics).items()}


def _idle(avgs: dict[str, float | None]) -> bool:
    """Idle throughout: no utilisation and no memory beyond the driver's, by every figure the
    file has of the two (one at least)."""
    utilisation = [avgs.get(k) for k in ("gpu_utilization", "gpu_util") if avgs.get(k) is not None]
    memory = avgs.get("gpu_memory_used")
    if not utilisation and memory is None:
        return False
    return all(u <= 0 for u in utilisation) and (memory is None or memory < IDLE_GB)


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _first_metric(metrics: dict, names: tuple[str, ...], file: str) -> Metric:
    found = next((name for name in names if isinstance(metrics.get(name), dict)), names[0])
    return Metric(metrics, found, file)


def _energy_factor(metric: Metric) -> float | None:
    return _energy_unit(metric.raw.get("unit") if metric.present() else None)


def _energy_unit(unit: Any) -> float | None:
    return _ENERGY_UNITS.get(str(unit).strip()) if unit not in (None, "") else 1e6
