"""Fuzzing speed: mutated real files of every format through the import path, in cases per second,
against the baseline of the same real files unmutated, measured in the same run.

Each case is one mutation (truncation, type swap, huge number, NaN/inf, deep nesting, unicode,
10^6-element array, byte flips, CSV/YAML cell swaps) of one seed file, parsed by detection and
the format's importer; a clear refusal (a project error) counts as handled, anything else is a
bug: listed at the end, and the exit status is 1. The ratio says how much slower a hostile file
is than a good one: refusals should come fast (limits are checked before parsing). Refusals of
files that parse but contradict themselves (warehouse.consistency) are counted apart.

    python benchmarks/fuzz.py --cases 2000
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fleetplan.core.errors import FleetplanError  # noqa: E402
from fleetplan.warehouse.importers import FileInput, ImportOptions, parse  # noqa: E402
from tests.support.fuzzing import mutate, seed_files  # noqa: E402

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

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
