"""GPU telemetry in GenAI-Perf and AIPerf exports, where it was on: the GPU's name, how many,
the energy (the energy counter's rise over the profiling window, DCGM's energy, reported in MJ)
and the mean power."""

from __future__ import annotations

from typing import Any, NamedTuple

from fleetplan.warehouse.importers.base import finite
from fleetplan.warehouse.importers.genai_perf.metrics import Metric

# AIPerf names them after its DCGM mapping (energy in MJ); older and forked exporters prefix them.
_ENERGY_NAMES = ("energy_consumption", "nvidia_energy_consumption", "nvidia_total_gpu_energy")
_POWER_NAMES = ("gpu_power_usage", "nvidia_power_usage")
# Case matters: mJ is not MJ. No unit means the tools' documented MJ; an unknown unit, unknown
# energy.
_ENERGY_UNITS = {"MJ": 1e6, "kJ": 1e3, "J": 1.0, "mJ": 1e-3, "Wh": 3600.0, "kWh": 3.6e6}


class Telemetry(NamedTuple):
    energy_j: float | None = None
    power_w: float | None = None
    gpu_label: str | None = None
    gpu_count: int | None = None


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
    )


def _genai_perf(stats: dict) -> Telemetry:
    energy = _dict(stats.get("energy_consumption"))
    power = _dict(stats.get("gpu_power_usage"))
    unit = _energy_unit(energy.get("unit"))
    per_gpu = [v for k, v in energy.items() if k.startswith("gpu") and isinstance(v, dict)]
    joules = [
        (v["max"] - v["min"]) * unit
        for v in per_gpu
        if unit is not None
        and finite(v.get("max")) is not None
        and finite(v.get("min")) is not None
        and v["max"] >= v["min"]
    ]
    watts = [
        v["avg"]
        for k, v in power.items()
        if k.startswith("gpu") and isinstance(v, dict) and finite(v.get("avg")) is not None
    ]
    return Telemetry(
        sum(joules) if per_gpu and len(joules) == len(per_gpu) else None,
        sum(watts) if watts else None,
        None,
        len(per_gpu) or None,
    )


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _first_metric(metrics: dict, names: tuple[str, ...], file: str) -> Metric:
    found = next((name for name in names if isinstance(metrics.get(name), dict)), names[0])
    return Metric(metrics, found, file)


def _energy_factor(metric: Metric) -> float | None:
    return _energy_unit(metric.raw.get("unit") if metric.present() else None)


def _energy_unit(unit: Any) -> float | None:
    return _ENERGY_UNITS.get(str(unit).strip()) if unit not in (None, "") else 1e6
