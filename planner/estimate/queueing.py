"""A queueing approximation of the simulation (`simulate`), for plans that estimate many
configurations at once (`"estimates": "fill"`): the same step model, in closed form, checked
against the simulation by `benchmarks/estimate.py` (its "queue" rows).

At an open-loop rate r a replica runs a mean batch B = r x O x s (tokens leave at r x O a second,
B a step) and prefills P = r x I x s prompt tokens a step, so its mean step s solves
s = max(o, A0 + A1 B + A2 P), affine in s: s = max(o, A0 / (1 - r (A1 O + A2 I))), where A0 is a
step's fixed part (weights read, all-reduce latency), A1 what a decoding sequence adds (its KV
bytes, its FLOPs, its activations on the link) and A2 what a prompt token adds. The replica
saturates where the batch reaches the most it can hold, B_max = min(max_num_seqs, KV tokens /
the tokens a running sequence holds, I + E[O^2] / (2 E[O])): r_sat = B_max / (O s(r_sat)).

- P50 TPOT = s; P99 TPOT = s x (1 + k_tpot x rho), rho = r / r_sat (batches swell and prompts
  interleave as load rises; k_tpot fitted on the simulation).
- P99 TTFT = a request's own time outside the steps (`Efficiencies.request_s`) + half a step
  under way + the step prefilling a P99-long prompt beside the batch + the wait for a place in
  the batch once it is full: Erlang C with B_max places each held a decode time O x s,
  P(wait > t) = C e^-(B_max / (O s) - r) t, its 99th percentile.

A hybrid's running sequence also holds its state (`serving.engine_state_units`, in the cache's
units beside its tokens), so B_max = KV units / (I + E[O^2] / (2 E[O]) + state); each decoding
sequence's step reads and writes its state (in A1, from `Server.terms`).

A mixture of experts' step is not affine in its tokens (the experts read grow as
E x (1 - (1 - k / E)^n)): its step adds that read beyond one token's, and the mean step is
found by bisection instead of in closed form.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist

from fleetplan.planner.estimate.predict import SHARES, CurvePoint, Prediction
from fleetplan.planner.estimate.serving import MAX_NUM_SEQS, Efficiencies, Server, engine_units
from fleetplan.planner.estimate.simulate import Traffic

K_TPOT = 0.35  # P99 TPOT over its mean at saturation, less 1 (fitted on the simulation)
# The share of the KV cache a full batch holds in the simulation (preemption and recompute,
# prompts admitted chunk by chunk): 0.82-0.89 over the configurations compared, 0.85 used.
KV_FILL = 0.85


@dataclass(frozen=True, slots=True)
class _Coefficients:
    overhead: float
    a0: float
    a1: float  # per decoding sequence
    a2: float  # per prompt token
    # a mixture of experts: the seconds reading the experts a step's n tokens touch beyond one
    # token's (concave in n: `Architecture.read_bytes`); None for a dense model
    experts: Callable[[float], float] | None = None

    def gpu(self, decode: float, prefill: float) -> float:
        extra = self.experts(decode + prefill) if self.experts else 0.0
        return self.a0 + self.a1 * decode + self.a2 * prefill + extra


def held_context(traffic: Traffic) -> float:
    """Tokens a running sequence holds, time-averaged: its prompt and half its output, the
    output length-biased (a long output stays in the batch longer: E[O^2] / (2 E[O]))."""
    return traffic.input_tokens + traffic.output_tokens * (1 + traffic.output_cv**2) / 2


def _prompt_quantile(traffic: Traffic, q: float) -> float:
    """The q-quantile of the prompt length (lognormal of the traffic's spread, cut by its
    filter), or the fixed length."""
    if traffic.input_cv <= 0:
        return traffic.input_tokens
    sigma = math.sqrt(math.log1p(traffic.input_cv**2))
    mu = math.log(traffic.input_tokens) - sigma * sigma / 2
    value = math.exp(mu + NormalDist().inv_cdf(q) * sigma)
    return min(value, traffic.max_input or value)


def _coefficients(server: Server, eff: Efficiencies, traffic: Traffic) -> _Coefficients:
    """The step's affine parts (module docstring), from `Server.terms` by differences."""
    prompt = traffic.input_tokens
    context = held_context(traffic)
    # spread prompts attend over E[I^2] / (2 E[I]) positions a token
    reach = prompt * (1 + traffic.input_cv**2) / 2

    def gpu(decode: float, prefill: float) -> float:
        moved, flops, allreduces, comm = server.terms(
            decode, decode * context, prefill, prefill * reach
        )
        return (
            eff.inv_bandwidth_eff * moved
            + eff.inv_compute_eff * flops
            + eff.allreduce_s * allreduces
            + eff.inv_link_eff * comm
        )

    base = gpu(0.0, 0.0)
    arch, t = server.shape.architecture, server.tp
    experts = None
    if arch.routed:

        def experts(tokens: float) -> float:
            beyond = arch.read_bytes(max(tokens, 1.0)) - arch.read_bytes(1.0)
            return eff.inv_bandwidth_eff * beyond / t / server.gpu.bandwidth

    return _Coefficients(
        overhead=eff.overhead_s,
        a0=base,
        a1=gpu(1.0, 0.0) - base,
        a2=gpu(0.0, 1.0) - base,
        experts=experts,
    )


