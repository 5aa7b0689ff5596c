"""GPU telemetry through NVML: the one module that imports `pynvml` (from nvidia-ml-py).

A small verb API over named windows (zeus's shape): `begin_window("x")` ... `end_window("x")`
returns the GPU energy of the window: the total-energy counter delta where the GPU supports it
(`nvml_counter`), else power sampled at 20 Hz and integrated (`power_integration`). With no NVML
(a CPU host, a container without the driver) every window is "not measured", never zero. NVML
errors are translated here, once.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from fleetplan.collectors.requests_log import Energy
from fleetplan.core.contract import EnergyMethod
from fleetplan.core.gpus import canonical_gpu

log = logging.getLogger(__name__)
SAMPLE_PERIOD_S = 0.05  # 20 Hz


def load_nvml() -> Any:
    """The NVML bindings. The single seam tests replace (there is no GPU on CI)."""
    import pynvml

    return pynvml


@dataclass(frozen=True, slots=True)
class GpuInfo:
    index: int
    name: str
    gpu_model: str  # canonical id, or the name when unknown
    memory_gb: float | None
    power_limit_w: float | None
    driver: str | None

    @property
    def form_factor(self) -> str:
        """sxm, pcie or nvl from the canonical id; consumer cards are PCIe boards."""
        for suffix in ("sxm", "pcie", "nvl"):
            if self.gpu_model.endswith(f"-{suffix}"):
                return suffix
        return "pcie" if self.gpu_model.startswith("rtx-") else "unknown"

    def describe(self) -> str:
        parts = [f"{self.index}: {self.name}", self.form_factor]
        if self.memory_gb is not None:
            parts.append(f"{self.memory_gb:.0f} GB")
        if self.power_limit_w is not None:
            parts.append(f"{self.power_limit_w:.0f} W limit")
        return ", ".join(parts)


@dataclass
class _Window:
    started: float
    counters_mj: list[int] | None
    samples: list[tuple[float, float, float, float]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None


class Telemetry:
    """No telemetry: every window is not measured. Subclassed by NVML."""

    available = False

    def __init__(self, reason: str = "no GPU telemetry"):
        self.reason = reason
        self.gpus: list[GpuInfo] = []
        self._windows: dict[str, float] = {}

    def begin_window(self, name: str) -> None:
        if name in self._windows:
            raise ValueError(f"telemetry window {name!r} is already open")
        self._windows[name] = time.perf_counter()

    def end_window(self, name: str) -> Energy:
        if self._windows.pop(name, None) is None:
            raise ValueError(f"telemetry window {name!r} was never opened")
        return Energy()

    def close(self) -> None:
        return None


class NvmlTelemetry(Telemetry):
    available = True

    def __init__(self, nvml: Any, indices: list[int] | None = None):
        super().__init__(reason="")
        self._nvml = nvml
        self._open: dict[str, _Window] = {}
        nvml.nvmlInit()
        count = nvml.nvmlDeviceGetCount()
        chosen = indices if indices is not None else list(range(count))
        self._handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in chosen]
        driver = self._try(nvml.nvmlSystemGetDriverVersion)
        for index, handle in zip(chosen, self._handles, strict=True):
            name = _text(nvml.nvmlDeviceGetName(handle))
            memory = self._try(nvml.nvmlDeviceGetMemoryInfo, handle)
            limit = self._try(nvml.nvmlDeviceGetPowerManagementLimit, handle)
            self.gpus.append(
                GpuInfo(
                    index=index,
                    name=name,
                    gpu_model=canonical_gpu(name).gpu_id,
                    memory_gb=memory.total / 1e9 if memory is not None else None,
                    power_limit_w=limit / 1000 if limit is not None else None,
                    driver=_text(driver) if driver is not None else None,
                )
            )
        self.counter = all(
            self._try(nvml.nvmlDeviceGetTotalEnergyConsumption, h) is not None
            for h in self._handles
        )
        if not self.counter:
            self.reason = "energy counter not supported: power sampled at 20 Hz and integrated"

    def _try(self, function: Any, *args: Any) -> Any:
        try:
            return function(*args)
        except self._nvml.NVMLError as error:
            log.debug("NVML %s failed: %s", getattr(function, "__name__", function), error)
            return None

    def _sample(self, window: _Window) -> None:
        nvml = self._nvml
        while not window.stop.is_set():
            now = time.perf_counter()
            power = memory = util = 0.0
            for handle in self._handles:
                power += (self._try(nvml.nvmlDeviceGetPowerUsage, handle) or 0) / 1000
                info = self._try(nvml.nvmlDeviceGetMemoryInfo, handle)
                memory += info.used / 1e9 if info is not None else 0.0
                rates = self._try(nvml.nvmlDeviceGetUtilizationRates, handle)
                util += rates.gpu if rates is not None else 0.0
            window.samples.append((now, power, memory, util / max(len(self._handles), 1)))
            window.stop.wait(SAMPLE_PERIOD_S)

    def begin_window(self, name: str) -> None:
        if name in self._open:
            raise ValueError(f"telemetry window {name!r} is already open")
        counters = None
        if self.counter:
            counters = [self._nvml.nvmlDeviceGetTotalEnergyConsumption(h) for h in self._handles]
        window = _Window(started=time.perf_counter(), counters_mj=counters)
        window.thread = threading.Thread(target=self._sample, args=(window,), daemon=True)
        window.thread.start()
        self._open[name] = window

    def end_window(self, name: str) -> Energy:
        window = self._open.pop(name, None)
        if window is None:
            raise ValueError(f"telemetry window {name!r} was never opened")
        ended = time.perf_counter()
        counters = None
        if window.counters_mj is not None:
            counters = [self._nvml.nvmlDeviceGetTotalEnergyConsumption(h) for h in self._handles]
        window.stop.set()
        if window.thread is not None:
            window.thread.join(timeout=2)
        seconds = max(ended - window.started, 1e-9)
        samples = window.samples
        memory = max((s[2] for s in samples), default=None)
        util = sum(s[3] for s in samples) / len(samples) if samples else None
        if counters is not None and window.counters_mj is not None:
            joules = sum(b - a for a, b in zip(window.counters_mj, counters, strict=True)) / 1000
            method = EnergyMethod.NVML_COUNTER
        elif len(samples) >= 2:
            joules = sum(
                (t2 - t1) * (p1 + p2) / 2
                for (t1, p1, _, _), (t2, p2, _, _) in itertools.pairwise(samples)
            )
            seconds = samples[-1][0] - samples[0][0]
            method = EnergyMethod.POWER_INTEGRATION
        else:
            return Energy(memory_used_gb=memory, utilization_pct=util)
        return Energy(
            method=method,
            energy_j=joules,
            avg_power_w=joules / seconds,
            memory_used_gb=memory,
            utilization_pct=util,
        )

    def close(self) -> None:
        for name in list(self._open):
            self.end_window(name)
        self._try(self._nvml.nvmlShutdown)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def open_telemetry(indices: list[int] | None = None) -> Telemetry:
    """NVML telemetry where it works; otherwise a telemetry that says why nothing is measured."""
    try:
        nvml = load_nvml()
    except ImportError:
        return Telemetry("not measured: nvidia-ml-py is not installed")
    try:
        telemetry = NvmlTelemetry(nvml, indices)
    except nvml.NVMLError as error:
        return Telemetry(f"not measured: NVML unavailable ({error})")
    if not telemetry.gpus:
        return Telemetry("not measured: NVML sees no GPU")
    return telemetry
