"""Fuzzing the surfaces fleetplan reads and writes beyond result files (`benchmarks/fuzz.py
--surface ...`, issue 35): scenarios of both versions, request traces, and the files a plan is
exported to. Each mode times mutated cases against the same seeds unmutated, in the same run.

- `scenarios`: the bundled examples (peak, day, availability, two models and owned GPUs), each
  case one mutation (`benchmarks.inputs.fuzzing.mutate`), loaded as `fleetplan plan` loads a
  file; a case that still validates is planned on the bundled warehouse's tables (its time
  limit capped at 2 s). Handled: a project error, or a plan whose figures hold together (a day's
  cost is the sum of its hours' and of its units'; no figure NaN, infinite or negative).
- `traces`: request logs in both formats `fleetplan workload` reads (an Azure-style log and a
  generic one with a class column, written here), each case one mutated cell, row order, header
  or byte range; read and summarised with every `--class-by`. Handled: a project error, or
  classes whose rates, lengths and burstiness are finite and not negative.
- `exports`: the examples with hostile names (YAML syntax, formulas, line separators, booleans,
  very long) for the scenario, classes, sites and offers; planned, and every export written:
  pools/fleet/sources CSV, workbook, JSON, the LiteLLM router, Kubernetes and SkyPilot files.
  Handled: a refusal naming the field, or files that mean what they say: each YAML loads with
  `yaml.safe_load` to the names given, each Kubernetes name is a DNS label, no CSV cell or
  workbook cell starts a formula.
"""

from __future__ import annotations

import csv
import io
import json
import math
import random
import re
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.inputs.fuzzing import mutate
from benchmarks.inputs.shared_data import ROOT

SURFACES = ("scenarios", "traces", "exports")
EXAMPLES = ROOT / "examples"
PLAN_SECONDS = 2.0  # a fuzzed plan's time limit (a case, not a benchmark of the solver)
FORMULA = ("=", "+", "-", "@", "\t", "\r")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")

HOSTILE_NAMES = [
    "a: b",
    "# comment",
    "&anchor x",
    "*alias",
    "!!python/object/apply:os.system ['id']",
    "'quoted'",
    '"double"',
    "---",
    "...",
    "- item",
    "{x: 1}",
    "[1, 2]",
    "| block",
    "> folded",
    "line\u2028sep",
    "next\u0085line",
    "\ufeffbom",
    "yes",
    "no",
    "null",
    "~",
    "on",
    "0x10",
    "1e3",
    "=1+1",
    "+1",
    "-1",
    "@SUM(1)",
    "\t=1",
    "\r=1",
    '=HYPERLINK("http://x")',
    "x" * 10_000,
    "Ünïcødé ☃",
    "a" * 63 + "-",
]


def _tables():
    """The bundled warehouse's benchmark points and catalog, built in a temporary folder."""
    from fleetplan.warehouse.db import Warehouse
    from fleetplan.warehouse.queries import benchmark_points, gpu_catalog, gpu_prices, models
    from fleetplan.warehouse.queries import regions as region_table
    from fleetplan.warehouse.sample_data import build

    with (
        tempfile.TemporaryDirectory() as folder,
        Warehouse.open(Path(folder) / "sample.duckdb") as wh,
    ):
        list(build(wh))
        return {
            "points": benchmark_points(wh),
            "catalog": gpu_catalog(wh),
            "prices": gpu_prices(wh),
            "regions": region_table(wh),
            "models": models(wh),
        }


def _bug(bugs: Counter, error: BaseException, what: str = "") -> None:
    where = traceback.extract_tb(error.__traceback__)[-1]
    bugs[f"{what}{type(error).__name__} at {Path(where.filename).name}:{where.lineno}"] += 1


def _finite(value: Any) -> bool:
    return value is None or (math.isfinite(value) and value >= 0)


# --- scenarios ---------------------------------------------------------------------------


