"""Ingest speed: `fleetplan ingest` against DuckDB's own `read_json` over the same files.

Writes N synthetic vLLM result files with per-request arrays (`--save-detailed`), then, in one run,
times (a) `fleetplan ingest` into a fresh warehouse (parse, validate, recompute statistics from the
per-request arrays, store one transaction per file) and (b) a DuckDB `read_json` of the same files
into a table, each as a fresh process, and prints the ratio. Aim: within 2x of `read_json`.

With `--table-rows N`, one large file instead: a CSV table of N rows in the layout of `fleetplan
template` (N load levels), `fleetplan ingest` (parse, validate, store in one transaction) against
DuckDB's `read_csv` of the same file.

With `--keys-twice`, the cost of refusing a key given twice (issue 21): `fleetplan ingest` of the
same files against `fleetplan ingest` with that check switched off in its process (the baseline:
ingest as it was), alternating, best of `--repeat`.

    python benchmarks/ingest.py --files 1000 --requests 1000
    python benchmarks/ingest.py --table-rows 40000 --repeat 3
    python benchmarks/ingest.py --keys-twice --files 100 --requests 1000 --repeat 3
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

from benchmarks.inputs.vllm_results import make_result  # noqa: E402


def write_files(folder: Path, files: int, requests: int, max_output: int) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    total = 0
    for i in range(files):
        result = make_result(
            requests=requests,
            rate=float(1 + i % 32),
            seed=i,
            max_output=max_output,
            failures=i % 3,
            model=f"bench/model-{i % 7}",
        )
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


def ingest_command(warehouse: Path, data: Path) -> list[str]:
    """`fleetplan ingest` into a fresh warehouse, as a process of its own."""
    return [sys.executable, "-m", "fleetplan", "ingest", "--warehouse", str(warehouse), str(data)]


# DuckDB's own readers of the same files into a table: the baseline.
_DUCKDB_LOADS = {
    "read_json": "CREATE TABLE raw AS SELECT * FROM read_json(?, format='auto', "
    "maximum_object_size=268435456)",
    "read_csv": "CREATE TABLE raw AS SELECT * FROM read_csv(?, header=true)",
}
_DUCKDB_CODE = (
    "import duckdb, sys; con = duckdb.connect(sys.argv[1]); "
    "con.execute(sys.argv[4], [sys.argv[2]]); "
    "assert con.execute('SELECT count(*) FROM raw').fetchone()[0] == int(sys.argv[3])"
)


def duckdb_command(reader: str, database: Path, data: str, rows: int) -> list[str]:
    """DuckDB's `read_json` or `read_csv` of the same data into a table, as a process."""
    load = _DUCKDB_LOADS[reader]
    return [sys.executable, "-c", _DUCKDB_CODE, str(database), data, str(rows), load]


# `fleetplan ingest` with the check for a key given twice switched off: ingest before issue 21.
_UNCHECKED = (
    "import sys; from fleetplan.warehouse.importers import document; "
    "document.refuse_repeated_keys = lambda *a, **k: None; "
    "from fleetplan.cli import main; sys.argv[0] = 'fleetplan'; sys.exit(main())"
)


