"""Which measured levels found their prompts in the engine's prefix cache: the same prompts sent
again to a server that had just served them, whose cache still held them.

A benchmark that sweeps rates against one server often sends the same prompts at every rate
(a fixed seed, a fixed slice of a dataset: the io.net runs sent the same 200 ShareGPT prompts at
32, 16, 8, 4 and 1 req/s, a minute apart). An engine that caches prefixes (vLLM's V1 engine does
by default, from 0.8.0) then finds each prompt's KV from the earlier run and prefills only the
prompt's last token: that level's TTFT holds no prefill. Read as a full prefill, it tells the
calibration that prefill is nearly free. What the files prove, level by level:

1. **The same prompts again** (`repeated_prompts`): an earlier level of the same configuration
   (model, GPU, count, tensor parallelism, engine and version, variant, host, dataset) sent the
   same number of requests with the same mean prompt tokens, from a dataset of varied prompts
   (no fixed input length: equal means of fixed-length random prompts prove nothing), and was
   the level just before it on that server: the previous level of the same run, or a run whose
   date is at most `IDLE_S` plus the longer of the two levels' durations earlier (a tool dates
   a run at its start or at its end: either way the server sat idle at most `IDLE_S` between
   them; a longer gap may be a server restarted, and a restart empties the cache).
2. **An engine that caches prefixes** (`caches_prefixes`): vLLM 0.8.0 or later (V1, caching
   by default) unless the variant says `no-enable-prefix-caching`; an older vLLM only where the
   variant says `enable-prefix-caching`; SGLang (its radix cache) unless `disable-radix-cache`.
   Any other engine, or no version: not assumed.
3. **A cache that held the earlier run** (`holds`): a prefix cache evicts the least recently
   used blocks, and a run that cycles through more tokens than the cache holds finds none of
   its prompts again; so the configuration's KV cache (`serving.kv_cache_tokens`, the engine's
   default memory utilisation) must hold every token of the earlier run, requests x (prompt +
   output).

All three, and the level is cached (`cached_levels`): `calibrate` reads its prefill as one
token, and `benchmarks/replay.py` replays it as it ran.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping

import pandas as pd

from fleetplan.planner.capacity.envelope import Architecture
from fleetplan.planner.estimate.serving import Shape, kv_cache_tokens
from fleetplan.planner.estimate.specs import GpuSpec

IDLE_S = 300.0  # at most this idle between two runs: the same server, still up
SAME_SERVER = (
    "model",
    "gpu_model",
    "gpu_count",
    "tensor_parallel_size",
    "engine",
    "engine_version",
    "variant",
    "host",
    "dataset",
)
VLLM_V1_DEFAULT = (0, 8, 0)  # vLLM's V1 engine, prefix caching on, is the default from 0.8.0


def _version(text: object) -> tuple[int, ...] | None:
    found = re.match(r"\s*v?(\d+)\.(\d+)(?:\.(\d+))?", str(text or ""))
    return tuple(int(part or 0) for part in found.groups()) if found else None


def caches_prefixes(engine: object, version: object, variant: object) -> bool:
    """Whether the engine, as the run describes it, caches prefixes (module docstring, 2.)."""
    engine = str(engine or "").strip().lower()
    words = str(variant or "").lower().replace("_", "-")
    if engine == "vllm":
        if "no-enable-prefix-caching" in words or "no-prefix-caching" in words:
            return False
        if "enable-prefix-caching" in words:
            return True
        found = _version(version)
        return found is not None and found >= VLLM_V1_DEFAULT
    if engine == "sglang":
        return "disable-radix-cache" not in words
    return False


def _key(row: Mapping) -> tuple:
    return tuple("" if pd.isna(row.get(c)) else str(row.get(c)) for c in SAME_SERVER)


def _varied_prompts(row: Mapping) -> float | None:
    """The level's mean prompt tokens, where its prompts vary (no fixed input length)."""
    fixed = row.get("input_len")
    if fixed is not None and not pd.isna(fixed):
        return None
    mean = row.get("input_tokens_mean")
    try:
        mean = float(mean)
    except (TypeError, ValueError):
        return None
    return mean if math.isfinite(mean) and mean > 0 else None


