"""`fleetplan capacity`: how many requests/s one server of a configuration carries at P99 targets,
from its latency-against-load curve, with today's measured-level rule beside it.

Exit codes: 0 with a capacity; 2 (EXIT_INFEASIBLE) when there is none (no rate meets the targets,
or the curve cannot be fitted: the reason says which); 1 for input the warehouse cannot answer
(an unknown model, GPU, GPU count or traffic; the message says what there is)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from fleetplan.cli.common import capacity_at_arg, positive_float, positive_int, warehouse_arg
from fleetplan.core.exits import EXIT_INFEASIBLE, EXIT_OK, EXIT_PROBLEMS

if TYPE_CHECKING:
    from fleetplan.services.capacity import CapacityReport

NAME = "capacity"


def add_parser(sub: argparse._SubParsersAction) -> None:
    capacity = sub.add_parser(
        NAME,
        help="requests/s one server carries at P99 targets (the latency-against-load model)",
        description="The highest rate whose predicted P99s meet the targets, for one "
        "configuration (model, GPU, GPUs per server) and traffic, with today's measured-level "
        "rule, the saturation rate and the levels the prediction rests on.",
    )
    warehouse_arg(capacity)
    capacity.add_argument("--model", required=True, help="model id, or its name after the '/'")
    capacity.add_argument("--gpu", required=True, help="GPU model, any common label (4090, h100)")
    capacity.add_argument(
        "--gpu-count", required=True, type=positive_int, metavar="N", help="GPUs per server"
    )
    # The traffic, matched as a plan's class is: needed only where the configuration was
    # measured with several kinds.
    capacity.add_argument("--dataset", help="the traffic's benchmark dataset (e.g. sharegpt)")
    capacity.add_argument("--input-len", type=positive_int, metavar="I", help="input tokens")
    capacity.add_argument("--output-len", type=positive_int, metavar="O", help="output tokens")
    capacity.add_argument("--ttft-p99", type=positive_float, metavar="MS", help="P99 TTFT target")
    capacity.add_argument("--tpot-p99", type=positive_float, metavar="MS", help="P99 TPOT target")
    capacity.add_argument(
        "--extrapolate",
        action="store_true",
        help="predict past the highest level the server kept up with, toward saturation",
    )
    capacity.add_argument(
        "--server",
        metavar="TEXT",
        help="the server, where the configuration was measured with several (engine, version, "
        "dtype, TP and variant as listed, e.g. 'vllm 0.8.5, float16, TP 1'; or its variant label)",
    )
    capacity_at_arg(capacity)
    capacity.add_argument(
        "--model-config",
        metavar="PATH",
        help="the model's Hugging Face config.json, for its physical bounds (KV cache, decode "
        "bandwidth) where sample_data/models/architectures.toml has none, or instead of it",
    )
    capacity.add_argument(
        "--estimate",
        action="store_true",
        help="where no run of the configuration is in the warehouse, estimate it with the "
        "serving model calibrated on the runs that are (labelled, with its error band)",
    )
    capacity.add_argument("--format", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    from fleetplan.core.errors import InputError
    from fleetplan.services.capacity import CapacityQuery, LatencyTargets
    from fleetplan.services.capacity_estimate import capacity_from_warehouse
    from fleetplan.warehouse.db import Warehouse

    query = CapacityQuery(
        model=args.model,
        gpu=args.gpu,
        gpu_count=args.gpu_count,
        dataset=args.dataset,
        input_len=args.input_len,
        output_len=args.output_len,
        targets=LatencyTargets(ttft_p99_ms=args.ttft_p99, tpot_p99_ms=args.tpot_p99),
        extrapolate=args.extrapolate,
        server=args.server,
        capacity_at=args.capacity_at or "low",
        model_config_path=args.model_config,
        estimate=args.estimate,
    )
    try:
        with Warehouse.open(args.warehouse, read_only=True) as warehouse:
            report = capacity_from_warehouse(warehouse, query)
    except InputError as error:
        hint = ""
        if not args.estimate and error.field in ("model", "gpu", "gpu_count"):
            hint = " (to estimate a configuration nobody measured: --estimate)"
        print(f"fleetplan capacity: {error}{hint}", file=sys.stderr)
        return EXIT_PROBLEMS
    if args.format == "json":
        sys.stdout.write(report.model_dump_json(indent=1) + "\n")
    else:
        sys.stdout.write(text(report))
    if report.capacity_rps <= 0:
        print(f"fleetplan capacity: no capacity: {report.reason}", file=sys.stderr)
        return EXIT_INFEASIBLE
    return EXIT_OK


BASIS_WORDS = {
    "measured": "at a measured level",
    "interpolated": "interpolated between measured levels",
    "extrapolated": "extrapolated toward saturation, past the measured levels",
    "none": "none",
    "identical architecture": "measured on a model of identical architecture",
    "estimated": "ESTIMATED by the serving model, not measured",
}


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f} ms"


def _rps(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def text(report: CapacityReport) -> str:
    """The report for a terminal: the answer first, then the levels it rests on."""
    if report.estimate is not None or report.basis == "estimated":
        return estimate_text(report)
    lines = _heading_lines(report) + _capacity_lines(report)
    lines += [
        "Measured rule: "
        + (
            f"{report.measured_rule_rps:.2f} req/s (today's rule: the best achieved throughput "
            "among levels that meet the targets)"
            if report.measured_rule_rps > 0
            else "none (no measured level meets the targets)"
        ),
        "Saturation:    "
        + (
            f"{report.saturation_rps:.2f} req/s (the most a level that did not keep up proves, "
            "or a closed-loop sweep's throughput plateau)"
            if report.saturation_rps is not None
            else "not reached in the data (no level that did not keep up)"
        ),
        *([f"Prompts cached: {report.prompts_cached}"] if report.prompts_cached else []),
        "",
        *_level_lines(report),
    ]
    if report.bounds is not None:
        lines += ["", *envelope_text(report)]
    return "\n".join(lines) + "\n"


def _heading_lines(report: CapacityReport) -> list[str]:
    """What was measured (model, GPUs, server, traffic) and the targets asked for."""
    targets = report.targets
    wanted = [
        f"P99 {name} <= {value:g} ms"
        for name, value in (("TTFT", targets.ttft_p99_ms), ("TPOT", targets.tpot_p99_ms))
        if value is not None
    ]
    server = f" ({report.server})" if report.server else ""
    return [
        f"{report.model} on {report.gpu_count}x {report.gpu_model}{server}, "
        f"{report.traffic} traffic",
        f"Targets: {'; '.join(wanted) or 'none (the highest rate the server kept up with)'}",
        "",
    ]


def _capacity_lines(report: CapacityReport) -> list[str]:
    """The capacity found: its interval and the P99s predicted there, or none and why."""
    lines = []
    if report.capacity_rps > 0:
        lines.append(
            f"Capacity:      {report.capacity_rps:.2f} req/s per server "
            f"({BASIS_WORDS[report.basis]})"
        )
        lines.append(
            f"               interval {report.rps_low:.2f} to {report.rps_high:.2f} req/s "
            f"(the {report.capacity_at} end shown: --capacity-at)"
        )
        lines.append(
            f"               predicted there: P99 TTFT {_ms(report.predicted_ttft_p99_ms)}, "
            f"P99 TPOT {_ms(report.predicted_tpot_p99_ms)}"
        )
    else:
        lines.append("Capacity:      none")
    if report.reason:
        lines.append(f"               {report.reason}")
    return lines


def _level_lines(report: CapacityReport) -> list[str]:
    """The table of measured levels, then the files they come from, numbered."""
    lines = [
        "Levels (the curve runs through those the server kept up with):",
        f"  {'offered':>8} {'sustained':>9}  {'status':<12} {'P99 TTFT':>11} {'P99 TPOT':>10}"
        "  file",
    ]
    # Files are long names: numbered once below the table.
    files = list(dict.fromkeys(level.source_file for level in report.levels))
    for level in report.levels:
        lines.append(
            f"  {level.offered_rps:>8.2f} {_rps(level.sustained_rps):>9}  {level.kept_up:<12} "
            f"{_ms(level.ttft_p99_ms):>11} {_ms(level.tpot_p99_ms):>10}  "
            f"[{files.index(level.source_file) + 1}]"
        )
        lines.append(f"  {'':>8} {level.reason}")
    lines += ["", "Files:"] + [f"  [{i}] {name}" for i, name in enumerate(files, start=1)]
    return lines


def _bound(value: float | None, digits: int = 1) -> str:
    return "unknown" if value is None else f"{value:,.{digits}f}"


def envelope_text(report: CapacityReport) -> list[str]:
    """The server's physical bounds, and the levels that claim more than they allow."""
    bounds = report.bounds
    assert bounds is not None
    lines = ["Physical bounds (the most the server can carry; a level above one is flagged):"]
    if bounds.note:
        lines.append(f"  {bounds.note}")
    if bounds.architecture is None:
        return lines
    lines.append(
        f"  GPU memory {_bound(bounds.memory_gb, 0)} GB, bandwidth "
        f"{_bound(bounds.bandwidth_gb_s, 0)} GB/s per GPU; KV cache "
        f"{_bound(bounds.kv_tokens, 0)} tokens per server (all memory but the weights: the "
        "bound); the engine allocates about "
        f"{_bound(bounds.engine_kv_tokens, 0)} (vLLM at memory utilisation 0.9)"
    )
    if bounds.recurrent is not None and bounds.state_bytes_per_sequence is not None:
        lines.append(
            f"  {bounds.state_bytes_per_sequence / 2**20:,.1f} MiB of state per sequence beside "
            f"its KV ({bounds.recurrent}): the sequences below hold both"
        )
    if not bounds.weights_fit:
        lines.append("  the model's weights do not fit in this server's GPU memory")
    lines.append(
        f"  {'offered':>8} {'sequences':>10} {'req/s':>9} {'out tok/s':>10}  Little's law with"
    )
    for level in bounds.levels:
        offered = "-" if level.offered_rps is None else f"{level.offered_rps:.2f}"
        lines.append(
            f"  {offered:>8} {_bound(level.sequences, 0):>10} {_bound(level.rate_rps):>9} "
            f"{_bound(level.output_tps, 0):>10}  {level.rate_basis}"
        )
        lines += [f"  {'':>8} FLAGGED: {flag}" for flag in level.flags]
    lines.append(
        f"  {bounds.flagged} level(s) claim more than a bound allows. Architecture: "
        f"{bounds.architecture}"
    )
    return lines