def keys_twice(files: int, requests: int, max_output: int, repeat: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="fleetplan-bench-"))
    try:
        data = work / "results"
        size = write_files(data, files, requests, max_output)
        print(f"{files} files x {requests} requests, {size / 1e6:.0f} MB in {data}")
        checked, unchecked = [], []
        for round_ in range(repeat):  # which goes first alternates: a loaded machine favours one
            unchecked_db = work / f"unchecked-{round_}.duckdb"
            command = ingest_command(unchecked_db, data)
            pair = [
                (unchecked, [sys.executable, "-c", _UNCHECKED, *command[3:]]),
                (checked, ingest_command(work / f"checked-{round_}.duckdb", data)),
            ]
            for times, command in pair if round_ % 2 == 0 else pair[::-1]:
                times.append(timed(command))
        best, base = min(checked), min(unchecked)
        print(f"ingest, keys twice refused: {best:8.2f} s  ({size / 1e6 / best:6.1f} MB/s)")
        print(f"ingest, not checked:        {base:8.2f} s  ({size / 1e6 / base:6.1f} MB/s)")
        print(f"ratio (checked / not checked): {best / base:.3f}x")
        check = check_alone(data)
        whole = base / files * 1000
        print(f"the check against a whole ingest, per file: {check:.2f} of {whole:.1f} ms", end="")
        print(f" ({(whole + check) / whole:.3f}x)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def check_alone(data: Path) -> float:
    """The check alone, in this process (less exposed to a loaded machine than whole runs): per
    file, the best of five of `refuse_repeated_keys` against orjson's parse of the same bytes."""
    import statistics

    import orjson

    from fleetplan.warehouse.importers.jsonstream import refuse_repeated_keys

    def best(call) -> float:
        times = []
        for _ in range(5):
            started = time.perf_counter()
            call()
            times.append(time.perf_counter() - started)
        return min(times)

    checks, parses = [], []
    for path in sorted(data.glob("*.json")):
        raw = path.read_bytes()
        values = [orjson.loads(raw)]
        parses.append(best(lambda raw=raw: orjson.loads(raw)))
        checks.append(
            best(lambda raw=raw, values=values: refuse_repeated_keys(values, raw, file=""))
        )
    check, parse = statistics.median(checks) * 1000, statistics.median(parses) * 1000
    print(f"per file (median): the check {check:.2f} ms, orjson.loads {parse:.2f} ms", end="")
    print(f" ({check / parse:.2f}x the parse)")
    return check


def table(rows: int, repeat: int) -> None:
    from benchmarks.inputs.tables import typed_in_table

    work = Path(tempfile.mkdtemp(prefix="fleetplan-bench-"))
    try:
        path = work / "table.csv"
        path.write_text(typed_in_table(rows))
        print(f"one CSV table of {rows:,} rows, {path.stat().st_size / 1e6:.1f} MB")
        ours, theirs = [], []
        for round_ in range(repeat):
            ours.append(timed(ingest_command(work / f"fleetplan-{round_}.duckdb", path)))
            baseline = work / f"read_csv-{round_}.duckdb"
            theirs.append(timed(duckdb_command("read_csv", baseline, str(path), rows)))
        best_ours, best_theirs = min(ours), min(theirs)
        print(f"fleetplan ingest:  {best_ours:8.2f} s  ({rows / best_ours:9,.0f} rows/s)")
        print(f"duckdb read_csv:   {best_theirs:8.2f} s  ({rows / best_theirs:9,.0f} rows/s)")
        print(f"ratio (ingest / read_csv): {best_ours / best_theirs:.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def result_files(files: int, requests: int, max_output: int, repeat: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="fleetplan-bench-"))
    try:
        data = work / "results"
        size = write_files(data, files, requests, max_output)
        print(f"{files} files x {requests} requests, {size / 1e6:.0f} MB in {data}")
        ours, theirs = [], []
        for round_ in range(repeat):
            ours.append(timed(ingest_command(work / f"fleetplan-{round_}.duckdb", data)))
            baseline = work / f"read_json-{round_}.duckdb"
            theirs.append(timed(duckdb_command("read_json", baseline, str(data / "*.json"), files)))
        best_ours, best_theirs = min(ours), min(theirs)
        print(f"fleetplan ingest:     {best_ours:8.2f} s  ({files / best_ours:7.1f} files/s)")
        print(f"duckdb read_json:     {best_theirs:8.2f} s  ({files / best_theirs:7.1f} files/s)")
        print(f"ratio (ingest / read_json): {best_ours / best_theirs:.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)


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
    parser.add_argument("--table-rows", type=int, help="one CSV table of this many rows instead")
    parser.add_argument(
        "--keys-twice", action="store_true", help="the cost of refusing a key given twice"
    )
    args = parser.parse_args()
    if args.keys_twice:
        keys_twice(args.files, args.requests, args.max_output, args.repeat)
    elif args.table_rows:
        table(args.table_rows, args.repeat)
    else:
        result_files(args.files, args.requests, args.max_output, args.repeat)


if __name__ == "__main__":
    main()
