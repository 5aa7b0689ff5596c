"""Which measured levels found their prompts in the engine's prefix cache, and what share of
their requests did: prompts sent again to a server that had just served them, whose cache still
held them.

A benchmark that sweeps rates against one server often sends the same prompts at every rate
(a fixed seed, a fixed slice of a dataset: the io.net runs sent the same 200 ShareGPT prompts at
32, 16, 8, 4 and 1 req/s, a minute apart); another draws a run's requests from a few prompts
(inference-perf's shared-prefix data: 10 groups of 10 prompts, cycled through thousands of
requests). An engine that caches prefixes (vLLM's V1 engine does by default, from 0.8.0) then
finds a prompt's KV from its earlier sending and prefills only the prompt's last token: such a
request's TTFT holds no prefill. Read as a full prefill, it tells the calibration that prefill is
nearly free. What the files prove, level by level:

1. **The same prompts again** (`repeated_prompts`): an earlier level of the same configuration
   (model, GPU, count, tensor parallelism, engine and version, variant, host, dataset) sent the
   same number of requests with the same mean prompt tokens, from a dataset of varied prompts
   (no fixed input length: equal means of fixed-length random prompts prove nothing), and was
   the level just before it on that server: the previous level of the same run, or a run whose
   date is at most `IDLE_S` plus the longer of the two levels' durations earlier (a tool dates
   a run at its start or at its end: either way the server sat idle at most `IDLE_S` between
   them; a longer gap may be a server restarted, and a restart empties the cache). Every
   request of such a level finds its prompt (share 1).
   **Or within the run**: the run's metadata says its requests drew from `distinct_prompts`
   prompts (an importer sets it where the tool's configuration says so), fewer than it sent:
   all but the first sending of each find it (share (requests - distinct) / requests).
2. **An engine that caches prefixes** (`caches_prefixes`): vLLM 0.8.0 or later (V1, caching
   by default), or a vLLM run that names no version (every release since March 2025; V0, which
   did not cache by default, was removed in 0.11), unless the variant says
   `no-enable-prefix-caching`; an older vLLM only where the variant says
   `enable-prefix-caching`; SGLang (its radix cache) unless `disable-radix-cache`. Any other
   engine: not assumed.
3. **A cache that held them** (`holds`): a prefix cache evicts the least recently used blocks,
   and a run that cycles through more tokens than the cache holds finds none of its prompts
   again; so the configuration's KV cache (`serving.kv_cache_tokens`, the engine's default
   memory utilisation) must hold every token of the prompts' sending: requests x (prompt +
   output) for a run sent again, distinct prompts x (prompt + output) within a run.

All three, and the level's share of cached requests (`cached_shares`) is above 0: `calibrate`
reads those requests' prefill as one token, and the benchmarks replay and simulate the level
as it ran (`simulate.simulate`'s `cached_from`: the first sendings prefill, the rest do not).
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Mapping

import pandas as pd

from fleetplan.planner.capacity.architecture import Architecture
from fleetplan.planner.estimate.level import positive, tensor_parallel
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
DISTINCT_PROMPTS = "distinct_prompts"  # run metadata: the prompts a run's requests drew from


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
        return found is None or found >= VLLM_V1_DEFAULT
    if engine == "sglang":
        return "disable-radix-cache" not in words
    return False


def level_caches_prefixes(row: Mapping) -> bool:
    """`caches_prefixes` of the engine a level (a warehouse row) names."""
    return caches_prefixes(row.get("engine"), row.get("engine_version"), row.get("variant"))


def _key(row: Mapping) -> tuple:
    return tuple("" if pd.isna(row.get(c)) else str(row.get(c)) for c in SAME_SERVER)


def _varied_prompts(row: Mapping) -> float | None:
    """The level's mean prompt tokens, where its prompts vary (no fixed input length)."""
    fixed = row.get("input_len")
    if fixed is not None and not pd.isna(fixed):
        return None
    return positive(row.get("input_tokens_mean"))


