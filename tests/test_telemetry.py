"""NVML telemetry through its single seam (`collectors.telemetry.load_nvml`): no GPU here, so a
small stand-in for the NVML bindings plays one; everything above the seam is the real code."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from fleetplan.collectors import telemetry as telemetry_module
from fleetplan.collectors.hardware import Hardware
from fleetplan.collectors.telemetry import NvmlTelemetry, Telemetry, open_telemetry
from fleetplan.core.contract import EnergyMethod


class FakeNvml:
    """Two H100 PCIe GPUs drawing 300 W each; energy counters optional."""

    class NVMLError(Exception):
        pass

    def __init__(self, counter: bool = True, name: bytes = b"NVIDIA H100 PCIe"):
        self.counter, self.name, self.start = counter, name, time.perf_counter()

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        pass

    def nvmlDeviceGetCount(self):
        return 2

    def nvmlDeviceGetHandleByIndex(self, index):
        return index

    def nvmlDeviceGetName(self, handle):
        return self.name  # bytes, as older bindings return

    def nvmlSystemGetDriverVersion(self):
        return "550.54.15"

    def nvmlDeviceGetMemoryInfo(self, handle):
        return SimpleNamespace(total=80e9, used=20e9)

    def nvmlDeviceGetPowerManagementLimit(self, handle):
        return 350_000

    def nvmlDeviceGetUtilizationRates(self, handle):
        return SimpleNamespace(gpu=75, memory=40)

    def nvmlDeviceGetPowerUsage(self, handle):
        return 300_000  # mW

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        if not self.counter:
            raise self.NVMLError("Not Supported")
        return int((time.perf_counter() - self.start) * 300_000)  # mJ at 300 W


@pytest.fixture
def nvml(monkeypatch):
    def install(fake):
        monkeypatch.setattr(telemetry_module, "load_nvml", lambda: fake)
        return fake

    return install


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_energy_counter_delta_over_a_window(nvml):
    nvml(FakeNvml(counter=True))
    telemetry = open_telemetry()
    assert isinstance(telemetry, NvmlTelemetry) and telemetry.counter
    assert [g.gpu_model for g in telemetry.gpus] == ["h100-pcie", "h100-pcie"]
    assert telemetry.gpus[0].power_limit_w == 350 and telemetry.gpus[0].driver == "550.54.15"
    assert telemetry.gpus[0].describe() == "0: NVIDIA H100 PCIe, pcie, 80 GB, 350 W limit"
    telemetry.begin_window("level")
    time.sleep(0.5)
    energy = telemetry.end_window("level")
    assert energy.method is EnergyMethod.NVML_COUNTER
    assert energy.energy_j == pytest.approx(2 * 300 * 0.5, rel=0.1)
    assert energy.avg_power_w == pytest.approx(600, rel=0.1)
    assert energy.memory_used_gb == pytest.approx(40) and energy.utilization_pct == 75


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_power_sampling_when_the_counter_is_not_supported(nvml):
    nvml(FakeNvml(counter=False, name=b"NVIDIA GeForce RTX 4090"))
    telemetry = open_telemetry()
    assert not telemetry.counter and "sampled at 20 Hz" in telemetry.reason
    telemetry.begin_window("level")
    time.sleep(0.6)
    energy = telemetry.end_window("level")
    assert energy.method is EnergyMethod.POWER_INTEGRATION
    assert energy.avg_power_w == pytest.approx(600, rel=0.02)
    assert energy.energy_j == pytest.approx(600 * 0.6, rel=0.2)
    assert Hardware.resolve(None, None, telemetry) == Hardware("NVIDIA GeForce RTX 4090", 2)


def test_no_nvml_means_not_measured_never_zero(nvml):
    class Broken(FakeNvml):
        def nvmlInit(self):
            raise self.NVMLError("NVML Shared Library Not Found")

    nvml(Broken())
    telemetry = open_telemetry()
    assert not telemetry.available and "NVML unavailable" in telemetry.reason
    telemetry.begin_window("w")
    energy = telemetry.end_window("w")
    assert energy.method is EnergyMethod.NONE and energy.energy_j is None


def test_window_misuse_names_the_window():
    telemetry = Telemetry()
    with pytest.raises(ValueError, match="'x' was never opened"):
        telemetry.end_window("x")
    telemetry.begin_window("y")
    with pytest.raises(ValueError, match="'y' is already open"):
        telemetry.begin_window("y")