def _plan_holds_together(result) -> str | None:
    """What is wrong with a plan's figures, or None."""
    day = result.day
    if day is not None and day.cost_usd is not None:
        hours = sum(h.cost_usd for h in day.schedule)
        units = sum(u.cost_usd for u in day.fleet)
        scale = max(1.0, abs(day.cost_usd))
        if abs(hours - day.cost_usd) > 1e-6 * scale:
            return "a day's cost is not the sum of its hours"
        if day.fleet and abs(units - day.cost_usd) > 1e-6 * scale:
            return "a day's cost is not the sum of its units"
        if not all(_finite(v) for v in (day.cost_usd, day.kgco2e, day.gpu_hours)):
            return "a day's figure is NaN, infinite or negative"
    totals = result.recommended.totals
    if totals is not None:
        figures = (totals.hourly_cost_usd, totals.monthly_cost_usd, totals.carbon_kgco2e_month)
        if not all(_finite(v) for v in figures):
            return "a fleet's figure is NaN, infinite or negative"
    return None


def scenario_cases(cases: int, rng: random.Random) -> tuple[list, list]:
    seeds = [(p.name, p.read_bytes()) for p in sorted(EXAMPLES.glob("*.json"))]
    picks = [seeds[i % len(seeds)] for i in range(cases)]
    rng.shuffle(picks)
    return picks, [(name, mutate(data, rng)) for name, data in picks]


def _tally(items, attempt: Callable, bugs: Counter) -> tuple[float, int, int]:
    """Seconds for `attempt` on every case, how many it refused (a project error) and how many
    went through; anything else raised is a bug, counted where it happened."""
    from fleetplan.core.errors import FleetplanError

    refused = through = 0
    start = time.perf_counter()
    for item in items:
        try:
            attempt(item)
        except FleetplanError:
            refused += 1
            continue
        except Exception as error:  # a bug
            _bug(bugs, error)
            continue
        through += 1
    return time.perf_counter() - start, refused, through


def run_scenarios(items, tables, bugs: Counter, wrong: Counter) -> tuple[float, int, int]:
    """Seconds for the cases, how many were refused, how many were planned."""
    from fleetplan.services.planning import load_scenario, plan_from_tables

    def attempt(item) -> None:
        name, data = item
        scenario = load_scenario(data, name=name)
        limit = min(scenario.time_limit_s, PLAN_SECONDS)
        scenario = scenario.model_copy(update={"time_limit_s": limit})
        result = plan_from_tables(scenario, tables["points"], tables["catalog"])
        problem = _plan_holds_together(result)
        if problem:
            wrong[problem] += 1

    return _tally(items, attempt, bugs)


# --- traces --------------------------------------------------------------------------------


def _trace_seeds(rng: random.Random) -> list[tuple[str, bytes]]:
    """A day of requests in each format (Poisson arrivals, lognormal lengths), written here."""
    azure, generic = io.StringIO(), io.StringIO()
    azure.write("TIMESTAMP,ContextTokens,GeneratedTokens\n")
    generic.write("timestamp,input_tokens,output_tokens,class\n")
    t = 0.0
    while t < 86_400:
        t += rng.expovariate(0.02 + 0.02 * math.sin(t / 86_400 * math.tau) ** 2)
        prompt, output = int(rng.lognormvariate(6, 1)) + 1, int(rng.lognormvariate(5, 1)) + 1
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(1_700_000_000 + t))
        azure.write(f"{stamp}.{int(t % 1 * 1e6):06d},{prompt},{output}\n")
        generic.write(f"{1_700_000_000 + t:.3f},{prompt},{output},{rng.choice('ab')}\n")
    return [("azure.csv", azure.getvalue().encode()), ("generic.csv", generic.getvalue().encode())]


TRACE_CELLS = [
    "",
    "nan",
    "inf",
    "-5",
    "1e308",
    "9" * 400,
    "x",
    '"',
    "=cmd|' /C calc'!A0",
    "2024-13-45 99:99:99",
    "2023-11-14T22:13:20+05:00",
    "0",
    "\u202e",
]


