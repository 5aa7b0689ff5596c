"""Estimates of what nobody measured: a serving model per GPU and engine, calibrated on the
warehouse's measured levels, that predicts a configuration's P99 TTFT and TPOT against an
open-loop rate, for any model of known shape on any GPU of the spec table.

- `specs`: the GPU spec table (dense BF16 TFLOPS, memory, bandwidth, interconnect, with a source
  per row) and which measured GPU an unmeasured one borrows its efficiencies from.
- `serving`: one engine step's time (prefill compute, decode memory traffic, a fixed overhead,
  tensor-parallel communication) and the KV cache an engine allocates.
- `simulate`: a seeded discrete-event simulation of continuous batching under Poisson arrivals
  (or a benchmark's fixed number of requests), giving P50/P99 TTFT and TPOT and throughput.
- `level`: what the estimate reads of a measured level (its token counts, its TP).
- `calibrate`: the efficiencies and overheads fitted per (GPU, engine) on measured levels.
- `prefix_cache`: which measured levels found their prompts in the engine's prefix cache (the
  same prompts sent again to a server that held them), read by the calibration as such.
- `predict`: a server's saturation, its P99 curve against the rate, and the capacity at targets.
- `queueing`: the simulation's queueing approximation in closed form, for plans that estimate
  many configurations at once (validated on its own).
- `shape`: an identical architecture (a measured model of the same shape) and its match.

Measured data always wins: an estimate is used only where no run of the configuration exists,
and it always says it is one, with the error band the leave-one-out validation measured
(`benchmarks/estimate.py`).
"""