def estimate_text(report: CapacityReport) -> str:
    """An estimate for a terminal: the answer, its band, the curve, what it rests on."""
    from fleetplan.planner.report.table import band_words

    lines = [
        "ESTIMATE (no run of this configuration is in the warehouse; measured data always wins)",
        *_heading_lines(report),
        *_capacity_lines(report),
        "Saturation:    "
        + (
            f"{report.saturation_rps:.2f} req/s (simulated: a replica kept full)"
            if report.saturation_rps is not None
            else "unknown"
        ),
    ]
    block = report.estimate
    if block is None:
        return "\n".join(lines) + "\n"
    error = block.error
    if error is not None:
        lines += [
            f"Error band ({error.kind} estimates, predicted / measured - 1, P10 to P90): "
            f"{band_words(error.model_dump())}",
            f"               from {error.source}",
        ]
    else:
        lines.append("Error band:    unknown (no validation figures: run benchmarks/estimate.py)")
    kv = report.bounds.kv_tokens if report.bounds is not None else None
    lines += [
        f"GPU:           {block.gpu_basis}",
        f"Traffic:       {block.traffic}",
        *_kv_lines(report.bounds, kv),
        *_kv_caveat(report),
        "",
        "Simulated curve (open-loop Poisson):",
        f"  {'rate':>8} {'P99 TTFT':>11} {'P99 TPOT':>10}",
        *(
            f"  {p.rate_rps:>8.2f} {_ms(p.ttft_p99_ms):>11} {_ms(p.tpot_p99_ms):>10}"
            for p in block.curve
        ),
        "",
        f"Calibrated on ({len(block.calibrated_on)}): {'; '.join(block.calibrated_on)}",
        "Coefficients:  "
        + ", ".join(f"{name} {value:g}" for name, value in block.efficiencies.items()),
        f"Method:        {block.method}",
    ]
    return "\n".join(lines) + "\n"


