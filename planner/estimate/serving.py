"""One engine step's time, and the KV cache an engine allocates, for a model on a GPU server.

A continuous-batching engine (vLLM, SGLang, TensorRT-LLM) runs in steps: each step decodes one
token for every sequence of its running batch and prefills some prompt tokens (chunked prefill,
up to a token budget). For a replica of t GPUs (tensor parallelism splits the weights and the KV
cache over them) serving a model of P parameters and W weight bytes:

- decode reads the weights once and the KV cache of every running sequence:
  bytes = (W + K x k) / t for K tokens in the batch's contexts and k KV bytes per token, over
  the memory bandwidth B: `a x bytes / B`, where 1 / a is the engine's bandwidth efficiency;
  of a mixture of experts, W is what the step's tokens are routed to (`Architecture.read_bytes`:
  the shared weights and, of E experts per layer, the E x (1 - (1 - k / E)^n) that n tokens
  routed evenly to k each touch), and P below its active parameters (the k experts' share);
- every token of the step (decoded or prefilled) costs about 2 x P FLOPs of matrix products,
  and a prefilled token attends to its prompt so far, 4 x L x d_model x (its position) FLOPs,
  split over t GPUs, over the GPU's dense BF16 FLOPs F: `b x flops / F`, 1 / b the compute
  efficiency (the two are added: real kernels overlap them only partly);
- a fixed overhead per step `o` (scheduling, kernel launches, sampling);
- with t > 1, two all-reduces per layer (one per attention or MLP block that runs: a NAS
  model's no-op blocks have none, `Architecture.sublayers`) over the interconnect: `c`
  seconds each (the link's latency, fitted per interconnect kind) plus the bytes of the
  step's activations,
  2 x (t - 1) / t x tokens x d_model x 2 bytes, over the link's bandwidth.

So step time = o + a x bytes / B + b x flops / F + [t > 1] x 2 L x (c + comm bytes / link),
linear in the fitted (o, a, b, c); `Efficiencies` holds them and a request's own time outside
the steps (`calibrate` fits them).

A hybrid or recurrent model (`Architecture.recurrent`: Mamba, Gated DeltaNet or lightning
attention layers beside attention ones, or instead of them): k counts its attention layers only,
and each decoding sequence's step also reads and writes its state, 2 x S bytes for S bytes of
state a sequence (`Architecture.state_bytes`); a prefilled token attends over its prompt in the
attention layers only (L above is theirs), the recurrent layers' work on it being linear, in
the 2 x P. Reading and writing a prefilling sequence's state once a chunk is left out (one
state a chunk of thousands of tokens), and so are the state updates' own FLOPs.

KV cache (vLLM's rule): memory x utilisation (0.9 by default) - weights - a reserve; the
reserve is what the engine keeps out of the cache besides the weights: about 1 GiB per GPU of
CUDA context, NCCL buffers and CUDA graphs, plus the activations of its profiling step,
max_num_batched_tokens x 20 x d_model bytes / t (inputs, attention and MLP intermediates of a
step at the token budget). For Llama-3.1-8B on one RTX 4090 at 0.9 this is about 40,500 tokens;
vLLM reports about 41,000 there.

A hybrid's cache (vLLM v1's `HybridAttentionMambaModelConfig` and its KV cache groups): the
recurrent layers' states and the attention layers' blocks share one pool of pages of one size.
vLLM raises the attention block to the tokens (a multiple of 16) whose page holds a layer's
state, pads the state to that page, and gives each sequence a page per recurrent layer and, per
attention layer, pages of blocks for its tokens. So a sequence holds, beside its tokens' KV, its
states (each a page: at most 16 tokens of a layer's KV over the state) and a last block half
empty on average: block x (recurrent layers / attention layers + 1/2) tokens of KV
(`engine_state_units`; Qwen3-Next-80B: blocks of 544 tokens, 1,904 tokens a sequence). The
cache is counted in tokens of KV; a model without attention layers counts sequences' states.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from fleetplan.planner.capacity.architecture import Architecture
from fleetplan.planner.capacity.envelope import GIB
from fleetplan.planner.estimate.specs import GpuSpec

MEMORY_UTILISATION = 0.9  # vLLM's gpu_memory_utilization default
NON_TORCH_GIB = 1.0  # per GPU: CUDA context, NCCL buffers, CUDA graphs
ACTIVATION_BYTES_PER_TOKEN_PER_WIDTH = 20.0
TOKEN_BUDGET = 8192  # max_num_batched_tokens of vLLM's V1 API server
MAX_NUM_SEQS = 256  # vLLM's default


@dataclass(frozen=True, slots=True)
class Shape:
    """What the step model needs of a model: the bounds' `Architecture` and its parameters and
    width (d_model); the width is estimated from the parameters where no config.json gives it
    (parameters ~ 12 x layers x d_model^2 for a dense decoder)."""

    architecture: Architecture
    parameters: float
    width: float

    @classmethod
    def of(cls, architecture: Architecture, width: float | None = None) -> Shape:
        element = architecture.kv_bytes or 2.0
        # a token's matrix products: a mixture of experts computes with its k experts only; a
        # quantized checkpoint says its own (`Architecture.compute_parameters`)
        parameters = architecture.compute_parameters or architecture.active_bytes / element
        if width is None:
            width = math.sqrt(parameters / (12.0 * architecture.layers))
        return cls(architecture, parameters, float(width))


@dataclass(frozen=True, slots=True)
class Efficiencies:
    """The fitted coefficients of a step's time (module docstring): overhead `o` in seconds,
    `a` and `b` the inverse bandwidth and compute efficiencies (1 / a of the peak bandwidth is
    reached), `c` seconds per all-reduce; and `request_s`, a request's own time outside the
    engine's steps, once per request (its first token comes that much later: the API server
    tokenising, the HTTP round, streaming); with what they were fitted on, in words."""

    overhead_s: float
    inv_bandwidth_eff: float
    inv_compute_eff: float
    allreduce_s: float
    inv_link_eff: float = 1.0
    request_s: float = 0.0  # a request's time outside the steps (tokenising, HTTP, streaming)
    basis: str = ""

    def combine(self, moved: float, flops: float, allreduces: float, comm: float) -> float:
        """A step's seconds from its regressors (`Server.terms`)."""
        gpu = (
            self.inv_bandwidth_eff * moved
            + self.inv_compute_eff * flops
            + self.allreduce_s * allreduces
            + self.inv_link_eff * comm
        )
        return max(self.overhead_s, gpu)

    @property
    def bandwidth_efficiency(self) -> float:
        return 1.0 / self.inv_bandwidth_eff if self.inv_bandwidth_eff > 0 else math.inf

    @property
    def compute_efficiency(self) -> float:
        return 1.0 / self.inv_compute_eff if self.inv_compute_eff > 0 else math.inf


