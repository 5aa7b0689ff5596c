"""`--backend openai`: a server that already runs (vLLM, SGLang, TGI: any OpenAI-compatible
`/v1/completions`). Checks that it answers and serves the model, picks the tokenizer, then runs
the suite (collectors.collect). `--backend vllm` ends here too, with the server it started."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import requests

from fleetplan.collectors.collect import Target, collect
from fleetplan.collectors.errors import CollectError
from fleetplan.collectors.hardware import Hardware, telemetry_for
from fleetplan.collectors.openai_client import Endpoint
from fleetplan.collectors.options import CollectOptions
from fleetplan.collectors.preflight import CHECK_DEADLINE_S, NoAnswer, fetch_json, shown
from fleetplan.collectors.prompts import LocalTokenizer, ServerTokenizer
from fleetplan.collectors.run_file import CollectResult, RunSetup


def check_server(endpoint: Endpoint, timeout_s: float = CHECK_DEADLINE_S) -> dict:
    """Fail in seconds, with the reason, when no server answers or it does not serve the
    model; returns /v1/models."""
    url = endpoint.base_url.rstrip("/") + "/v1/models"
    try:
        status, answer = fetch_json("GET", url, headers=endpoint.headers(), deadline_s=timeout_s)
    except requests.ConnectionError:
        raise CollectError(
            f"no server answers at {endpoint.base_url} (connection refused)"
        ) from None
    except NoAnswer as error:
        raise CollectError(f"the server at {endpoint.base_url} failed its check: {error}") from None
    if status != 200:
        raise CollectError(f"{url} answered HTTP {status}: is this an OpenAI-compatible server?")
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, list):
        raise CollectError(
            f"{url} did not answer with an OpenAI model list (a JSON object with `data`): is "
            "this an OpenAI-compatible server?"
        )
    models = [m.get("id") for m in data if isinstance(m, dict)]
    if endpoint.model not in models:
        served = ", ".join(shown(m) for m in models[:10]) or "no model"
        raise CollectError(
            f"the server serves {served}, not {shown(endpoint.model)!r}: pass --model with one "
            "of those"
        )
    return answer


# What a run records as the engine's version: a short plain string ("0.6.3.post1").
_VERSION = re.compile(r"[A-Za-z0-9_.+-]{1,100}")  # fullmatch: ASCII, no trailing newline


def server_version(endpoint: Endpoint) -> tuple[str | None, str | None]:
    """The version /version reports, and why it is not recorded when it is not (a number, an
    object, 5,000 characters, escape codes: the run records the version as unknown)."""
    try:
        status, answer = fetch_json("GET", endpoint.base_url.rstrip("/") + "/version")
    except (requests.ConnectionError, NoAnswer):
        return None, None
    if status != 200 or answer is None:
        return None, None
    version = answer.get("version") if isinstance(answer, dict) else None
    if isinstance(version, str) and _VERSION.fullmatch(version):
        return version, None
    return None, f"the server's /version is {shown(answer)}: the engine version is not recorded"


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
        version, version_problem = (
            (engine_version, None) if engine_version else server_version(endpoint)
        )
        if version_problem:
            metadata = {**(metadata or {}), "engine_version_note": version_problem}
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
