"""The serving model's coefficients (`serving.Efficiencies`) fitted per (GPU, engine) on the
measured levels of every model whose shape is known.

Each level gives two equations in the step model's coefficients (o, a, b, c, d and the request's
own time r), both linear:

- TPOT: a level's mean TPOT is the time of a decode step at its mean batch. By Little's law
  over the decode phase, the level's mean batch is B = throughput x (output tokens - 1) x
  TPOT, holding K = B x (input + output / 2) tokens; while it runs, prompts arrive at
  throughput x input tokens per second, so a step also prefills P = throughput x input x TPOT
  tokens. TPOT = step(B, K, P). A level that keeps no TPOT (its file's was per streamed
  message) gives its decode time from its E2EL and TTFT means instead (`decode_ms`).
- TTFT, at the configuration's lowest measured rate only (where a request scarcely queues;
  among the levels whose requests did not wait in line, `_lowest_unqueued`):
  a request spends its own time outside the steps (r: the API server tokenising, the HTTP
  round), waits for the step under way (half a step on average) and is prefilled in the next,
  so TTFT P50 - TPOT P50 / 2 = r + step(B, K, input).

A request that found its prompt in the engine's prefix cache (`prefix_cache.cached_shares`: the
same prompts sent again to a server whose cache held them; a level's share of such requests)
prefilled one token, not its prompt: a level's equations say so, its arriving prefill the
share's mix, its TTFT equation (the median request) one token where most requests were cached
(its context still holds the prompts' KV). Such levels are what separates r from the prefill's
compute: their TTFT holds r and a step, no prefill.

The equations are divided by their measured values (relative error, so a fast GPU's
milliseconds weigh as much as a slow one's) and solved by least squares with a robust loss,
within physical bounds (neither efficiency above 1, no negative overhead or request time). A level
without throughput, tokens or TPOT gives no equation; a GPU or engine with fewer than 3 levels,
or no TPOT variation to separate the coefficients, gets no fit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from fleetplan.core.load import WAIT_SHARE
from fleetplan.planner.capacity.architecture import Architecture
from fleetplan.planner.estimate.level import level_tokens, positive, tensor_parallel
from fleetplan.planner.estimate.prefix_cache import cached_shares
from fleetplan.planner.estimate.serving import (
    MAX_NUM_SEQS,
    Efficiencies,
    Server,
    Shape,
    transferred,
)
from fleetplan.planner.estimate.specs import GpuSpec

MIN_LEVELS = 3


@dataclass(frozen=True, slots=True)
class Fit:
    """The coefficients of one (GPU, engine), what they were fitted on and how well."""

    gpu_model: str
    engine: str
    efficiencies: Efficiencies
    configurations: tuple[str, ...]  # "model on Nx gpu" of the levels used
    equations: int
    median_error: float  # median relative error of the fitted equations

    def moved_to(self, source: GpuSpec, target: GpuSpec) -> Fit:
        """This fit (of `source`) as `target` borrows it (`serving.transferred`)."""
        return replace(self, efficiencies=transferred(self.efficiencies, source, target))


def _throughput(row: Mapping) -> float | None:
    """A level's request throughput, where it has one: what its TPOT equation needs."""
    return positive(row.get("request_throughput_rps"))


def _tpot_ms(row: Mapping) -> float | None:
    """A level's time a token after the first, what its TPOT equation needs: its TPOT's mean,
    else its median, else `decode_ms` (a level whose file's TPOT was not per token)."""
    return positive(row.get("tpot_mean_ms")) or positive(row.get("tpot_p50_ms")) or decode_ms(row)


def decode_ms(row: Mapping) -> float | None:
    """The time a token after the first took over the level's requests, from per-request means:
    (E2EL mean - TTFT mean) / (output tokens mean - 1), the sum of their decode times over the
    sum of their tokens after the first. Not fleetplan's TPOT (a mean over requests of each
    one's), so never stored as one; the decode step's time at the level's mean batch, which is
    what a TPOT equation fits, all the same. None where a mean is missing or the outputs are
    shorter than 3 tokens on average (inference-perf before v0.5.0 keeps TTFT and E2EL, not its
    per-message TPOT: `warehouse.importers.inference_perf_tokens`)."""
    e2el, ttft = positive(row.get("e2el_mean_ms")), positive(row.get("ttft_mean_ms"))
    tokens = positive(row.get("output_tokens_mean"))
    if e2el is None or ttft is None or tokens is None or tokens < 3 or e2el <= ttft:
        return None
    return (e2el - ttft) / (tokens - 1)