@dataclass(frozen=True, slots=True)
class Server:
    """One replica of a server: `tp` GPUs of `gpu` serving `shape`."""

    shape: Shape
    gpu: GpuSpec
    tp: int

    def terms(self, decode: float, context: float, prefill: float, prefill_context: float):
        """The step's four regressors (1, bytes / B, flops / F, all-reduces) and the fixed
        communication seconds, for `decode` running sequences holding `context` tokens and
        `prefill` prompt tokens whose positions sum to `prefill_context`."""
        arch, t = self.shape.architecture, self.tp
        # each GPU reads its share of the weights and of the cache: 1 / t of it, or one KV
        # head's where the heads are fewer than the GPUs (replicated, as a latent is; a NAS
        # model's, layer by layer: `Architecture.kv_replicas`)
        cache = context * arch.kv_bytes_per_token * arch.kv_replicas(t) / t
        # a decoding sequence's recurrent state, read and written (split over the GPUs)
        cache += 2.0 * decode * arch.state_bytes / t
        moved = arch.read_bytes(decode + prefill) / t + cache
        attention = arch.layers if arch.attention_layers is None else arch.attention_layers
        flops = (
            2.0 * self.shape.parameters * (decode + prefill)
            + 4.0 * attention * self.shape.width * prefill_context
        ) / t
        allreduces = float(arch.sublayers) if t > 1 else 0.0
        comm = 0.0
        if t > 1:
            tokens = decode + prefill
            per = 2.0 * (t - 1) / t * tokens * self.shape.width * 2.0
            comm = allreduces * per / (self.gpu.interconnect_gb_s * 1e9)
        return moved / self.gpu.bandwidth, flops / self.gpu.flops, allreduces, comm

    def step_s(
        self,
        eff: Efficiencies,
        decode: float,
        context: float,
        prefill: float = 0.0,
        prefill_context: float = 0.0,
    ) -> float:
        return eff.combine(*self.terms(decode, context, prefill, prefill_context))


