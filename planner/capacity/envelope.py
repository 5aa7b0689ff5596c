"""Physical bounds on what one server of a configuration can carry: what a measured level may
claim at most, from the model's shape and the GPUs' memory and bandwidth alone.

A level claiming more than a bound allows is flagged (`level_flags`), never silently trusted: the
bounds are upper bounds, every simplification below makes them larger, never smaller, so that a
level over one measured something else (a wrong label, a cached prompt, a miscounted window).

Notation, for one server of n GPUs of memory M bytes and memory bandwidth B bytes/s each, serving
a model of L layers, H_kv key-value heads of dimension d, KV elements of b bytes and weights of
W bytes, split over t GPUs by tensor parallelism (t = n when the run does not say: one copy of
the weights, the most memory left for the cache), so r = n / t replicas each hold a copy:

- KV cache per token: k = 2 x L x H_kv x d x b bytes (a key and a value per layer and head).
- Cache of one replica: C = (t x M - W) / k tokens. All memory but the weights: a real engine
  keeps some back (vLLM's `gpu_memory_utilization` 0.9, activations, CUDA graphs), so real
  caches are smaller; where W >= t x M the weights do not fit and the bounds are 0.
- Sequences in flight: a request of I prompt and O output tokens holds I tokens once its prompt
  is in and one more per generated token, so over its decode it holds I + O / 2 on average:
  N = r x C / (I + O / 2) sequences at once, time-averaged, using the level's mean tokens.
- Sustainable rate, by Little's law (mean number in a system = arrival rate x mean time in it)
  applied to the cache: a request holds its cache at least from its first token to its last,
  E2EL - TTFT on average (the time before the first token, queueing included, is left out: less
  time held is a larger bound). So rate <= N / (E2EL_mean - TTFT_mean). Where TTFT is unknown,
  E2EL alone is used and the bound says so (then it is one only if nothing queued); where E2EL
  is unknown, the decode time TPOT_mean x (O - 1), by TPOT's definition (E2EL - TTFT) / (O - 1)
  per request, with means for per-request values (said so).
- TPOT, from decode reading memory: a step reads each GPU's share of the weights at least
  once, so it takes at least W / (t x B); a request's TPOT, the mean of its steps, too. A level
  whose TPOT is below this floor (by more than the datasheet's rounding) cannot be what it says.
- Output tokens/s, from decode reading memory: each decode step of a replica reads its weights
  once and the cache of every sequence in its batch, from t x B bytes/s, and makes one token per
  sequence. With S sequences holding S x (I + O / 2) x k bytes, a step takes at least
  (W + S x (I + O / 2) x k) / (t x B) s, so a replica makes at most
  S x t x B / (W + S x (I + O / 2) x k) tokens/s, which grows with S: at the most sequences the
  cache holds, S = C / (I + O / 2), output tokens/s <= r x t x B x S / (W + C x k). Peak
  bandwidth from the datasheet, no compute limit, no prefill: all make the bound larger.

A hybrid or recurrent model (Mamba, Gated DeltaNet or lightning attention layers beside
attention ones, or instead: `Architecture.recurrent`): k counts its attention layers only, and
each sequence also keeps S bytes of state (`Architecture.state_bytes`), so a replica holds
N = (t x M - W) / (k x (I + O / 2) + S) sequences; the cache is counted in tokens of KV, and
a sequence's state as S / k of them (without attention layers, in sequences: k = 0). A decode
step also reads and writes each sequence's state: at N sequences, output tokens/s <=
r x t x B x N / (W + C x k + N x S) per replica's N. The engine's pages (vLLM rounds each state
and the attention blocks up to a shared page size: `planner.estimate.serving`) are left out: the
bound stays the larger.

Memory: the catalog's GPU memory in GB is read as GiB (2^30 bytes): vendors' "24 GB" and "80 GB"
of GPU memory are binary, and the larger reading keeps the bound an upper bound. Bandwidth in
GB/s is decimal (10^9), as datasheets print it.

An architecture (`architecture`) comes from the bundled table (figures from the public
config.json of each model card, with their source) or from a Hugging Face config.json; a figure
it lacks is unknown, and so is every bound resting on it.
"""

from __future__ import annotations

from dataclasses import dataclass

from fleetplan.planner.capacity.architecture import Architecture

GIB = 2**30
GB = 1e9
TOLERANCE = 1e-6  # a claim over a bound by less than this share is rounding, not a claim
# A TPOT under the decode floor by less than this share is a datasheet's rounding or a clock's
# jitter, not a claim (bandwidths are printed to 2-3 digits).
FLOOR_MARGIN = 0.03


@dataclass(frozen=True, slots=True)
class Hardware:
    """One GPU model's memory (GB, read as GiB) and bandwidth (GB/s), from the catalog."""

    gpu_model: str
    memory_gb: float | None
    bandwidth_gb_s: float | None


@dataclass(frozen=True, slots=True)
class Envelope:
    """The bounds of one server at one level's token shape; None where a figure is unknown
    (`unknown` says which)."""

    kv_tokens: float | None  # cache tokens of the whole server (all replicas)
    sequences: float | None  # sequences in flight, time-averaged
    rate_rps: float | None  # requests/s, by Little's law (None without E2EL)
    output_tps: float | None  # output tokens/s, from decode bandwidth
    rate_basis: str  # "E2EL - TTFT", or "E2EL (TTFT unknown)", or why none
    unknown: str | None = None  # what is missing, in words
    fits: bool = True  # the weights fit in the server's memory
    # The least a decode step takes: each GPU reads its share of the weights once, W / (t x B);
    # a level's TPOT below it is impossible as labelled. None without the bandwidth.
    tpot_floor_ms: float | None = None


