"""`--backend openai`: a server that already runs (vLLM, SGLang, TGI: any OpenAI-compatible
`/v1/completions`). Checks that it answers and serves the model, picks the tokenizer, then runs
the suite (collectors.collect). `--backend vllm` ends here too, with the server it started."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import requests

from fleetplan.collectors.collect import Target, collect
from fleetplan.collectors.errors import CollectError
from fleetplan.collectors.hardware import Hardware, telemetry_for
from fleetplan.collectors.openai_client import Endpoint
from fleetplan.collectors.options import CollectOptions
from fleetplan.collectors.prompts import LocalTokenizer, ServerTokenizer
from fleetplan.collectors.run_file import CollectResult, RunSetup


def check_server(endpoint: Endpoint, timeout_s: float = 5.0) -> dict:
    """Fail in seconds, with the reason, when no server answers; returns /v1/models."""
    url = endpoint.base_url.rstrip("/") + "/v1/models"
    try:
        response = requests.get(url, timeout=timeout_s, headers=endpoint.headers())
    except requests.ConnectionError:
        raise CollectError(
            f"no server answers at {endpoint.base_url} (connection refused)"
        ) from None
    except requests.Timeout:
        raise CollectError(
            f"the server at {endpoint.base_url} did not answer within {timeout_s:g} s"
        ) from None
    if response.status_code != 200:
        raise CollectError(
            f"{url} answered HTTP {response.status_code}: is this an OpenAI-compatible server?"
        )
    models = [m.get("id") for m in response.json().get("data", [])]
    if endpoint.model not in models:
        raise CollectError(
            f"the server serves {', '.join(map(str, models)) or 'no model'}, "
            f"not {endpoint.model!r}: pass --model with one of those"
        )
    return response.json()


def server_version(endpoint: Endpoint) -> str | None:
    try:
        response = requests.get(endpoint.base_url.rstrip("/") + "/version", timeout=5)
        return response.json().get("version") if response.ok else None
    except (requests.RequestException, ValueError):
        return None


def collect_openai(
    options: CollectOptions,
    out: Path,
    *,
    engine_version: str | None = None,
    metadata: Mapping[str, str] | None = None,
) -> CollectResult:
    """Measure the server at `--base-url`. The vllm backend, which started it, gives the
    engine's version and what its runs should note about the server."""
    server = options.server
    if not server.base_url or not options.model:
        raise CollectError("--backend openai needs --base-url and --model")
    endpoint = Endpoint(
        server.base_url,
        options.model,
        api_key=server.api_key,
        ignore_eos=not server.no_ignore_eos,
        request_timeout_s=server.request_timeout,
    )
    check_server(endpoint)
    tokenizer = (
        LocalTokenizer(server.tokenizer)
        if server.tokenizer
        else ServerTokenizer(server.base_url, options.model)
    )
    telemetry = telemetry_for(options.hardware)
    try:
        hardware = Hardware.resolve(options.hardware.gpu, options.hardware.gpu_count, telemetry)
        version = engine_version or server_version(endpoint)
        setup = RunSetup(
            hardware=hardware,
            model=options.model,
            # a server that tells its version is vLLM's; the vllm backend knows it started one
            engine="vllm" if version or options.backend == "vllm" else None,
            engine_version=version,
            dtype=options.dtype,
            tensor_parallel_size=(
                options.engine.tensor_parallel_size if options.backend == "vllm" else None
            ),
            metadata=dict(metadata or {}),
        )
        return collect(
            Target(endpoint, tokenizer),
            options.measure.plan(),
            telemetry=telemetry,
            setup=setup,
            out_dir=out,
            search=options.search.plan(options.measure.num_requests),
        )
    finally:
        telemetry.close()