def repeated_prompts(points: pd.DataFrame) -> pd.Series:
    """Per level of `points` (its index), the run id of the level just before it on the same
    server that sent the same prompts, else None (module docstring, 1.)."""
    found: list[str | None] = [None] * len(points)  # by position: an index may repeat
    if points.empty:
        return pd.Series(found, index=points.index, dtype=object)
    dates = points["created_at"] if "created_at" in points else pd.Series(pd.NaT, points.index)
    frame = points.assign(
        _when=pd.to_datetime(dates, errors="coerce"), _level=points.get("level_index", 0)
    )
    groups: dict[tuple, list] = {}
    for position, row in enumerate(frame.to_dict("records")):
        groups.setdefault(_key(row), []).append((position, row))
    for members in groups.values():
        if len(members) < 2:
            continue
        # in the order they ran: by the runs' dates, a run's levels in their order
        members.sort(
            key=lambda m: (_sortable(m[1]["_when"]), str(m[1].get("run_id")), m[1]["_level"])
        )
        for (_, before), (position, row) in itertools.pairwise(members):
            if _same_prompts(before, row) and _soon_after(before, row):
                found[position] = str(before.get("run_id"))
    return pd.Series(found, index=points.index, dtype=object)


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
    durations = (positive(before.get("duration_s")), positive(row.get("duration_s")))
    return 0 < gap <= IDLE_S + max(d or 0.0 for d in durations)


def holds(
    row: Mapping,
    architecture: Architecture,
    spec: GpuSpec,
    width: float | None = None,
    *,
    prompts: float | None = None,
) -> bool:
    """Whether the configuration's KV cache holds every token of `prompts` sendings of the
    level's prompts and outputs, by default its whole run (module docstring, 3.)."""
    tp = tensor_parallel(row)
    shape = Shape.of(architecture, width)
    kv = kv_cache_tokens(shape, spec, tp) / architecture.kv_replicas(tp)
    try:
        count = float(row["requests_sent"]) if prompts is None else float(prompts)
        tokens = count * (float(row["input_tokens_mean"]) + float(row["output_tokens_mean"]))
    except (KeyError, TypeError, ValueError):
        return False
    return math.isfinite(tokens) and 0 < tokens <= kv


def distinct_prompts(row: Mapping) -> int | None:
    """The prompts a level's run drew its requests from, where its metadata says."""
    raw = row.get("run_metadata")
    if isinstance(raw, str) and raw.strip():
        try:
            raw = json.loads(raw)
        except ValueError:
            return None
    if not isinstance(raw, Mapping):
        return None
    try:
        count = int(str(raw.get(DISTINCT_PROMPTS, "")).strip())
    except ValueError:
        return None
    return count if count > 0 else None


def _within_run(row: Mapping) -> float:
    """The share of a level's requests that sent a prompt the run had sent before."""
    distinct, sent = distinct_prompts(row), positive(row.get("requests_sent"))
    if distinct is None or sent is None or sent <= distinct:
        return 0.0
    return (sent - distinct) / sent


def cached_shares(
    points: pd.DataFrame,
    architectures: Mapping[str, Architecture],
    specs: Mapping[str, GpuSpec],
    widths: Mapping[str, float] | None = None,
) -> pd.Series:
    """Per level of `points` (its index), the share of its requests that found their prompts
    in the prefix cache: 1 for a run whose prompts were sent just before, the repeats' share
    within a run, 0 where the engine does not cache or its cache could not hold them (module
    docstring)."""
    repeated = repeated_prompts(points).tolist()
    out = [0.0] * len(points)  # by position: an index may repeat
    for position, row in enumerate(points.to_dict("records")):
        again = repeated[position] is not None
        within = 0.0 if again else _within_run(row)
        if not again and within <= 0:
            continue
        if not level_caches_prefixes(row):
            continue
        model = str(row.get("model")).lower()
        arch, spec = architectures.get(model), specs.get(str(row.get("gpu_model")))
        if arch is None or spec is None:
            continue
        width = (widths or {}).get(model)
        if again and holds(row, arch, spec, width):
            out[position] = 1.0
        elif within > 0 and holds(row, arch, spec, width, prompts=distinct_prompts(row)):
            out[position] = within
    return pd.Series(out, index=points.index, dtype=float)


def cached_from(requests: int, share: float) -> int | None:
    """The first of a level's `requests` (in the order sent) that found its prompt cached: the
    first sendings prefill, the rest do not; None where none did."""
    if share <= 0:
        return None
    return min(max(round(requests * (1 - share)), 0), requests)
