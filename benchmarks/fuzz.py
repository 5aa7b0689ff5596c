"""Fuzzing speed: mutated real files of every format through the import path, in cases per second,
against the baseline of the same real files unmutated, measured in the same run.

Each case is one mutation (truncation, type swap, huge number, NaN/inf, deep nesting, unicode,
10^6-element array, byte flips, CSV/YAML cell swaps) of one seed file, parsed by detection and
the format's importer; a clear refusal (a project error) counts as handled, anything else is a
bug: listed at the end, and the exit status is 1. The ratio says how much slower a hostile file
is than a good one: refusals should come fast (limits are checked before parsing). Refusals of
files that parse but contradict themselves (warehouse.consistency) are counted apart.

    python benchmarks/fuzz.py --cases 2000
    python benchmarks/fuzz.py --server --cases 2000
    python benchmarks/fuzz.py --surface scenarios|traces|exports --cases 200

`--server`: the hostile-server mode. A streaming OpenAI-compatible server on 127.0.0.1 answers
each completion with one of its SSE chunks (a token or the usage) mutated as a file is, and the
collector's client (collectors.openai_client) reads it: against the same answers unmutated, in
requests per second. A case is handled when the client returns (a failure is data); a bug is an
exception out of the client, or a success whose numbers are not what was asked (output tokens
other than max_tokens with ignore_eos, or a time below zero).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.fuzz_surfaces import SURFACES, surface_main  # noqa: E402
from benchmarks.inputs.fuzzing import mutate, seed_files  # noqa: E402
from fleetplan.core.errors import FleetplanError  # noqa: E402
from fleetplan.warehouse.importers.base import FileInput, ImportOptions  # noqa: E402
from fleetplan.warehouse.importers.registry import parse  # noqa: E402

OPTIONS = ImportOptions(gpu="rtx-4090", gpu_count=1)


CONTRADICTS = "the file contradicts itself"


def run(cases: list[tuple[str, bytes]], bugs: Counter, why: Counter) -> tuple[float, int]:
    """Seconds to parse every case, and how many were refused; unexpected errors go to `bugs`,
    refusals for a contradiction to `why`."""
    refused = 0
    start = time.perf_counter()
    for name, data in cases:
        try:
            parse(FileInput.from_bytes(name, data), OPTIONS)
        except FleetplanError as error:
            refused += 1
            if CONTRADICTS in str(error):
                why[getattr(error, "field", None)] += 1
        except Exception as error:  # a bug: counted by where it happened, reported at the end
            where = traceback.extract_tb(error.__traceback__)[-1]
            bugs[f"{type(error).__name__} at {Path(where.filename).name}:{where.lineno}"] += 1
    return time.perf_counter() - start, refused


MAX_TOKENS = 8


def _honest_lines(i: int) -> list[bytes]:
    chunks = [
        {"choices": [{"index": 0, "text": f" t{t}", "finish_reason": None}]}
        for t in range(MAX_TOKENS)
    ]
    usage = {"prompt_tokens": 4, "completion_tokens": MAX_TOKENS, "total_tokens": 4 + MAX_TOKENS}
    chunks.append({"choices": [], "usage": usage})
    return [json.dumps(chunk).encode() for chunk in chunks]


async def _serve_and_read(cases: int, seed: int, mutated: bool, bugs: Counter) -> tuple[float, int]:
    """Seconds for `cases` completions read by the collector's client, and how many failed."""
    from aiohttp import web

    from fleetplan.collectors.openai_client import Endpoint, new_session, stream_completion
    from fleetplan.collectors.vllm_server import free_port

    rng = random.Random(seed)
    answers = []
    for i in range(cases):
        lines = _honest_lines(i)
        if mutated:
            which = rng.randrange(len(lines))
            lines[which] = mutate(lines[which], rng).replace(b"\n", b" ")
        answers.append(b"".join(b"data: " + line + b"\n\n" for line in lines) + b"data: [DONE]\n\n")

    async def completions(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        try:
            await response.write(answers[int(body["prompt"])])
            await response.write_eof()
        except ConnectionError:
            pass
        return response

    app = web.Application(client_max_size=1 << 20)
    app.add_routes([web.post("/v1/completions", completions)])
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    endpoint = Endpoint(f"http://127.0.0.1:{port}", "fuzz", request_timeout_s=5)
    failed = 0
    start = time.perf_counter()
    async with new_session(endpoint, 16) as session:
        for i in range(cases):
            try:
                result = await stream_completion(
                    session, endpoint, str(i), input_tokens=4, max_tokens=MAX_TOKENS
                )
            except Exception as error:  # out of the client: a bug
                bugs[f"{type(error).__name__} out of stream_completion"] += 1
                continue
            if not result.ok:
                failed += 1
            elif result.output_tokens != MAX_TOKENS or min([*result.itl_s, result.ttft_s]) < 0:
                bugs[f"accepted {result.output_tokens} output tokens for {MAX_TOKENS}"] += 1
    elapsed = time.perf_counter() - start
    await runner.cleanup()
    return elapsed, failed


def server_main(cases: int, seed: int) -> int:
    import asyncio

    bugs: Counter = Counter()
    clean_s, clean_failed = asyncio.run(_serve_and_read(cases, seed, False, bugs))
    fuzz_s, fuzz_failed = asyncio.run(_serve_and_read(cases, seed, True, bugs))
    print(
        f"clean:   {cases} completions in {clean_s:.2f} s = {cases / clean_s:,.0f} req/s "
        f"({clean_failed} failed)"
    )
    print(
        f"mutated: {cases} completions in {fuzz_s:.2f} s = {cases / fuzz_s:,.0f} req/s "
        f"({fuzz_failed} failed with a reason, {cases - fuzz_failed} still valid)"
    )
    print(f"ratio (mutated time / clean time per request): {fuzz_s / clean_s:.2f}")
    for where, count in bugs.most_common():
        print(f"UNEXPECTED {where}: {count} case(s)")
    print(f"unexpected errors: {sum(bugs.values())}")
    return 1 if bugs or clean_failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--server", action="store_true", help="the hostile-server mode")
    parser.add_argument(
        "--surface",
        choices=SURFACES,
        help="scenarios, request traces or exported files instead of result files "
        "(benchmarks/fuzz_surfaces.py)",
    )
    args = parser.parse_args()
    if args.server:
        return server_main(args.cases, args.seed)
    if args.surface:
        return surface_main(args.surface, args.cases, args.seed)

    seeds = seed_files()
    labels = sorted(seeds)
    rng = random.Random(args.seed)
    picks = [labels[i % len(labels)] for i in range(args.cases)]
    rng.shuffle(picks)
    mutated = [(seeds[label][0], mutate(seeds[label][1], rng)) for label in picks]
    clean = [seeds[label] for label in picks]
    megabytes = sum(len(data) for _, data in mutated) / 2**20

    bugs: Counter = Counter()
    clean_why: Counter = Counter()
    why: Counter = Counter()
    clean_s, clean_refused = run(clean, bugs, clean_why)
    fuzz_s, fuzz_refused = run(mutated, bugs, why)
    print(f"{len(labels)} seed files of {len({label.split(':')[0] for label in labels})} formats")
    print(
        f"clean:   {len(clean)} parses in {clean_s:.2f} s = {len(clean) / clean_s:,.0f} files/s "
        f"({clean_refused} refused: seeds that are not results on their own)"
    )
    print(
        f"mutated: {len(mutated)} cases ({megabytes:.0f} MB) in {fuzz_s:.2f} s = "
        f"{len(mutated) / fuzz_s:,.0f} cases/s ({fuzz_refused} refused, "
        f"{len(mutated) - fuzz_refused} still valid)"
    )
    print(f"ratio (mutated time / clean time per case): {fuzz_s / clean_s:.2f}")
    print(
        f"refused as contradicting themselves: {sum(why.values())} mutated, "
        f"{sum(clean_why.values())} clean; by field: "
        + ", ".join(f"{field} {count}" for field, count in why.most_common())
    )
    for where, count in bugs.most_common():
        print(f"UNEXPECTED {where}: {count} case(s)")
    print(f"unexpected errors: {sum(bugs.values())}")
    return 1 if bugs else 0


if __name__ == "__main__":
    sys.exit(main())
