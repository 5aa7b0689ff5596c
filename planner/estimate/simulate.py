"""A seeded discrete-event simulation of one engine replica's continuous batching, step by step
(`serving.Server.step_s`), under Poisson arrivals or a benchmark's fixed number of requests.

The scheduler is vLLM's V1 in outline: each step decodes one token for every running sequence
and spends the rest of the token budget on prompt tokens, first-come first-served, chunking a
long prompt over steps; a request is admitted while the KV cache has room for its next chunk
and fewer than max_num_seqs sequences are in; when a decode step would overrun the cache, the
most recently admitted sequence is preempted and resumed later, first in line. A request's first
token comes at the end of the step that finishes its prompt (TTFT from its arrival); its TPOT is
(last token - first token) / (output tokens - 1).

A preempted sequence gives its KV blocks back; resumed, it needs them again. How it gets them is
`resume_cached`: with prefix caching (vLLM's V1 engine, its default from 0.8.0; SGLang's radix
cache) the blocks it gave back stay in the prefix cache until reused, and its resumption finds
them there: their room again, but neither compute nor token budget (one token to compute, for
its next logits). Without it (vLLM's V0, prefix caching off) its prompt and tokens so far are
prefilled again (recompute). The cached resumption is the upper end: blocks another sequence
took meanwhile would be recomputed. On the bundled io.net levels (vLLM 0.8.5, own-GPU hold-out,
`benchmarks/RESULTS.md`) it brought the configurations whose cache binds nearer their measured
saturation: the two 32B models on one H100 PCIe from -34 % and -36 % to -26 % and -29 %, the 8B
models on one RTX 4090 from -14 % and -23 % to -8 % and -19 %, the 70B models on two H100 PCIe
from -12 % and -22 % to +1 % and -11 %.

Steps of pure decode between events (an arrival, a completion, a full cache) are taken in one
jump: their times grow linearly with the context, so k of them sum in closed form, which keeps a
thousand-request run to a few thousand iterations.

Its work is bounded: long outputs on a cache that holds few of them preempt and recompute over
and over (512/32,768 tokens on one H100 with an 8B model: 1.5 million iterations, about 8 s), so
a run stops with `SimulationTooLong` past `RUN_STEPS` iterations, or past what is left of a
budget shared by the runs inside a `step_budget` block (one prediction's runs together).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace

import numpy as np

from fleetplan.planner.estimate.serving import (
    MAX_NUM_SEQS,
    TOKEN_BUDGET,
    Efficiencies,
    Server,
    engine_state_units,
)

CHAT_CV = (0.8, 0.8)  # prompts, outputs
# The most scheduler iterations one run takes where no `step_budget` says less (a few us each).
RUN_STEPS = 5_000_000


class SimulationTooLong(RuntimeError):
    """A run needed more scheduler iterations than its budget allows (the module docstring)."""

    def __init__(self, steps: int):
        super().__init__(f"the simulation took over {steps:,} scheduler steps")
        self.steps = steps


@dataclass(slots=True)
class _Budget:
    total: int
    left: int


_BUDGET: ContextVar[_Budget | None] = ContextVar("simulation_step_budget", default=None)


@contextmanager
def step_budget(steps: int) -> Iterator[None]:
    """The runs inside share `steps` scheduler iterations (each still at most `RUN_STEPS`);
    one past them raises `SimulationTooLong`."""
    token = _BUDGET.set(_Budget(steps, steps))
    try:
        yield
    finally:
        _BUDGET.reset(token)


@dataclass(frozen=True, slots=True)
class Traffic:
    """Token lengths: means, and their coefficient of variation (0: every request alike; a
    lognormal spread otherwise, as chat datasets such as ShareGPT have)."""

    input_tokens: float
    output_tokens: float
    input_cv: float = 0.0
    output_cv: float = 0.0
    max_input: int | None = None  # a dataset's filter: longer prompts are not sent
    max_total: int | None = None  # nor requests whose prompt and output are longer

    @classmethod
    def of_level(
        cls, input_tokens: float, output_tokens: float, *, fixed: bool, cached: bool = False
    ) -> Traffic:
        """Fixed lengths (a random dataset at set lengths), or a chat dataset's spread: CV 1
        for prompts and outputs, with vLLM's ShareGPT filter (prompts up to 1,024 tokens,
        prompt and output up to 2,048): an assumption of the estimate, said so. `cached`: a
        level whose prompts were in the prefix cache (`prefix_cache.cached_shares`), served as
        it ran: one prompt token each to prefill."""
        if fixed:
            traffic = cls(input_tokens, output_tokens)
        else:
            traffic = cls(input_tokens, output_tokens, *CHAT_CV, 1024, 2048)
        if cached:
            return replace(traffic, input_tokens=1.0, input_cv=0.0, max_input=None)
        return traffic


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a simulated run measured, as a benchmark would: per completed request its TTFT,
    TPOT and E2EL (ms), and the request throughput over the run (completed / last completion,
    the first request sent at 0)."""

    rate_rps: float
    requests: int
    ttft_ms: np.ndarray
    tpot_ms: np.ndarray
    e2el_ms: np.ndarray
    throughput_rps: float
    preemptions: int

    def p(self, metric: str, q: float) -> float:
        values = getattr(self, f"{metric}_ms")
        return float(np.percentile(values, q)) if len(values) else math.nan