def calibration_gaps(rows: pd.DataFrame, known_models: set[str]) -> str:
    """Why a GPU's levels in `rows` give no fit, in words: what no level has (a model of known
    shape, prompt and output token counts, a throughput, a TPOT), or too few levels that have
    it all; "" where nothing is missing."""
    records = rows.to_dict("records")
    checks = {
        "a model of known shape": lambda r: str(r.get("model")).lower() in known_models,
        "prompt and output token counts": lambda r: level_tokens(r) is not None,
        "a throughput": lambda r: _throughput(r) is not None,
        "a TPOT, or E2EL and TTFT means (inter-token latency alone is not one)": lambda r: (
            _tpot_ms(r) is not None
        ),
    }
    missing = [what for what, has in checks.items() if not any(has(r) for r in records)]
    if missing:
        listed = ", ".join(missing[:-1]) + (" or " if len(missing) > 1 else "") + missing[-1]
        return f"no level has {listed}"
    whole = sum(all(has(r) for has in checks.values()) for r in records)
    if whole >= MIN_LEVELS:
        return ""
    return f"{whole} of their levels have all it needs, not {MIN_LEVELS}"


def _equations(
    rows: pd.DataFrame, server_of, cached: pd.Series | None = None
) -> tuple[list[np.ndarray], list[float], int]:
    """The TPOT and low-rate TTFT equations (module docstring) of a GPU's levels, and how many
    levels gave one; `cached` (the rows' in their order) is each level's share of requests
    whose prompts were in the prefix cache (one token prefilled each)."""
    design, measured, levels = [], [], 0
    records = rows.to_dict("records")
    lowest = _lowest_unqueued(rows, records)
    shares = [0.0] * len(rows) if cached is None else [float(x) for x in cached]
    for share, row, low in zip(shares, records, lowest, strict=True):
        server = server_of(row)
        tokens = level_tokens(row)
        rate = _throughput(row)
        tpot = _tpot_ms(row)
        if server is None or tokens is None or rate is None or tpot is None:
            continue
        prompt, output = tokens
        step = tpot / 1000
        batch = min(max(rate * (output - 1) * step, 1.0), MAX_NUM_SEQS)
        context = batch * (prompt + output / 2)
        # the step's prefill: the uncached prompts whole, the cached ones their last token
        arriving = rate * step * ((1 - share) * prompt + share)
        positions = rate * step * ((1 - share) * prompt * prompt / 2 + share * (prompt - 0.5))
        equation = _row(server, batch, context, arriving, positions)
        design.append(equation / step)
        measured.append(1.0)
        levels += 1
        ttft = positive(row.get("ttft_p50_ms"))
        offered = positive(row.get("offered_rate_rps"))
        if ttft is not None and offered is not None and offered <= low and ttft > tpot / 2:
            # the configuration's lowest rate at which requests did not wait in line
            wait = (ttft - (positive(row.get("tpot_p50_ms")) or tpot) / 2) / 1000
            prefilled = 1.0 if share > 0.5 else prompt  # the median request's prefill
            positions = prefilled * (prompt - prefilled / 2)
            first = _row(server, batch, context, prefilled, positions, request=1.0)
            design.append(first / wait)
            measured.append(1.0)
    return design, measured, levels


def _waited(row: Mapping) -> bool:
    """Whether the level's requests waited in line: a median TTFT over `WAIT_SHARE` of the
    median request time (`core.load`'s rule), where the level says both."""
    ttft, e2el = positive(row.get("ttft_p50_ms")), positive(row.get("e2el_p50_ms"))
    return ttft is not None and e2el is not None and ttft > WAIT_SHARE * e2el


def _lowest_unqueued(rows: pd.DataFrame, records: list[dict]) -> pd.Series:
    """Per level (`records`: the rows' own, in order), the lowest offered rate of its
    configuration (model and GPU count) among the levels whose requests did not wait
    (`_waited`): the level a TTFT equation may come from (nan where none did). A level that fell
    behind is no unloaded one whatever its rate: the inference-sim H100 SXM sweep's lowest
    CodeLlama-34b level (4 req/s of 1,450-token outputs, 3.2 served) had a median TTFT of 112 s,
    read as the request's own time."""
    waited = pd.Series([_waited(row) for row in records], index=rows.index, dtype=bool)
    rates = rows["offered_rate_rps"].where(~waited)
    return rates.groupby([rows["model"], rows["gpu_count"]]).transform("min")


def _row(server: Server, decode, context, prefill, positions, request=0.0) -> np.ndarray:
    """A step's regressors: the overhead's 1, then `Server.terms`, then the request's own
    time's share (1 in a TTFT equation, once a request; 0 in a step's)."""
    return np.array([1.0, *server.terms(decode, context, prefill, positions), request])


LOWER = np.array([0.0, 1.0, 1.0, 0.0, 1.0, 0.0])  # o, a, b, c, d, r: no efficiency above 1
START = np.array([1e-3, 1.2, 2.0, 1e-5, 2.0, 1e-3])
OVERHEAD_STARTS = (0.0, 0.004, 0.012)  # seconds
OVERHEAD_PULL = 0.05