def _kv_lines(bounds, kv: float | None) -> list[str]:
    """The estimate's KV cache line (what memory it is: a vision encoder's taken out), a NAS
    model's layers line, and a hybrid's state line."""
    vision = bounds.vision_encoder_gb if bounds is not None else None
    taken = f" - vision encoder {vision:,.2f} GB" if vision else ""
    state = bounds.state_bytes_per_sequence if bounds is not None else None
    recurrent = bounds.recurrent if bounds is not None else None
    if recurrent is not None and "no attention layer" in recurrent:
        line = (
            f"KV cache:      none (no attention layer): room for {_bound(kv, 0)} sequences' "
            f"states per server (memory x 0.9 - weights{taken} - reserve)"
        )
    else:
        line = (
            f"KV cache:      {_bound(kv, 0)} tokens per server (memory x 0.9 - weights{taken} "
            "- reserve)"
        )
    nas = bounds.nas_layers if bounds is not None else None
    lines = [line] + ([f"Layers:        {nas}: a token's KV is theirs"] if nas else [])
    if recurrent is None or state is None:
        return lines
    return [
        *lines,
        f"State:         {state / 2**20:,.1f} MiB per sequence beside its KV: {recurrent}",
    ]


def _kv_caveat(report) -> list[str]:
    """What the estimate's KV note says past `KV_NOTE` (a sliding window's caveat), as a line."""
    from fleetplan.services.capacity_estimate import KV_NOTE

    note = report.bounds.note if report.bounds is not None else None
    rest = (note or "").removeprefix(KV_NOTE).removeprefix("; ")
    return [f"               {rest}"] if note and note.startswith(KV_NOTE) and rest else []
