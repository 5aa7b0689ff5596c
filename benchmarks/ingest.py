"""Ingest speed: `fleetplan ingest` against DuckDB's own `read_json` over the same files.

Writes N synthetic vLLM result files with per-request arrays (`--save-detailed`), then, in one run,
times (a) `fleetplan ingest` into a fresh warehouse (parse, validate, recompute statistics from the
per-request arrays, store one transaction per file) and (b) a DuckDB `read_json` of the same files
into a table, each as a fresh process, and prints the ratio. Aim: within 2x of `read_json`.

    python benchmarks/ingest.py --files 1000 --requests 1000
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.vllm_results import make_result  # noqa: E402


def write_files(folder: Path, files: int, requests: int, max_output: int) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    total = 0
    for i in range(files):
        result = make_result(
            requests=requests, rate=float(1 + i % 32), seed=i, max_output=max_output,
            failures=i % 3, model=f"bench/model-{i % 7}",
        )  # fmt: skip
        path = folder / f"result-{i:05d}.json"
        path.write_text(json.dumps(result))
        total += path.stat().st_size
    return total


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"command failed ({done.returncode}): {' '.join(command)}\n{done.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument(
        "--max-output",
        type=int,
        default=255,
        help="output tokens per request: uniform in 2..N (default 255: mean ~128, as vLLM's "
        "default random output length)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="time each side this many times")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="fleetplan-bench-"))
    try:
        data = work / "results"
        size = write_files(data, args.files, args.requests, args.max_output)
        print(f"{args.files} files x {args.requests} requests, {size / 1e6:.0f} MB in {data}")
        ours, theirs = [], []
        for round_ in range(args.repeat):
            warehouse = work / f"fleetplan-{round_}.duckdb"
            ours.append(timed([sys.executable, "-m", "fleetplan.cli", "ingest", "--warehouse",
                               str(warehouse), str(data)]))  # fmt: skip
            baseline = work / f"read_json-{round_}.duckdb"
            code = (
                "import duckdb, sys; con = duckdb.connect(sys.argv[1]); "
                "con.execute(\"CREATE TABLE raw AS SELECT * FROM read_json(?, format='auto', "
                'maximum_object_size=268435456)", [sys.argv[2]]); '
                "assert con.execute('SELECT count(*) FROM raw').fetchone()[0] == int(sys.argv[3])"
            )
            theirs.append(timed([sys.executable, "-c", code, str(baseline),
                                 str(data / "*.json"), str(args.files)]))  # fmt: skip
        best_ours, best_theirs = min(ours), min(theirs)
        print(f"fleetplan ingest:     {best_ours:8.2f} s  ({args.files / best_ours:7.1f} files/s)")
        print(
            f"duckdb read_json:     {best_theirs:8.2f} s  ({args.files / best_theirs:7.1f} files/s)"
        )
        print(f"ratio (ingest / read_json): {best_ours / best_theirs:.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
