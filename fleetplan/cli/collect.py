"""`fleetplan collect`: run the probe suite on this host (or a server), or on a Ray cluster.

The flags, their defaults and help live here; `run` turns them into collectors' options models
(collectors/options.py, whose field names are these flags, underscored) and hands over.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fleetplan.cli.common import positive_float, positive_int, wait_arg, warehouse_arg
from fleetplan.collectors.options import (
    BACKEND_NAMES,
    OPTION_NAMES,
    CampaignOptions,
    CollectOptions,
    IngestOptions,
    flag,
    non_default,
)
from fleetplan.core.errors import InputError

NAME = "collect"


def add_parser(sub: argparse._SubParsersAction) -> None:
    collect = sub.add_parser(
        NAME,
        help="run the standard probe suite against an inference engine",
        description="Measure a model on this host's GPUs (or a server's) and write a run file; "
        "with --ray, on every GPU type of a Ray cluster.",
    )
    _collect_arguments(collect)


def run(args: argparse.Namespace) -> int:
    ingest = IngestOptions(warehouse=args.warehouse, wait_s=args.wait) if args.ingest else None
    if ingest is not None:  # a warehouse ingest would refuse: said before the first request
        from fleetplan.warehouse.db import check_target

        check_target(ingest.warehouse)
    # the collect options as given, in the order the parser defines them
    given = {name: value for name, value in vars(args).items() if name in OPTION_NAMES}
    if args.ray is not None or args.campaign:
        return _run_campaign(args, given, ingest)
    if args.backend is None:
        raise InputError("--backend is required (or --campaign)")
    from fleetplan.collectors.run import run_collect  # the backends: imported when used

    return run_collect(CollectOptions.from_mapping(given), out=Path(args.out), ingest=ingest)


def _run_campaign(
    args: argparse.Namespace, given: dict[str, object], ingest: IngestOptions | None
) -> int:
    from fleetplan.collectors.ray_campaign.campaign_file import (
        campaign_from_options,
        load_campaign,
    )
    from fleetplan.collectors.ray_campaign.driver import run_campaign

    if args.campaign:
        if conflicts := [flag(name) for name in non_default(given)]:
            raise InputError(
                f"{', '.join(conflicts)} conflict with --campaign: the campaign file says what "
                "each probe runs (a probe's `args` take any other collect option)"
            )
        campaign = load_campaign(Path(args.campaign))
    elif args.backend is None or args.model is None:
        raise InputError("--ray needs --backend and --model, or a --campaign file")
    else:
        campaign = campaign_from_options(CollectOptions.from_mapping(given))
    options = CampaignOptions(
        address=args.ray or "auto",
        out=Path(args.out),
        gpu_types=args.gpu_types,
        per_type=args.per_type,
        restart=args.restart,
        ingest=ingest,
    )
    return run_campaign(campaign, options)


def _collect_arguments(collect: argparse.ArgumentParser) -> None:
    collect.add_argument("--backend", choices=BACKEND_NAMES)
    collect.add_argument("--out", required=True, metavar="DIR", help="folder for the run file")
    collect.add_argument("--ingest", action="store_true", help="load the run file when done")
    warehouse_arg(collect)
    wait_arg(collect)
    # the groups in the order --help shows them (and `vars(args)` lists them)
    for add_group in (_ray, _measure, _search, _server, _engine, _hardware, _torch):
        add_group(collect)


def _ray(collect: argparse.ArgumentParser) -> None:
    fleet = collect.add_argument_group("a fleet on Ray (pip install 'fleetplan[cluster]')")
    fleet.add_argument(
        "--ray",
        nargs="?",
        const="auto",
        metavar="ADDRESS",
        help="run on every selected host of a Ray cluster (auto: the one this host joined)",
    )
    fleet.add_argument(
        "--campaign", metavar="FILE", help="YAML/JSON: models, backends, suites per GPU type"
    )
    fleet.add_argument(
        "--gpu-types", metavar="LIST", help="only these GPU types, e.g. rtx-4090,h100-pcie"
    )
    fleet.add_argument(
        "--per-type", type=positive_int, metavar="N", help="N hosts of each type (default: all)"
    )
    fleet.add_argument(
        "--restart", action="store_true", help="run everything again, ignoring earlier progress"
    )


def _measure(collect: argparse.ArgumentParser) -> None:
    what = collect.add_argument_group("what to measure (default: the standard suite)")
    what.add_argument(
        "--suite",
        choices=("standard",),
        help="chat 256/256, RAG 2048/256, generation 256/1024 at 1..32 req/s and saturation",
    )
    what.add_argument("--input-len", type=positive_int, help="prompt tokens (a custom shape)")
    what.add_argument("--output-len", type=positive_int, help="output tokens (a custom shape)")
    what.add_argument("--rates", help="request rates, e.g. 1,2,4,inf (default 1,2,4,8,16,32,inf)")
    what.add_argument(
        "--num-requests",
        type=positive_int,
        help="requests per level (200; with --find-capacity the fewest, 400)",
    )
    what.add_argument("--warmup", type=int, default=4, help="warm-up requests, not counted (4)")
    what.add_argument("--seed", type=int, default=0)
    what.add_argument(
        "--burstiness",
        type=positive_float,
        default=1.0,
        metavar="F",
        help="arrivals' gamma shape: 1 Poisson (default), higher more evenly spaced",
    )
    what.add_argument("--max-concurrency", type=positive_int, help="cap on requests in flight")


def _search(collect: argparse.ArgumentParser) -> None:
    search = collect.add_argument_group(
        "capacity search (openai, vllm): the highest rate whose P99s meet the targets"
    )
    search.add_argument(
        "--find-capacity",
        action="store_true",
        help="a ladder of rates (--rates, else the suite's; doubled while they pass), then "
        "bisection between the highest passing and lowest failing rate; levels of at least "
        "--num-requests (400) requests",
    )
    search.add_argument("--ttft-p99", type=positive_float, metavar="MS", help="P99 TTFT target")
    search.add_argument("--tpot-p99", type=positive_float, metavar="MS", help="P99 TPOT target")
    search.add_argument(
        "--tolerance",
        type=positive_float,
        default=0.05,
        metavar="F",
        help="stop when (high - low) / high <= F (0.05)",
    )
    search.add_argument(
        "--min-runs",
        type=int,
        choices=(1, 2, 3),
        default=2,
        help="runs of a rate before its P99 decides (2: runs of one rate differ by more than "
        "one run shows; 1 halves the search's time and trusts a single run)",
    )


def _server(collect: argparse.ArgumentParser) -> None:
    server = collect.add_argument_group("the server (openai, vllm)")
    server.add_argument("--model", help="model name served (openai) or path/name (vllm, torch)")
    server.add_argument("--base-url", help="the OpenAI-compatible server (openai)")
    server.add_argument(
        "--tokenizer",
        help="tokenizer path for exact prompt lengths (default: the server's /tokenize)",
    )
    server.add_argument("--api-key", help="bearer token for the server")
    server.add_argument(
        "--no-ignore-eos",
        action="store_true",
        help="for servers that reject ignore_eos (outputs may end early)",
    )
    server.add_argument(
        "--request-timeout",
        type=positive_float,
        default=600.0,
        metavar="S",
        help="a request fails when the server sends nothing for S seconds",
    )


def _engine(collect: argparse.ArgumentParser) -> None:
    engine = collect.add_argument_group("the managed vLLM server (vllm)")
    engine.add_argument("--tensor-parallel-size", type=positive_int, default=1)
    engine.add_argument("--load-format", help="e.g. dummy: measure speed without the weights")
    engine.add_argument("--dtype", help="model dtype (vllm, torch)")
    engine.add_argument("--port", type=positive_int, help="port for the managed server")
    engine.add_argument("--startup-timeout", type=positive_float, default=900.0, metavar="S")
    engine.add_argument(
        "--engine-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="passed to the vLLM server as is (repeat)",
    )


def _hardware(collect: argparse.ArgumentParser) -> None:
    hardware = collect.add_argument_group("hardware")
    hardware.add_argument("--gpu", help="the GPU model the server runs on (default: from NVML)")
    hardware.add_argument("--gpu-count", type=positive_int, help="GPUs per server")
    hardware.add_argument(
        "--telemetry",
        choices=("auto", "off"),
        default="auto",
        help="NVML energy measurement (auto: when NVML works here)",
    )


def _torch(collect: argparse.ArgumentParser) -> None:
    torch_group = collect.add_argument_group("transformers on torch (torch)")
    torch_group.add_argument("--config", help="a model config JSON: random weights of that shape")
    torch_group.add_argument("--device", help="cuda or cpu (default: cuda when available)")
    torch_group.add_argument(
        "--max-batch",
        type=positive_int,
        default=256,
        help="largest batch of the sweep (1, 2, 4, ...)",
    )