def repeated_prompts(points: pd.DataFrame) -> pd.Series:
    """Per level of `points` (its index), the run id of the level just before it on the same
    server that sent the same prompts, else None (module docstring, 1.)."""
    found: dict = dict.fromkeys(points.index)
    if points.empty:
        return pd.Series(found, index=points.index, dtype=object)
    dates = points["created_at"] if "created_at" in points else pd.Series(pd.NaT, points.index)
    frame = points.assign(
        _when=pd.to_datetime(dates, errors="coerce"), _level=points.get("level_index", 0)
    )
    groups: dict[tuple, list] = {}
    for index, row in zip(frame.index, frame.to_dict("records"), strict=True):
        groups.setdefault(_key(row), []).append((index, row))
    for members in groups.values():
        if len(members) < 2:
            continue
        # in the order they ran: by the runs' dates, a run's levels in their order
        members.sort(
            key=lambda m: (_sortable(m[1]["_when"]), str(m[1].get("run_id")), m[1]["_level"])
        )
        for (_, before), (index, row) in itertools.pairwise(members):
            if _same_prompts(before, row) and _soon_after(before, row):
                found[index] = str(before.get("run_id"))
    return pd.Series([found[i] for i in points.index], index=points.index, dtype=object)


def _sortable(when) -> float:
    return when.timestamp() if isinstance(when, pd.Timestamp) and not pd.isna(when) else math.inf


def _same_prompts(before: Mapping, row: Mapping) -> bool:
    mine, theirs = _varied_prompts(row), _varied_prompts(before)
    sent = (row.get("requests_sent"), before.get("requests_sent"))
    if mine is None or theirs is None or any(s is None or pd.isna(s) for s in sent):
        return False
    return int(sent[0]) == int(sent[1]) and math.isclose(mine, theirs, rel_tol=1e-9)


def _soon_after(before: Mapping, row: Mapping) -> bool:
    if str(before.get("run_id")) == str(row.get("run_id")):
        return True  # the run's previous level, on its server
    then, now = before["_when"], row["_when"]
    if pd.isna(then) or pd.isna(now):
        return False
    gap = (now - then).total_seconds()
    longer = max(_seconds(before.get("duration_s")), _seconds(row.get("duration_s")))
    return 0 < gap <= IDLE_S + longer


def _seconds(value: object) -> float:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return 0.0
    return seconds if math.isfinite(seconds) and seconds > 0 else 0.0


def holds(
    row: Mapping, architecture: Architecture, spec: GpuSpec, width: float | None = None
) -> bool:
    """Whether the configuration's KV cache holds every token of a run like the level's
    (module docstring, 3.)."""
    stated = row.get("tensor_parallel_size")
    tp = (
        int(stated)
        if stated is not None and not pd.isna(stated)
        else int(row.get("gpu_count") or 1)
    )
    shape = Shape.of(architecture, width)
    kv = kv_cache_tokens(shape, spec, tp) * min(1.0, architecture.kv_heads / tp)
    try:
        tokens = float(row["requests_sent"]) * (
            float(row["input_tokens_mean"]) + float(row["output_tokens_mean"])
        )
    except (KeyError, TypeError, ValueError):
        return False
    return math.isfinite(tokens) and 0 < tokens <= kv


def cached_levels(
    points: pd.DataFrame,
    architectures: Mapping[str, Architecture],
    specs: Mapping[str, GpuSpec],
    widths: Mapping[str, float] | None = None,
) -> pd.Series:
    """Per level of `points` (its index), whether it found its prompts in the prefix cache:
    repeated, on an engine that caches prefixes, whose cache held the run (module docstring)."""
    repeated = repeated_prompts(points)
    out = pd.Series(False, index=points.index, dtype=bool)
    for index, row in zip(points.index, points.to_dict("records"), strict=True):
        if pd.isna(repeated[index]):
            continue
        if not caches_prefixes(row.get("engine"), row.get("engine_version"), row.get("variant")):
            continue
        model = str(row.get("model")).lower()
        arch, spec = architectures.get(model), specs.get(str(row.get("gpu_model")))
        if arch is not None and spec is not None:
            out[index] = holds(row, arch, spec, (widths or {}).get(model))
    return out
