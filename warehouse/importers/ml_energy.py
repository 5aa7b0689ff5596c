"""ML.ENERGY leaderboard per-model files (github.com/ml-energy/leaderboard, `public/data/models/
{org}__{model}__{task}.json`): one model and task, a `configurations` list of GPU model x GPU
count x `max_num_seqs`, each with figures the ML.ENERGY data toolkit (mlenergy-data, `LLMRun`)
computed from the raw benchmark.

By definition, not by name (mlenergy-data's `LLMRun`; FORMATS.md):
- `output_throughput_tokens_per_sec`: output tokens over the steady-state window (every
  `max_num_seqs` slot busy); `avg_power_watts`: GPU energy counter delta over that window / its
  length, all GPUs of the configuration together; `energy_per_token_joules` = their ratio. The
  energy is the NVML counter's (`nvml_counter`), measured.
- `avg_output_len` = total output tokens / completed requests over the whole benchmark; the
  configuration's `output_length_distribution` histogram counts those requests (its count times
  the mean is a whole number of tokens in every published file): completed requests.
- request throughput = output throughput / mean output tokens: ML.ENERGY's own steady-state
  request throughput. The file records no duration: `duration_s` is completed / that
  throughput, the time the steady rate takes to carry the file's requests (not the run's wall
  time), and GPU energy is the measured power over it (= energy per token x output tokens).
- `median/p90/p95/p99_itl_ms`: client-side gaps between tokens pooled over the successful
  requests (a chunk of n tokens counts as n equal gaps): our ITL where each chunk carries one
  token, as vLLM streams. No mean in the file.
- `max_num_seqs` (the server's batch cap; the benchmark keeps it full) is the level's
  concurrency; no request rate is offered.

Unknown, left unknown: TTFT, TPOT, E2EL, input tokens, failed requests, the engine and its
version, the date. "H100" alone does not say PCIe, SXM or NVL: kept as written (unrecognised)
unless the user says which with --gpu (a GPU of that family); its measured power is shown to
help. A file may list several GPU models: --gpu and --gpu-count must match one of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fleetplan.core.contract import EnergyMethod, Point, Provenance, Run
from fleetplan.core.errors import InputError
from fleetplan.core.gpus import canonical_gpu, family_of
from fleetplan.warehouse.importers.base import (
    FileInput,
    ImportOptions,
    Parsed,
    Reader,
    build,
    model_name,
)
from fleetplan.warehouse.importers.document import Document

IMPORTER = "ml-energy"
VERSION = "1"
TOOL = "ML.ENERGY"

# Two figures the file states that should agree (energy per token and power / throughput):
# within 1 % (they are computed from each other, in double precision).
_AGREE = 0.01
_ITL = (("p50", "median_itl_ms"), ("p90", "p90_itl_ms"), ("p95", "p95_itl_ms"))
_ITL += (("p99", "p99_itl_ms"),)
_NOTES = (
    "ML.ENERGY leaderboard per-model data (mlenergy-data LLMRun figures). Measured: steady-state "
    "output throughput, average GPU power and energy per output token (NVML energy counter over "
    "the window with every max_num_seqs slot busy), ITL percentiles. Derived: request throughput "
    "= output throughput / mean output tokens (ML.ENERGY's definition); completed requests = the "
    "configuration's output-length histogram; duration = completed / request throughput (the "
    "file records no duration); GPU energy = average power x that duration. Not in the file: "
    "TTFT, TPOT, E2EL, input tokens, failed requests, engine, date."
)


def detect(document: Document) -> bool:
    first = document.values[0] if document.values else None
    if document.kind != "json" or not isinstance(first, dict):
        return False
    configs = first.get("configurations")
    return (
        "model_id" in first
        and isinstance(configs, list)
        and bool(configs)
        and isinstance(configs[0], dict)
        and "energy_per_token_joules" in configs[0]
    )


@dataclass(frozen=True, slots=True)
class _Level:
    """One configuration of the file: its hardware and its measured level."""

    gpu_label: str
    gpu_count: int
    parallel: tuple[int | None, int | None, int | None]  # tensor, data, expert
    point: Point
    batch: float | None  # the steady state's mean running batch (vLLM's num_requests_running)
    power_per_gpu_w: float


def parse(document: Document, source: FileInput, options: ImportOptions) -> Parsed:
    top = document.values[0]
    file = source.name
    reader = Reader(top, file, "the file")
    model = model_name(options, file, top.get("model_id"), key="model_id")
    configs = top["configurations"]
    levels = [_level(raw, file, i, len(configs)) for i, raw in enumerate(configs)]
    chosen = _hardware(levels, options, file)
    groups: dict[tuple, list[_Level]] = {}
    for level, gpu in zip(levels, chosen, strict=True):
        groups.setdefault((gpu, level.gpu_count, level.parallel), []).append(level)
    common = {
        "tool": TOOL,
        "model": model,
        "dtype": reader.text("weight_precision"),
        "dataset": reader.text("task"),
        "provenance": Provenance(notes=_NOTES),
    }
    facts = {key: reader.text(key) for key in ("architecture", "activated_params_billions")}
    runs = []
    for (gpu, count, parallel), members in groups.items():
        metadata = {key: value for key, value in facts.items() if value is not None}
        metadata["parallelism (tensor, data, expert)"] = ", ".join(map(_shown, parallel))
        metadata["mean running batch by max_num_seqs (steady state)"] = "; ".join(
            f"{m.point.max_concurrency}: {_shown(m.batch)}" for m in members
        )
        runs.append(
            build(
                Run,
                file,
                f"GPU {members[0].gpu_label} x {count}",
                gpu_model=canonical_gpu(gpu).gpu_id,
                gpu_label=members[0].gpu_label,
                gpu_count=count,
                tensor_parallel_size=parallel[0],
                metadata=metadata,
                points=[m.point for m in members],
                **common,
            )
        )
    return Parsed(runs, _warnings(levels, chosen), frozenset({"duration_s", "gpu_energy_j"}))


def _shown(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.4g}"


def _level(raw: Any, file: str, index: int, total: int) -> _Level:
    where = f"configuration {index + 1} of {total}"
    if not isinstance(raw, dict):
        message = f"{where}: expected an object, got {type(raw).__name__}"
        raise InputError(message, file=file, field="configurations")
    r = Reader(raw, file, where)
    label = r.text("gpu_model")
    if label is None:
        raise r.error("gpu_model", "missing: the GPU the configuration ran on")
    count = r.positive_int_text("num_gpus")
    if count is None:
        raise r.error("num_gpus", "missing: the number of GPUs of the configuration")
    seqs = r.positive_int_text("max_num_seqs")
    if seqs is None:
        raise r.error("max_num_seqs", "missing: the batch size the configuration ran at")
    tps = _positive(r, "output_throughput_tokens_per_sec")
    power = _positive(r, "avg_power_watts")
    per_token = _positive(r, "energy_per_token_joules")
    out_len = _positive(r, "avg_output_len")
    notes = [
        _agrees("energy_per_token_joules", per_token, power / tps, "average power / throughput")
    ]
    per_request = r.number("energy_per_request_joules")
    if per_request is not None:
        computed = per_token * out_len
        notes.append(
            _agrees("energy_per_request_joules", per_request, computed, "energy per token x mean")
        )
    completed = _completed(r)
    rps = tps / out_len
    duration = completed / rps
    values = _itl(r)
    point = build(
        Point,
        file,
        where,
        max_concurrency=seqs,
        completed=completed,
        duration_s=duration,
        request_throughput_rps=rps,
        output_throughput_tps=tps,
        output_tokens_mean=out_len,
        avg_power_w=power,
        gpu_energy_j=power * duration,
        energy_method=EnergyMethod.NVML_COUNTER,
        notes=tuple(note for note in notes if note),
        **values,
    )
    return _Level(label, count, _parallel(r), point, r.number("avg_batch_size"), power / count)


def _itl(r: Reader) -> dict[str, float | None]:
    """The ITL percentiles, refused (naming the file's keys) when they are out of order."""
    known: list[tuple[str, float]] = []
    values = {}
    for stat, key in _ITL:
        value = values[f"itl_{stat}_ms"] = r.number(key)
        if value is None:
            continue
        if known and value < known[-1][1]:
            low_key, low = known[-1]
            raise r.error(key, f"{key} {value:.6g} is below {low_key} {low:.6g}: not percentiles")
        known.append((key, value))
    return values


def _positive(r: Reader, key: str) -> float:
    value = r.number(key, required=True)
    if value <= 0:
        raise r.error(key, f"expected a number > 0, got {value}")
    return value


def _agrees(key: str, stated: float, computed: float, how: str) -> str | None:
    """A note where a stated energy figure is not what the measured power and throughput give:
    both kept, the energy fleetplan plans with is power x duration (the point's)."""
    if abs(stated - computed) <= _AGREE * max(abs(stated), abs(computed)):
        return None
    return (
        f"{key} {stated:.6g} as the file states, but {how} is {computed:.6g}: both kept, "
        "fleetplan plans with the energy of the measured average power over the level"
    )


def _completed(r: Reader) -> int:
    """The requests the configuration's output-length histogram counts."""
    histogram = r.obj.get("output_length_distribution")
    field = "output_length_distribution.counts"
    counts = histogram.get("counts") if isinstance(histogram, dict) else None
    if not isinstance(counts, list) or not counts:
        raise r.error(field, "missing: the histogram that counts the completed requests")
    numbers = [r.check(count, field, integer=True) for count in counts]
    if any(n is None for n in numbers):
        raise r.error(field, "a count that is not a number")
    total = sum(numbers)
    if total < 1:
        raise r.error(field, "counts no request: nothing was measured")
    return total


def _parallel(r: Reader) -> tuple[int | None, int | None, int | None]:
    raw = r.obj.get("parallelization")
    if raw is None:
        return (None, None, None)
    if not isinstance(raw, dict):
        raise r.error("parallelization", f"expected an object, got {type(raw).__name__}")
    inner = Reader(raw, r.file, r.where)
    keys = ("tensor_parallel", "data_parallel", "expert_parallel")
    degrees = tuple(inner.positive_int_text(key) for key in keys)
    for key, degree in zip(keys, degrees, strict=True):
        if degree is not None and degree > MAX_PARALLEL:
            raise inner.error(key, f"over {MAX_PARALLEL:,}: more GPUs than any server has")
    return degrees  # type: ignore[return-value]


MAX_PARALLEL = 65_536  # GPUs a configuration's degree of parallelism can name


def _family_variant(label: str, given: str) -> bool:
    """Whether `given` names one variant of the family the file's label names ("H100" and
    h100-sxm): the user saying what the file leaves open."""
    family = family_of(label)
    variant = canonical_gpu(given)
    return family is not None and variant.known and variant.gpu_id.startswith(f"{family}-")


def _hardware(levels: list[_Level], options: ImportOptions, file: str) -> list[str]:
    """Each configuration's GPU: the file's, or the user's variant of an ambiguous family. What
    the user gives must match at least one configuration (the file lists every GPU it ran)."""
    chosen = []
    for level in levels:
        given = options.gpu
        if given is not None and _family_variant(level.gpu_label, given):
            chosen.append(given)
        else:
            chosen.append(level.gpu_label)
    labels = sorted({level.gpu_label for level in levels})
    if options.gpu is not None:
        wanted = canonical_gpu(options.gpu).gpu_id
        if not any(canonical_gpu(gpu).gpu_id == wanted for gpu in chosen):
            message = f"the file says {' and '.join(labels)} but {options.name_of('gpu')} says "
            raise InputError(f"{message}{options.gpu!r}", file=file, field="gpu_model")
    counts = sorted({level.gpu_count for level in levels})
    if options.gpu_count is not None and options.gpu_count not in counts:
        message = (
            f"the file's configurations run on {', '.join(map(str, counts))} GPUs but "
            f"{options.name_of('gpu_count')} says {options.gpu_count}"
        )
        raise InputError(message, file=file, field="num_gpus")
    return chosen


def _warnings(levels: list[_Level], chosen: list[str]) -> list[str]:
    """One warning per GPU fleetplan does not recognise (such as "H100" alone), with why."""
    warnings = []
    left: dict[str, list[float]] = {}
    for level, gpu in zip(levels, chosen, strict=True):
        identity = canonical_gpu(gpu)
        if not identity.known:
            left.setdefault(gpu, []).append(level.power_per_gpu_w)
    for gpu, powers in left.items():
        reason = canonical_gpu(gpu).reason
        warnings.append(
            f"the file names the GPU {gpu!r} ({reason}): stored as {gpu!r}, which no catalog "
            f"GPU matches; it measured {min(powers):.0f}-{max(powers):.0f} W per GPU. Import "
            "again with the GPU (--gpu, or the GPU field of the upload page) if you know which"
        )
    return warnings