def mutate_trace(data: bytes, rng: random.Random) -> bytes:
    """One hostile change to a CSV log: a cell, the row order, a duplicated header or row, a
    BOM, CRLF line ends, NUL bytes, a cut, or anything `mutate` does to bytes."""
    lines = data.decode().split("\n")
    kind = rng.choice(["cell", "cell", "shuffle", "dup", "header", "bom", "crlf", "nul", "bytes"])
    if kind == "cell":
        row = rng.randrange(len(lines) - 1)
        cells = lines[row].split(",")
        cells[rng.randrange(len(cells))] = rng.choice(TRACE_CELLS)
        lines[row] = ",".join(cells)
    elif kind == "shuffle":
        body = lines[1:-1]
        rng.shuffle(body)
        lines = [lines[0], *body, ""]
    elif kind == "dup":
        row = rng.randrange(1, len(lines) - 1)
        lines[row:row] = [lines[row]] * rng.choice([1, 100])
    elif kind == "header":
        head = lines[0].split(",")
        head[rng.randrange(len(head))] = head[0]  # a duplicate column name
        lines[0] = ",".join(head)
    elif kind == "bom":
        return b"\xef\xbb\xbf" + data
    elif kind == "crlf":
        return data.replace(b"\n", b"\r\n")
    elif kind == "nul":
        at = rng.randrange(len(data))
        return data[:at] + b"\x00" * rng.randint(1, 10) + data[at:]
    else:
        return mutate(data, rng)
    return "\n".join(lines).encode()


def run_traces(items, bugs: Counter, wrong: Counter) -> tuple[float, int, int]:
    from fleetplan.core.errors import FleetplanError
    from fleetplan.planner.scenario.workload import CLASS_BY, read_trace, workload

    refused = read = 0
    start = time.perf_counter()
    for name, data in items:
        head = data.split(b"\n", 1)[0]
        for class_by in CLASS_BY if b"class" in head else CLASS_BY[:-1]:
            try:
                frame = read_trace(data.decode("utf-8", errors="replace"), name=name)
                result = workload(frame, class_by, source=name)
            except FleetplanError:
                refused += 1
                continue
            except Exception as error:  # a bug
                _bug(bugs, error, f"--class-by {class_by}: ")
                continue
            read += 1
            for entry in result["workload"]["classes"]:
                figures = [entry.get("burstiness"), entry.get("requests")]
                figures += list(entry.get("hourly_rps") or [entry.get("rate_rps")])
                if not all(_finite(v) for v in figures if v is not None):
                    wrong["a class's figure is NaN, infinite or negative"] += 1
    return time.perf_counter() - start, refused, read


# --- exports ------------------------------------------------------------------------------


def _named(raw: dict, rng: random.Random) -> tuple[dict, list[str]]:
    """The scenario with hostile names for the scenario, a class, a site and an offer."""
    raw = json.loads(json.dumps(raw))
    given = []

    def pick() -> str:
        name = rng.choice(HOSTILE_NAMES)
        given.append(name)
        return name

    raw["name"] = pick()
    traffic = rng.choice(raw["classes"])
    traffic["name"] = pick()
    site = rng.choice(raw["sites"])
    old, site["name"] = site["name"], pick()
    for offer in raw["gpus"]:
        if offer.get("site") == old:
            offer["site"] = site["name"]
    for hour in raw.get("site_hours", []) or []:
        if hour.get("site") == old:
            hour["site"] = site["name"]
    rng.choice(raw["gpus"])["name"] = pick()
    return raw, given


def _check_yaml(text: str, what: str, wrong: Counter, names: set[str]) -> None:
    import yaml

    body = "\n".join(line for line in text.split("\n") if not line.startswith("#"))
    try:
        documents = [d for d in yaml.safe_load_all(body) if d is not None]
    except yaml.YAMLError:
        wrong[f"{what} does not load as YAML"] += 1
        return
    if what == "router":
        model_names = {d["model_name"] for d in documents[0]["model_list"]}
        if not model_names <= names:
            wrong["router names a class the scenario has not"] += 1
    if what == "kubernetes":
        for document in documents:
            name = document.get("metadata", {}).get("name", "")
            if not DNS_LABEL.match(name):
                wrong["a Kubernetes name is not a DNS label"] += 1
            for container in (
                document.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])
            ):
                for env in container.get("env", []):
                    if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", env["name"]):
                        wrong["an environment variable's name is not valid"] += 1


def _check_csv(text: str, what: str, wrong: Counter) -> None:
    for row in csv.reader(io.StringIO(text)):
        if any(cell.startswith(FORMULA) and not _number(cell) for cell in row):
            wrong[f"a {what} CSV cell starts a formula"] += 1
            return