def lengths(mean: float, cv: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """n token counts of the given mean and spread (at least 1 each)."""
    if cv <= 0:
        return np.full(n, max(round(mean), 1), dtype=np.int64)
    sigma2 = math.log1p(cv * cv)
    draws = rng.lognormal(math.log(mean) - sigma2 / 2, math.sqrt(sigma2), n)
    return np.maximum(np.rint(draws), 1).astype(np.int64)


def poisson_arrivals(rate_rps: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """n arrival times (s): the first at 0, exponential gaps after it; all at 0 for inf."""
    if not math.isfinite(rate_rps):
        return np.zeros(n)
    gaps = rng.exponential(1.0 / rate_rps, n)
    gaps[0] = 0.0
    return np.cumsum(gaps)


def simulate(
    server: Server,
    eff: Efficiencies,
    traffic: Traffic,
    *,
    rate_rps: float,
    requests: int,
    kv_tokens: float,
    seed: int = 0,
    max_num_seqs: int = MAX_NUM_SEQS,
    token_budget: int = TOKEN_BUDGET,
    cached_from: int | None = None,
    resume_cached: bool = True,
) -> Outcome:
    """One replica's run of `requests` Poisson arrivals at `rate_rps` (inf: all at once);
    `cached_from`: the requests from that one on found their prompts in the prefix cache (a
    measured level replayed as it ran, `prefix_cache.cached_from`): one token each to prefill;
    `resume_cached`: a preempted sequence resumes from the prefix cache (module docstring)."""
    rng = np.random.default_rng(seed)
    arrivals = poisson_arrivals(rate_rps, requests, rng)
    prompt = lengths(traffic.input_tokens, traffic.input_cv, requests, rng)
    output = lengths(traffic.output_tokens, traffic.output_cv, requests, rng)
    if traffic.max_input is not None:
        prompt = np.minimum(prompt, traffic.max_input)
    if traffic.max_total is not None:
        output = np.maximum(np.minimum(output, traffic.max_total - prompt), 1)
    if cached_from is not None:
        prompt[cached_from:] = 1
    served = serve(
        server,
        eff,
        arrivals,
        prompt,
        output,
        kv_tokens=kv_tokens,
        max_num_seqs=max_num_seqs,
        token_budget=token_budget,
        resume_cached=resume_cached,
    )
    output = served.output
    done = served.finish >= 0
    first = served.first[done]
    finish = served.finish[done]
    many = output[done] > 1
    tpot = (finish[many] - first[many]) / (output[done][many] - 1)
    end = float(finish.max()) if done.any() else math.nan
    return Outcome(
        rate_rps=rate_rps,
        requests=requests,
        ttft_ms=(first - arrivals[done]) * 1000,
        tpot_ms=tpot * 1000,
        e2el_ms=(finish - arrivals[done]) * 1000,
        throughput_rps=float(done.sum()) / end if end > 0 else math.nan,
        preemptions=served.preemptions,
    )


@dataclass(frozen=True, slots=True)
class Served:
    """Per request (in arrival order): its first token's and its last token's time (s, on the
    arrivals' clock), and the lengths it was served with (cut to fit the cache)."""

    first: np.ndarray
    finish: np.ndarray
    prompt: np.ndarray
    output: np.ndarray
    preemptions: int


def fit_to_cache(
    prompt: np.ndarray,
    output: np.ndarray,
    kv_tokens: float,
    state_units: float = 0.0,
    token_units: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """A request needs its prompt and output in the cache at once, beside its state (a
    hybrid's, `state_units`): one larger than the cache can never finish, as in an engine that
    refuses it; it is cut to fit (and given 1 token at least of each). A model without
    attention layers (`token_units` 0) holds a state whatever its length: no cut."""
    room = (kv_tokens - state_units) / token_units if token_units else 2.0**40
    cap = max(int(room) - 1, 2)
    prompt = np.clip(np.asarray(prompt, dtype=np.int64), 1, cap - 1)
    output = np.clip(np.asarray(output, dtype=np.int64), 1, None)
    return prompt, np.minimum(output, cap - prompt)


def serve(
    server: Server,
    eff: Efficiencies,
    arrivals: np.ndarray,
    prompt: np.ndarray,
    output: np.ndarray,
    *,
    kv_tokens: float,
    max_num_seqs: int = MAX_NUM_SEQS,
    token_budget: int = TOKEN_BUDGET,
    resume_cached: bool = True,
) -> Served:
    """One replica serving the given requests (arrival times in s, ascending; prompt and output
    tokens each), continuous batching as the module's docstring says (`resume_cached` too). A
    request reaches the engine `eff.request_s` after it arrives (the API server's own time), so
    its first and last token come that much later on the arrivals' clock."""
    arch = server.shape.architecture
    prompt, output = fit_to_cache(
        prompt, output, kv_tokens, engine_state_units(arch), arch.token_units
    )
    run = _Run(
        server,
        eff,
        np.asarray(arrivals, dtype=float) + eff.request_s,
        prompt,
        output,
        kv_tokens,
        max_num_seqs,
        token_budget,
        resume_cached,
    )
    run.go()
    return Served(run.first, run.finish, prompt, output, run.preemptions)


class _Run:
    """The simulation's state and loop (`simulate`). All running sequences advance together, one
    token a decode step, so a sequence's tokens are counted from a shared step counter: it
    finishes at a known step, kept in a heap, and a jump of k steps is O(1) work."""

    def __init__(
        self, server, eff, arrivals, prompt, output, kv_tokens, max_seqs, budget, resume_cached
    ):
        self.server, self.eff = server, eff
        self.arrivals = arrivals.tolist()
        self.prompt, self.output = prompt.tolist(), output.tolist()
        self.kv_tokens, self.max_seqs, self.budget = kv_tokens, max_seqs, budget
        # the cache a token takes (0 without attention layers) and a sequence's state takes
        # from its admission to its end (a hybrid's, `serving.engine_state_units`)
        self.per = server.shape.architecture.token_units
        self.state = engine_state_units(server.shape.architecture)
        n = len(self.arrivals)
        self.prefilled = [0] * n  # prompt tokens in the cache
        self.needed = list(self.prompt)  # tokens to prefill before decoding (a resumption adds)
        self.resume_cached = resume_cached
        self.restoring = [False] * n  # resuming from the prefix cache: room, not compute
        self.base = [0] * n  # tokens generated when it (re)joined the running batch
        self.joined = [0] * n  # the decode step it (re)joined at
        self.version = [0] * n  # a heap entry counts only for the current stint
        self.first = np.full(n, -1.0)
        self.finish = np.full(n, -1.0)
        self.waiting: deque[int] = deque()
        self.prefilling: list[int] = []
        self.running: list[int] = []  # in admission order; stale entries skipped
        self.is_running = [False] * n
        self.finishing: list[tuple[int, int, int]] = []  # (step it finishes, version, request)
        self.batch = 0  # running sequences
        self.steps = 0  # decode steps so far
        self.context = 0  # tokens of the running sequences' contexts
        self.kv_used = 0
        self.now = 0.0
        self.next = 0  # the next arrival's index
        self.preemptions = 0

    def generated(self, i: int) -> int:
        return self.base[i] + self.steps - self.joined[i]

    def go(self) -> None:
        n = len(self.arrivals)
        budget = _BUDGET.get()
        limit = RUN_STEPS if budget is None else min(budget.left, RUN_STEPS)
        steps = 0
        while self.next < n or self.waiting or self.prefilling or self.batch:
            steps += 1
            if steps > limit:
                shared = budget is not None and budget.left <= RUN_STEPS
                raise SimulationTooLong(budget.total if shared else RUN_STEPS)
            while self.next < n and self.arrivals[self.next] <= self.now:
                self.waiting.append(self.next)
                self.next += 1
            if not (self.waiting or self.prefilling or self.batch):
                self.now = self.arrivals[self.next]
                continue
            self._make_room()
            chunks = self._schedule_prefill()
            if chunks:
                self._step(chunks)
            elif self.batch:
                self._jump()
            else:  # nothing runs and nothing fits (cannot happen with lengths cut to fit)
                raise RuntimeError("the simulated engine cannot admit any request")
        if budget is not None:
            budget.left -= steps

    def _leave(self, i: int) -> int:
        """Take i out of the running batch; the tokens it held."""
        held = self.prompt[i] + self.generated(i)
        self.is_running[i] = False
        self.batch -= 1
        self.context -= held
        self.kv_used -= held * self.per + self.state
        return held

    def _make_room(self) -> None:
        """Preempt the newest running sequences until the next decode step fits the cache."""
        while self.batch and self.kv_used + self.batch * self.per > self.kv_tokens:
            victim = self.running.pop()
            if not self.is_running[victim]:
                continue
            generated = self.generated(victim)
            held = self._leave(victim)
            self.version[victim] += 1
            self.base[victim] = generated
            self.prefilled[victim] = 0
            self.needed[victim] = held  # its prompt and tokens so far, back in the cache
            self.restoring[victim] = self.resume_cached
            self.waiting.appendleft(victim)
            self.preemptions += 1

    def _schedule_prefill(self) -> list[tuple[int, int]]:
        budget = self.budget - self.batch
        free = self.kv_tokens - self.kv_used - self.batch * self.per
        chunks = []
        for i in self.prefilling:
            if budget <= 0 or free <= 0:
                break
            take = int(
                min(self.needed[i] - self.prefilled[i], self._room(i, budget), self._fit(free))
            )
            if take > 0:
                chunks.append((i, take))
                budget, free = budget - self._cost(i, take), free - take * self.per
        while self.waiting and budget > 0 and free > self.state:
            if self.batch + len(self.prefilling) >= self.max_seqs:
                break
            i = self.waiting[0]
            take = int(min(self.needed[i], self._room(i, budget), self._fit(free - self.state)))
            if take < min(self.needed[i], 16) and take < budget:
                break  # the cache has no room for a useful chunk: wait for a completion
            self.waiting.popleft()
            self.prefilling.append(i)
            chunks.append((i, take))
            self.kv_used += self.state  # its state, from its admission on
            budget, free = budget - self._cost(i, take), free - take * self.per - self.state
        return chunks

    def _fit(self, free: float) -> float:
        """The tokens `free` units of cache hold (any number without attention layers)."""
        return free / self.per if self.per else math.inf

    def _room(self, i: int, budget: int) -> float:
        """The most of i's prefill the token budget lets into this step: a resumption from the
        prefix cache uses none of it (`_cost`)."""
        return math.inf if self.restoring[i] else budget

    def _cost(self, i: int, take: int) -> int:
        """Tokens of compute (and of the budget) `take` tokens of i's prefill cost: one for a
        resumption from the prefix cache (its next logits), else each."""
        return 1 if self.restoring[i] else take

    def _step(self, chunks: list[tuple[int, int]]) -> None:
        tokens = sum(self._cost(i, take) for i, take in chunks)
        positions = sum(
            take * (self.prefilled[i] + take / 2) for i, take in chunks if not self.restoring[i]
        )
        self.now += self.server.step_s(self.eff, self.batch, self.context, tokens, positions)
        self._advance(1)
        for i, take in chunks:
            self.prefilled[i] += take
            self.kv_used += take * self.per
        done = [i for i in self.prefilling if self.prefilled[i] >= self.needed[i]]
        if done:
            self.prefilling = [i for i in self.prefilling if self.prefilled[i] < self.needed[i]]
        for i in done:
            self.restoring[i] = False
            if self.first[i] < 0:
                self.first[i] = self.now
                self.base[i] = 1
                self.kv_used += self.per
            if self.base[i] >= self.output[i]:
                self.finish[i] = self.now
                self.kv_used -= (self.prompt[i] + self.base[i]) * self.per + self.state
                continue
            self.joined[i] = self.steps
            self.is_running[i] = True
            self.running.append(i)
            self.batch += 1
            self.context += self.prompt[i] + self.base[i]
            at = self.steps + self.output[i] - self.base[i]
            heapq.heappush(self.finishing, (at, self.version[i], i))

    def _advance(self, k: int) -> None:
        """k decode steps for the running sequences (their times already counted)."""
        if not self.batch:
            return
        self.steps += k
        self.context += k * self.batch
        self.kv_used += k * self.batch * self.per
        heap = self.finishing
        while heap and heap[0][0] <= self.steps:
            _, version, i = heapq.heappop(heap)
            if self.is_running[i] and version == self.version[i]:
                self._leave(i)
                self.finish[i] = self.now
        if len(self.running) > 2 * self.batch + 16:
            self.running = [i for i in self.running if self.is_running[i]]

    def _next_finish(self) -> int:
        heap = self.finishing
        while heap and not (self.is_running[heap[0][2]] and heap[0][1] == self.version[heap[0][2]]):
            heapq.heappop(heap)
        return heap[0][0] - self.steps

    def _jump(self) -> None:
        """Pure decode steps up to the next event, in one go."""
        decode = self.batch
        k = self._next_finish()
        room = self.kv_tokens - self.kv_used
        if self.per:
            k = min(k, max(int(room // (decode * self.per)), 1))
        s0 = self.server.step_s(self.eff, decode, self.context)
        s1 = self.server.step_s(self.eff, decode, self.context + decode) - s0
        if self.next < len(self.arrivals) and not self.waiting:
            wait = self.arrivals[self.next] - self.now
            k = min(k, max(_steps_to(wait, s0, s1), 1))
        self.now += k * s0 + s1 * k * (k - 1) / 2
        self._advance(k)


def _steps_to(wait: float, s0: float, s1: float) -> int:
    """The fewest steps whose times (s0, s0 + s1, s0 + 2 s1, ...) sum to at least `wait`."""
    if wait <= 0:
        return 1
    if s1 <= 1e-15:
        return math.ceil(wait / s0)
    # k s0 + s1 k (k - 1) / 2 >= wait
    a, b = s1 / 2, s0 - s1 / 2
    return max(math.ceil((-b + math.sqrt(b * b + 4 * a * wait)) / (2 * a)), 1)