def kv_cache_tokens(
    shape: Shape,
    gpu: GpuSpec,
    tp: int,
    *,
    utilisation: float = MEMORY_UTILISATION,
    token_budget: int = TOKEN_BUDGET,
) -> float:
    """Tokens of KV cache one replica of `tp` GPUs allocates (module docstring); 0 where the
    weights and the reserve do not fit."""
    arch = shape.architecture
    reserve = tp * NON_TORCH_GIB * GIB + (
        token_budget * ACTIVATION_BYTES_PER_TOKEN_PER_WIDTH * shape.width
    )
    free = tp * gpu.memory_bytes * utilisation - arch.weight_bytes - arch.resident_bytes - reserve
    return max(free, 0.0) / arch.cache_unit_bytes


# vLLM's attention block for a hybrid: a multiple of this many tokens (its kernels' alignment)
BLOCK_ALIGN = 16


def engine_state_units(arch: Architecture) -> float:
    """The cache a sequence holds beside its tokens' KV in vLLM v1, in the cache's units
    (module docstring): 0 for attention only; 1 (its state) without attention layers."""
    if arch.state_bytes <= 0 or arch.recurrent_layers <= 0:
        return 0.0
    if not arch.token_units:
        return 1.0
    attention = arch.layers if arch.attention_layers is None else arch.attention_layers
    layer_token = arch.kv_bytes_per_token / attention
    layer_state = arch.state_bytes / arch.recurrent_layers
    block = BLOCK_ALIGN * math.ceil(layer_state / (BLOCK_ALIGN * layer_token))
    return block * (arch.recurrent_layers / attention + 0.5)


def engine_units(arch: Architecture, context: float) -> float:
    """The cache units vLLM v1 holds for a sequence of `context` tokens: its tokens' KV and,
    of a hybrid, its states and half a block (`engine_state_units`)."""
    return context * arch.token_units + engine_state_units(arch)


def _crossings(gpu: GpuSpec) -> float:
    """How often a tensor-parallel transfer crosses the GPUs' link: once peer to peer, twice
    staged through host memory."""
    return 1.0 if gpu.peer_to_peer else 2.0


def transferred(eff: Efficiencies, source: GpuSpec, target: GpuSpec) -> Efficiencies:
    """`eff`, fitted on `source`, as `target` borrows it (`specs.nearest_measured`). The fitted
    efficiencies are fractions of the peaks, so they move as they are; two seconds-valued terms
    would not:

    - the step floor `o` (a step of small kernels: launches, sampling, reading a small model's
      weights) scales with the memory bandwidth, source / target: a slower card's floor is
      higher (fitted: 12.2 ms on the RTX 4090 at 1,008 GB/s, 4.3 ms on the H100 PCIe at 2,000);
    - the all-reduce terms (`c` and the link's inverse efficiency) double where the target's
      GPUs have no peer-to-peer and the source's had it (each transfer staged through host
      memory crosses PCIe twice), and halve the other way.

    A request's own time (the API server, HTTP) is the host's and moves as it is. `basis` ends
    with `transfer_words`."""
    if source.gpu_id == target.gpu_id:
        return eff
    path = _crossings(target) / _crossings(source)
    return replace(
        eff,
        overhead_s=eff.overhead_s * source.bandwidth_gb_s / target.bandwidth_gb_s,
        allreduce_s=eff.allreduce_s * path,
        inv_link_eff=eff.inv_link_eff * path,
        basis=f"{eff.basis}; {transfer_words(eff, source, target)}",
    )


def transfer_words(eff: Efficiencies, source: GpuSpec, target: GpuSpec) -> str:
    """What `transferred` does to `eff` from `source` to `target`, with the figures."""
    floor = source.bandwidth_gb_s / target.bandwidth_gb_s
    words = (
        f"moved from {source.gpu_id} to {target.gpu_id}: step floor scaled by memory bandwidth "
        f"({source.bandwidth_gb_s:g} / {target.bandwidth_gb_s:g} GB/s: "
        f"{eff.overhead_s * 1000:.2f} -> {eff.overhead_s * floor * 1000:.2f} ms)"
    )
    path = _crossings(target) / _crossings(source)
    if path != 1.0:
        staged = target if path > 1 else source
        words += (
            f", all-reduce time x{path:g} ({staged.gpu_id} has no peer-to-peer: its transfers "
            "cross PCIe twice, through host memory)"
        )
    return words
