"""`--backend torch`: Hugging Face transformers on torch, for hosts without vLLM.

A closed-loop batch sweep (1, 2, 4, ... up to `--max-batch` or the GPU's memory): for each batch,
random prompts of the shape's exact token length are prefilled (the prefill time is the TTFT),
then decoded one token per step with the KV cache (each step's time is the TPOT and the ITL of
every sequence in the batch). Points carry `max_concurrency` = batch size and no offered rate.
The model comes from a path, or from a config file with random weights (speed without weights).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from fleetplan.collectors.errors import CollectError
from fleetplan.collectors.events import level_started
from fleetplan.collectors.hardware import Hardware, telemetry_for
from fleetplan.collectors.options import CollectOptions
from fleetplan.collectors.requests_log import RequestResult, level_point
from fleetplan.collectors.run_file import CollectResult, RunSetup, collector_run, write_run_file
from fleetplan.collectors.suite import Suite, TokenShape
from fleetplan.collectors.telemetry import Telemetry
from fleetplan.core.contract import Point
from fleetplan.core.errors import InputError
from fleetplan.core.files import read_at_most
from fleetplan.core.strict import load_json


def _load_model(options: CollectOptions, device: str, dtype: object) -> tuple[object, str]:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    if options.torch.config:
        path = Path(options.torch.config)
        try:
            data = read_at_most(path, limit=4 << 20)  # a regular file, bounded
            config_dict = load_json(data, file=str(path))  # a key twice: refused
        except (OSError, InputError) as error:
            raise CollectError(f"cannot read the model config {path}: {error}") from None
        if not isinstance(config_dict, dict):
            raise CollectError(f"{path}: a model config is a JSON object")
        fields = {k: v for k, v in config_dict.items() if not k.startswith("_")}
        model_type = fields.pop("model_type", None)
        if model_type is None:
            raise CollectError(f"{path}: a model config needs its model_type (e.g. llama)")
        config = AutoConfig.for_model(model_type, **fields)
        torch.manual_seed(0)
        with torch.device(device):
            model = AutoModelForCausalLM.from_config(config, dtype=dtype)
        name = config_dict.get("_name_or_path") or path.stem
        return model.eval(), f"{name} (random weights)"
    if not options.model:
        raise CollectError("--backend torch needs --model (a path) or --config (random weights)")
    model = AutoModelForCausalLM.from_pretrained(options.model, dtype=dtype).to(device)
    return model.eval(), options.model


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _batch(
    model: object, shape: TokenShape, batch: int, device: str, seed: int
) -> list[RequestResult]:
    import torch

    generator = torch.Generator(device="cpu").manual_seed(seed + batch)
    vocab = model.config.vocab_size
    prompt = torch.randint(3, vocab, (batch, shape.input_len), generator=generator).to(device)
    with torch.inference_mode():
        _sync(device)
        started = time.perf_counter()
        out = model(input_ids=prompt, use_cache=True)
        token = out.logits[:, -1:].argmax(dim=-1)
        _sync(device)
        ttft = time.perf_counter() - started
        cache, steps = out.past_key_values, []
        for _ in range(shape.output_len - 1):
            step_start = time.perf_counter()
            out = model(input_ids=token, past_key_values=cache, use_cache=True)
            token = out.logits[:, -1:].argmax(dim=-1)
            cache = out.past_key_values
            _sync(device)
            steps.append(time.perf_counter() - step_start)
    e2el = ttft + sum(steps)
    return [
        RequestResult(
            start_s=0.0,
            ttft_s=ttft,
            itl_s=list(steps),
            e2el_s=e2el,
            input_tokens=shape.input_len,
            output_tokens=shape.output_len,
        )
        for _ in range(batch)
    ]


def _sweep(
    model: object,
    shape: TokenShape,
    *,
    max_batch: int,
    device: str,
    telemetry: Telemetry,
    suite: Suite,
) -> tuple[list[Point], list[str]]:
    import torch

    points, problems = [], []
    warm = TokenShape(
        name=shape.name, input_len=shape.input_len, output_len=min(4, shape.output_len)
    )
    _batch(model, warm, 1, device, suite.seed)  # warm-up, not counted
    batch, levels = 1, max(max_batch, 1).bit_length()
    while batch <= max_batch:
        level_started(shape.name, batch.bit_length() - 1, levels)
        window = f"{shape.name}-b{batch}"
        telemetry.begin_window(window)
        try:
            results = _batch(model, shape, batch, device, suite.seed)
        except torch.cuda.OutOfMemoryError:
            telemetry.end_window(window)
            problems.append(
                f"{shape.name}: batch {batch} does not fit in GPU memory; the sweep "
                f"stops at {batch // 2}"
            )
            torch.cuda.empty_cache()
            break
        energy = telemetry.end_window(window)
        points.append(
            level_point(
                results,
                duration_s=results[0].e2el_s,
                offered_rate_rps=None,
                max_concurrency=batch,
                energy=energy,
            )
        )
        batch *= 2
    return points, problems


def collect_torch(options: CollectOptions, out: Path) -> CollectResult:
    """The batch sweep of every token shape, on this process's torch."""
    try:
        import torch
        import transformers
    except ImportError:
        raise CollectError(
            "--backend torch needs torch and transformers: pip install "
            "'fleetplan[gpu]' (or torch and transformers)"
        ) from None
    device = options.torch.device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtype_name = options.dtype or ("bfloat16" if device.startswith("cuda") else "float32")
    dtype = getattr(torch, dtype_name, None)
    if not isinstance(dtype, torch.dtype):
        raise CollectError(f"--dtype {dtype_name!r} is not a torch dtype (bfloat16, float16, ...)")
    telemetry = (
        telemetry_for(options.hardware)
        if device.startswith("cuda")
        else Telemetry("not measured: the model runs on the CPU")
    )
    suite = options.measure.plan()
    try:
        hardware = Hardware.resolve(
            options.hardware.gpu, options.hardware.gpu_count or 1, telemetry
        )
        model, name = _load_model(options, device, dtype)
        started = datetime.now(UTC)
        setup = RunSetup(
            hardware=hardware,
            model=name,
            engine="transformers",
            engine_version=transformers.__version__,
            dtype=dtype_name,
            tensor_parallel_size=1,
            metadata={
                "backend": "torch",
                "torch": torch.__version__,
                "device": device,
                "telemetry": telemetry.reason or "nvml",
                "seed": str(suite.seed),
            },
        )
        runs, problems = [], []
        for shape in suite.shapes:
            points, shape_problems = _sweep(
                model,
                shape,
                max_batch=options.torch.max_batch,
                device=device,
                telemetry=telemetry,
                suite=suite,
            )
            problems += shape_problems
            if points:
                runs.append(collector_run(shape, setup, started, points))
    finally:
        telemetry.close()
    path, run_file = write_run_file(runs, out, started, setup.file_name(prefix="torch-"))
    return CollectResult(path, run_file, problems)