def _mean_step(c: _Coefficients, rate: float, traffic: Traffic) -> float:
    slope = rate * (c.a1 * traffic.output_tokens + c.a2 * traffic.input_tokens)
    if slope >= 1:
        return math.inf
    if c.experts is None:
        return max(c.overhead, c.a0 / (1 - slope))
    return _routed_step(c, rate, traffic)


def _routed_step(c: _Coefficients, rate: float, traffic: Traffic) -> float:
    """The mean step of a mixture of experts: the least s with s = max(o, gpu(r O s, r I s)),
    by bisection (the experts read grow with the step's tokens, so no closed form)."""

    def excess(step: float) -> float:
        decode, prefill = rate * traffic.output_tokens * step, rate * traffic.input_tokens * step
        return max(c.overhead, c.gpu(decode, prefill)) - step

    low, high = 0.0, max(c.overhead, c.a0, 1e-6)
    while excess(high) > 0:
        low, high = high, high * 2
        if high > 1e4:
            return math.inf
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if excess(middle) > 0 else (low, middle)
    return high


def saturation(c: _Coefficients, traffic: Traffic, batch_max: float) -> float:
    """r_sat: the rate at which the mean batch reaches batch_max (module docstring)."""
    o, i = traffic.output_tokens, traffic.input_tokens
    if c.experts is None:
        gpu_bound = batch_max / (o * c.a0 + batch_max * (c.a1 * o + c.a2 * i))
    else:  # the step at the full batch, its prompts beside it: B / (O s) at s = gpu(B, B I / O)
        gpu_bound = batch_max / (o * c.gpu(batch_max, batch_max * i / o))
    # where the overhead sets the step, the batch grows by the overhead's time
    overhead_bound = batch_max / (o * c.overhead) if c.overhead > 0 else math.inf
    step = _mean_step(c, min(gpu_bound, overhead_bound), traffic)
    return min(gpu_bound, overhead_bound) if math.isfinite(step) else gpu_bound


def _erlang_c(servers: int, load: float) -> float:
    """The chance an arrival waits in an M/M/c queue of `servers` and offered load `load`."""
    if load >= servers:
        return 1.0
    blocking = 1.0
    for k in range(1, servers + 1):
        blocking = load * blocking / (k + load * blocking)
    return servers * blocking / (servers - load * (1 - blocking))


def point(
    server: Server, eff: Efficiencies, traffic: Traffic, rate: float, kv_tokens: float
) -> tuple[float, float, float, float, float]:
    """(P50 TTFT, P99 TTFT, P50 TPOT, P99 TPOT, saturation), ms and req/s, for one replica."""
    c = _coefficients(server, eff, traffic)
    held = engine_units(server.shape.architecture, held_context(traffic))
    batch_max = min(MAX_NUM_SEQS, KV_FILL * kv_tokens / held)
    r_sat = saturation(c, traffic, batch_max)
    rate = min(rate, r_sat * (1 - 1e-6))
    step = _mean_step(c, rate, traffic)
    batch = rate * traffic.output_tokens * step
    rho = rate / r_sat
    tpot99 = step * (1 + K_TPOT * rho)

    def first_token(prompt: float) -> float:
        mine = c.gpu(batch, prompt + rate * traffic.input_tokens * step)
        return eff.request_s + step / 2 + max(c.overhead, mine)

    hold = traffic.output_tokens * step
    places = max(int(batch_max), 1)
    waits = _erlang_c(places, rate * hold)
    drain = places / hold - rate
    wait99 = math.log(waits / 0.01) / drain if waits > 0.01 and drain > 0 else 0.0
    ttft50 = first_token(_prompt_quantile(traffic, 0.5))
    ttft99 = first_token(_prompt_quantile(traffic, 0.99))
    return ttft50 * 1000, (ttft99 + wait99) * 1000, step * 1000, tpot99 * 1000, r_sat


def predict_queue(
    server: Server,
    eff: Efficiencies,
    traffic: Traffic,
    *,
    gpu_count: int,
    kv_tokens_per_replica: float,
) -> Prediction:
    """The server's curve by the approximation, at the simulation's shares of saturation."""
    replicas = max(gpu_count // server.tp, 1)
    r_sat = point(server, eff, traffic, 0.0, kv_tokens_per_replica)[4]
    curve = []
    for share in SHARES:
        rate = r_sat * share
        ttft50, ttft99, tpot50, tpot99, _ = point(server, eff, traffic, rate, kv_tokens_per_replica)
        curve.append(
            CurvePoint(
                rate_rps=rate * replicas,
                ttft_p99_ms=ttft99,
                tpot_p99_ms=tpot99,
                ttft_p50_ms=ttft50,
                tpot_p50_ms=tpot50,
                throughput_rps=rate * replicas,
            )
        )
    return Prediction(
        saturation_rps=r_sat * replicas,
        curve=tuple(curve),
        kv_tokens=kv_tokens_per_replica * replicas,
        replicas=replicas,
    )