def predicted(matrix: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The step model on a design matrix: max(o, a moved + b flops + c allreduces + d comm),
    plus r where the equation is a first token's."""
    return np.maximum(x[0] * matrix[:, 0], matrix[:, 1:5] @ x[1:5]) + matrix[:, 5] * x[5]


def _solve(matrix: np.ndarray, target: np.ndarray, multi: bool) -> np.ndarray:
    """Least squares with a robust loss (a level the model cannot explain pulls less) within
    physical bounds: no efficiency above 1 (a, b, d >= 1), no negative overhead, latency or
    request time; without a tensor-parallel level, c and d stay at their floor, without a
    TTFT equation r at 0."""
    keep = np.array([True, True, True, multi, multi, bool(matrix[:, 5].any())])
    scale = np.maximum(np.abs(matrix).max(axis=0), 1e-30)
    scaled = matrix / scale

    def residual(x: np.ndarray) -> np.ndarray:
        full = np.where(keep, 0.0, LOWER * scale)
        full[keep] = x
        # A light pull of the overhead and the request's time toward 0 (in units of the
        # fastest step, of the shortest first token): where no level needs them, the smallest
        # the levels allow, not an arbitrary one.
        pull = OVERHEAD_PULL * full[[0, 5]]
        return np.append(predicted(scaled, full) - target, pull)

    # The overhead has no gradient where every step is above it: started from a few floors.
    tries = []
    for floor in OVERHEAD_STARTS:
        start = START * scale
        start[0] = floor * scale[0]
        tries.append(
            least_squares(
                residual,
                start[keep],
                bounds=((LOWER * scale)[keep], np.inf),
                loss="soft_l1",
                f_scale=0.1,
            )
        )
    solved = min(tries, key=lambda t: t.cost)
    full = LOWER * scale
    full[keep] = solved.x
    return full / scale


def fit_gpu(
    points: pd.DataFrame,
    architectures: Mapping[str, Architecture],
    specs: Mapping[str, GpuSpec],
    gpu_model: str,
    engine: str,
    *,
    widths: Mapping[str, float] | None = None,
) -> Fit | None:
    """The fit of one (GPU, engine) on its levels in `points` (the warehouse's canonical
    columns); None where too few levels have what the equations need."""
    spec = specs.get(gpu_model)
    if spec is None:
        return None
    rows = points[(points["gpu_model"] == gpu_model) & (points["engine"].fillna("") == engine)]
    shapes: dict[str, Shape | None] = {}

    def server_of(row: Mapping) -> Server | None:
        model = str(row["model"]).lower()
        if model not in shapes:
            arch = architectures.get(model)
            width = (widths or {}).get(model)
            shapes[model] = Shape.of(arch, width) if arch is not None else None
        shape = shapes[model]
        return None if shape is None else Server(shape, spec, tensor_parallel(row))

    cached = cached_shares(rows, architectures, specs, widths)
    design, measured, levels = _equations(rows, server_of, cached)
    if levels < MIN_LEVELS:
        return None
    matrix, target = np.vstack(design), np.asarray(measured)
    multi = bool((matrix[:, 3] > 0).any())
    coefficients = _solve(matrix, target, multi)
    errors = np.abs(predicted(matrix, coefficients) - target)
    used = sorted(
        {
            f"{m} on {int(c)}x {gpu_model}"
            for m, c in zip(rows["model"], rows["gpu_count"], strict=True)
            if shapes.get(str(m).lower()) is not None
        }
    )
    return Fit(
        gpu_model=gpu_model,
        engine=engine,
        efficiencies=Efficiencies(
            overhead_s=float(coefficients[0]),
            inv_bandwidth_eff=float(coefficients[1]),
            inv_compute_eff=float(coefficients[2]),
            allreduce_s=float(coefficients[3]),
            inv_link_eff=float(coefficients[4]),
            request_s=float(coefficients[5]),
            basis=f"fitted on {len(used)} configurations of {gpu_model} ({engine})"
            + (f", {int((cached > 0).sum())} levels with prompts cached" if cached.any() else ""),
        ),
        configurations=tuple(used),
        equations=len(design),
        median_error=float(np.median(errors)),
    )


def fit_all(
    points: pd.DataFrame,
    architectures: Mapping[str, Architecture],
    specs: Mapping[str, GpuSpec],
    *,
    widths: Mapping[str, float] | None = None,
) -> dict[tuple[str, str], Fit]:
    """A fit per (GPU, engine) the levels hold, where one can be made."""
    fits = {}
    pairs = points[["gpu_model", "engine"]].fillna("").drop_duplicates()
    for gpu_model, engine in pairs.itertuples(index=False):
        fit = fit_gpu(points, architectures, specs, gpu_model, engine, widths=widths)
        if fit is not None:
            fits[(gpu_model, engine)] = fit
    return fits
