"""Capacity of one server of a configuration for one traffic class, with its basis in words.

- `rules`: the scenario's rule chosen per class (`capacities`, `points_for_model`,
  `points_for_class`): the curve rule (`curve_rule`, the default) or today's measured-level
  rule (`measured_rule`, also the curve's fallback).
- `configuration`: what a capacity is made of: `Configuration` (GPU model x GPUs per server x
  server), the measured `Level` it rests on, and the `Capacity` interval itself.
- `architecture`: what the bounds and the serving model need of a model (`Architecture`: layers,
  KV heads, dtypes, weights, experts), from its config.json or the bundled table;
  `quantization`: a quantized checkpoint's weights from its `quantization_config`;
  `latent_attention`: multi-head latent attention's cache and weights (DeepSeek-V3);
  `experts`: a mixture of experts' layout; `config_keys`: a config.json's numbers, checked;
  `config_families`: the names other model families give them (GPT-2, Falcon, MPT, ChatGLM,
  DBRX, ERNIE), their two-matrix MLPs and tied embeddings; `vision`: a multimodal model's
  vision encoder, in memory but not read by a text request's steps; `recurrent`: a hybrid's or
  recurrent model's layers that keep a state per sequence (Mamba, Mamba 2, Gated DeltaNet,
  lightning attention), the state's bytes and those layers' parameters; `nas`: a NAS model's
  layers, each of a shape of its own (Llama-Nemotron's `block_configs`).
- `envelope`: a server's physical envelope (KV cache, decode bandwidth) from the model's shape
  and the GPUs' memory and bandwidth (`level_flags`).
- `intervals`: where two configurations' capacity intervals overlap (the data cannot rank them).
- `measure_hint`: the `fleetplan collect --find-capacity` command for a class nobody measured.

To add a rule: a module beside `curve_rule` and `measured_rule` that returns `Capacity`s with their
basis, a value of `scenario.scenario.CapacityRule`, and its branch in `rules.capacities`.
"""