def _number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _check_xlsx(data: bytes, wrong: Counter) -> None:
    import openpyxl

    book = openpyxl.load_workbook(io.BytesIO(data))
    for sheet in book.worksheets:
        for row in sheet.iter_rows():
            for cell in row:
                if cell.data_type == "f":
                    wrong["a workbook cell is a formula"] += 1
                    return


def write_exports(raw: dict, tables, wrong: Counter) -> None:
    """Every file a plan is exported to, checked; a refusal is a project error, raised."""
    from fleetplan.planner import Scenario
    from fleetplan.services import exports, workbook
    from fleetplan.services.deploy import kubernetes_yaml, skypilot_yaml
    from fleetplan.services.planning import class_models, load_scenario, plan_from_tables
    from fleetplan.services.router_config import litellm_config

    scenario: Scenario = load_scenario(json.dumps(raw).encode(), name="fuzz.json")
    scenario = scenario.model_copy(update={"time_limit_s": PLAN_SECONDS})
    result = plan_from_tables(scenario, tables["points"], tables["catalog"])
    inputs = exports.plan_inputs(
        scenario, catalog=tables["catalog"], prices=tables["prices"], regions=tables["regions"]
    )
    models = class_models(scenario, list(tables["models"]))
    _check_csv(exports.plan_csv(result), "pools", wrong)
    _check_csv(exports.sources_csv(result, inputs), "sources", wrong)
    json.loads(exports.plan_json(result, inputs))
    _check_xlsx(workbook.plan_xlsx(result, inputs), wrong)
    planned = result.day.cost_usd is not None if result.day else result.recommended.totals
    if not planned:
        return
    _check_csv(exports.fleet_csv(result), "fleet", wrong)
    names = {c.name for c in scenario.classes}
    _check_yaml(litellm_config(result, models), "router", wrong, names)
    _check_yaml(kubernetes_yaml(result, models), "kubernetes", wrong, names)
    for text in skypilot_yaml(result, models).values():
        _check_yaml(text, "skypilot", wrong, names)


def export_cases(cases: int, rng: random.Random) -> tuple[list, list]:
    seeds = [json.loads(p.read_text()) for p in sorted(EXAMPLES.glob("*.json"))]
    picks = [seeds[i % len(seeds)] for i in range(cases)]
    rng.shuffle(picks)
    return [(raw, []) for raw in picks], [_named(raw, rng) for raw in picks]


def run_exports(items, tables, bugs: Counter, wrong: Counter) -> tuple[float, int, int]:
    return _tally(items, lambda item: write_exports(item[0], tables, wrong), bugs)


def surface_main(surface: str, cases: int, seed: int) -> int:
    rng = random.Random(seed)
    bugs: Counter = Counter()
    wrong: Counter = Counter()
    runner: Callable
    if surface == "traces":
        seeds = _trace_seeds(random.Random(seed))
        picks = [seeds[i % len(seeds)] for i in range(cases)]
        clean, mutated = picks, [(name, mutate_trace(data, rng)) for name, data in picks]

        def runner(items):
            return run_traces(items, bugs, wrong)

        done = "read"
    else:
        tables = _tables()
        make = scenario_cases if surface == "scenarios" else export_cases
        clean, mutated = make(cases, rng)
        run = run_scenarios if surface == "scenarios" else run_exports

        def runner(items):
            return run(items, tables, bugs, wrong)

        done = "planned" if surface == "scenarios" else "written and checked"
    clean_s, clean_refused, _ = runner(clean)
    clean_wrong = sum(wrong.values())
    fuzz_s, refused, kept = runner(mutated)
    print(f"surface: {surface}")
    print(f"clean:   {len(clean)} cases in {clean_s:.2f} s ({clean_refused} refused)")
    print(f"mutated: {len(mutated)} cases in {fuzz_s:.2f} s ({refused} refused, {kept} {done})")
    print(f"ratio (mutated time / clean time per case): {fuzz_s / clean_s:.2f}")
    for what, count in wrong.most_common():
        print(f"WRONG {what}: {count} case(s)")
    for where, count in bugs.most_common():
        print(f"UNEXPECTED {where}: {count} case(s)")
    print(f"unexpected errors: {sum(bugs.values())}; wrong results: {sum(wrong.values())}")
    return 1 if bugs or wrong or clean_refused or clean_wrong else 0