def server_envelope(
    architecture: Architecture,
    hardware: Hardware,
    *,
    gpu_count: int,
    tensor_parallel_size: int | None,
    input_tokens: float | None,
    output_tokens: float | None,
    e2el_mean_ms: float | None = None,
    ttft_mean_ms: float | None = None,
    tpot_mean_ms: float | None = None,
) -> Envelope:
    """The bounds of one server at a level's mean tokens and latencies (module docstring)."""
    missing = []
    if hardware.memory_gb is None:
        missing.append(f"{hardware.gpu_model}'s memory")
    if hardware.bandwidth_gb_s is None:
        missing.append(f"{hardware.gpu_model}'s memory bandwidth")
    if input_tokens is None or output_tokens is None:
        missing.append("the level's mean input and output tokens")
    tp = tensor_parallel_size or gpu_count
    replicas = max(gpu_count // tp, 1)
    if hardware.memory_gb is None:
        return Envelope(None, None, None, None, "no bound", unknown="; ".join(missing))
    free = tp * hardware.memory_gb * GIB - architecture.weight_bytes - architecture.resident_bytes
    if free <= 0:
        return Envelope(0.0, 0.0, 0.0, 0.0, "weights do not fit", fits=False)
    per_token = architecture.cache_unit_bytes  # a token's KV (a state, without attention)
    kv_tokens = replicas * free / per_token
    if input_tokens is None or output_tokens is None:
        return Envelope(kv_tokens, None, None, None, "no bound", unknown="; ".join(missing))
    context = input_tokens + output_tokens / 2
    sequences = kv_tokens / architecture.sequence_units(context)
    output_tps = None
    if hardware.bandwidth_gb_s is not None:
        bandwidth = tp * hardware.bandwidth_gb_s * GB
        per_replica = sequences / replicas
        # a mixture of experts' step reads at least its k experts' share (`active_bytes`); a
        # hybrid's also writes each sequence's state back
        step = architecture.active_bytes + free + per_replica * architecture.state_bytes
        output_tps = replicas * bandwidth * per_replica / step
    rate, basis = None, "no bound: the level's mean E2EL is unknown"
    if e2el_mean_ms is not None and e2el_mean_ms > 0:
        held_ms, basis = e2el_mean_ms, "E2EL (TTFT unknown)"
        if ttft_mean_ms is not None and ttft_mean_ms < e2el_mean_ms:
            held_ms, basis = e2el_mean_ms - ttft_mean_ms, "E2EL - TTFT"
        rate = sequences / (held_ms / 1000)
    elif tpot_mean_ms is not None and tpot_mean_ms > 0 and output_tokens > 1:
        held_ms = tpot_mean_ms * (output_tokens - 1)
        basis = "TPOT x (output tokens - 1), E2EL unknown"
        rate = sequences / (held_ms / 1000)
    floor = None
    if hardware.bandwidth_gb_s is not None:
        floor = architecture.active_bytes / (tp * hardware.bandwidth_gb_s * GB) * 1000
    return Envelope(
        kv_tokens,
        sequences,
        rate,
        output_tps,
        basis,
        unknown="; ".join(missing) or None,
        tpot_floor_ms=floor,
    )


def level_flags(
    bounds: Envelope,
    *,
    request_throughput_rps: float | None,
    output_throughput_tps: float | None,
    weight_gb: float | None = None,
    sustained_rps: float | None = None,
    tpot_ms: float | None = None,
) -> list[str]:
    """What a level claims beyond its server's bounds, in words (empty: nothing): its achieved
    or sustained requests/s (the larger) against the KV-cache bound, its output tokens/s against
    the decode-bandwidth bound."""
    if not bounds.fits:
        shown = f" ({weight_gb:,.1f} GB)" if weight_gb is not None else ""
        return [
            f"the model's weights{shown} do not fit in this server's GPU memory: no level of it "
            "can be what it says (check the GPU count, the model or its dtype)"
        ]
    flags = []
    known = [
        (value, word)
        for value, word in ((request_throughput_rps, "achieved"), (sustained_rps, "sustained"))
        if value is not None
    ]
    rate, word = max(known) if known else (None, "")
    if (
        bounds.rate_rps is not None
        and rate is not None
        and rate > bounds.rate_rps * (1 + TOLERANCE)
    ):
        flags.append(
            f"{rate:.2f} req/s {word} is above the KV-cache bound of {bounds.rate_rps:.2f} req/s "
            f"({bounds.sequences:,.0f} sequences in flight at most, by Little's law with "
            f"{bounds.rate_basis})"
        )
    tps = output_throughput_tps
    if (
        bounds.output_tps is not None
        and tps is not None
        and tps > bounds.output_tps * (1 + TOLERANCE)
    ):
        flags.append(
            f"{tps:,.0f} output tokens/s is above the decode-bandwidth bound of "
            f"{bounds.output_tps:,.0f} tokens/s"
        )
    floor = bounds.tpot_floor_ms
    if floor is not None and tpot_ms is not None and tpot_ms < floor * (1 - FLOOR_MARGIN):
        flags.append(
            f"its TPOT of {tpot_ms:.2f} ms is below the {floor:.2f} ms a decode step takes at "
            "least (each GPU reading its share of the weights once at peak bandwidth): the GPU, "
            "its count, the dtype or the tool's token count is not what the file says (or it "
            "decoded speculatively, more than one token a step: say so in its variant)"
        )
    return flags
