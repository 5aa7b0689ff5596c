"""Issue 14: inputs that are not what they claim. Only regular files are read, never past the
limit; values are counted as parsed; every option and variable out of range is refused naming it;
scenario numbers are bounded; names with control characters are refused at the edge."""

from __future__ import annotations

import json
import os
import resource
import time

import pytest

from benchmarks.inputs.vllm_results import make_result
from fleetplan.cli import main
from fleetplan.core.errors import FileTooLargeError, InputError
from fleetplan.core.files import read_at_most
from fleetplan.services.planning import load_scenario
from fleetplan.warehouse.importers.base import FileInput, ImportOptions
from fleetplan.warehouse.importers.document import count_values
from fleetplan.warehouse.importers.registry import parse
from tests.support.files import write_json
from tests.support.processes import fleetplan

SCENARIO = "examples/chat-batch-qwen14b.json"


def cli(capfd, *args) -> tuple[int, str, str]:
    """`fleetplan ARGS` in this process: (exit code, stdout, stderr); usage errors included."""
    try:
        code = main([str(arg) for arg in args])
    except SystemExit as exit_:
        code = exit_.code
    out, err = capfd.readouterr()
    return code, out, err


def _two_gigabytes() -> None:
    # A regression must fail the test, not take the shared machine's memory.
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def bounded(*args, **kwargs):
    return fleetplan(*args, timeout=60, preexec_fn=_two_gigabytes, **kwargs)


# -- 3. only regular files are read, and never past the limit --------------------------------


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    return path


def test_ingest_refuses_a_device_and_a_fifo_without_reading_them(tmp_path, fifo):
    done = bounded("ingest", "--warehouse", tmp_path / "wh.duckdb", "/dev/zero", fifo)
    assert done.returncode == 1, done
    assert "/dev/zero: a device, not a file" in done.stdout
    assert f"{fifo}: a pipe (FIFO), not a file" in done.stdout
    assert "0 imported, 0 already present, 2 rejected" in done.stdout


def test_plan_refuses_a_device_and_a_fifo_as_the_scenario(sample_warehouse_path, fifo):
    for source, kind in (("/dev/zero", "a device"), (fifo, "a pipe (FIFO)")):
        done = bounded("plan", "--warehouse", sample_warehouse_path, "--scenario", source)
        assert done.returncode == 1, done
        assert f"{source}: {kind}, not a file" in done.stderr and "Traceback" not in done.stderr


def test_a_read_stops_at_the_limit(tmp_path):
    path = tmp_path / "big.json"
    path.write_bytes(b" " * 2000)
    assert read_at_most(path, limit=2000) == b" " * 2000
    with pytest.raises(FileTooLargeError, match="over the"):
        read_at_most(path, limit=1999)
    with pytest.raises(InputError, match="a folder, not a file"):
        read_at_most(tmp_path, limit=10)
    with pytest.raises(FileTooLargeError):
        load_scenario(path, max_bytes=1000)


# -- 4. values counted as they parse, not by separators --------------------------------------


@pytest.mark.parametrize(
    ("text", "at_least"),
    [
        (b"{}" * 1000, 1000),  # containers with nothing between them
        (b"[]" * 1000, 1000),
        (b'""' * 1000, 1000),  # strings
        (b"1 " * 1000, 1000),  # numbers separated by spaces only
        (b"1.5-1.5" * 500, 1000),  # numbers separated by their signs
        (b'{"a": 1, "b": [1, 2, {"c": null}]}', 10),
    ],
)
def test_count_values_bounds_what_is_parsed(text, at_least):
    assert count_values(text) >= at_least


def test_values_without_separators_are_refused_before_parsing():
    with pytest.raises(FileTooLargeError, match="over the limit of 100,000"):
        parse(FileInput.from_bytes("x.json", b"{}" * 200_000), ImportOptions(max_values=100_000))


def test_thirty_megabytes_of_empty_objects_are_refused_quickly(tmp_path):
    path = tmp_path / "objects.json"
    path.write_bytes(b"{}" * (15 << 20))
    started = time.monotonic()
    done = bounded("ingest", "--warehouse", tmp_path / "wh.duckdb", path)
    assert done.returncode == 1, done
    assert "over the limit of 5,000,000" in done.stdout
    assert time.monotonic() - started < 60


def test_real_results_still_count_under_the_limit():
    data = json.dumps(make_result(rate=2, seed=1), indent=2).encode()
    assert count_values(data) < 5_000_000
    parse(FileInput.from_bytes("r.json", data), ImportOptions(gpu="rtx-4090", gpu_count=1))


# -- 5. every option and variable out of range names itself ------------------------------------


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (("ingest", "--max-file-mb", "inf", "x.json"), "--max-file-mb"),
        (("ingest", "--max-file-mb", "nan", "x.json"), "--max-file-mb"),
        (("ingest", "--max-file-mb", "1e9", "x.json"), "--max-file-mb"),
        (("ingest", "--max-values", "1e6", "x.json"), "--max-values"),
        (("ingest", "--max-values", "0", "x.json"), "--max-values"),
        (("ingest", "--wait", "nan", "x.json"), "--wait"),
        (("ingest", "--wait", "inf", "x.json"), "--wait"),
        (("ingest", "--wait", "-1", "x.json"), "--wait"),
    ],
)
def test_bad_option_values_are_usage_errors_naming_the_option(capfd, args, option):
    code, _, err = cli(capfd, *args)
    assert code == 2 and option in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("FLEETPLAN_MAX_FILE_MB", "abc"),
        ("FLEETPLAN_MAX_FILE_MB", "inf"),
        ("FLEETPLAN_MAX_FILE_MB", "-1"),
        ("FLEETPLAN_MAX_VALUES", "1e6"),
        ("FLEETPLAN_MAX_VALUES", "many"),
    ],
)
def test_bad_limit_variables_are_refused_naming_the_variable(
    tmp_path, capfd, monkeypatch, variable, value
):
    monkeypatch.setenv(variable, value)
    run = write_json(tmp_path / "run.json", make_result(rate=2, seed=1))
    code, out, err = cli(capfd, "ingest", "--warehouse", tmp_path / "wh.duckdb", run)
    assert code == 3, (out, err)
    assert f"${variable} must be" in err and repr(value) in err
    assert "unexpected error" not in out + err
    assert not (tmp_path / "wh.duckdb").exists()  # refused before anything was opened


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (("benchmarks", "-o", "FOLDER"), "--output"),
        (("template", "-o", "FOLDER"), "--output"),
        (("template", "-o", "FOLDER/missing/t.csv"), "--output"),
        (("plan", "--scenario", SCENARIO, "--csv", "FOLDER"), "--csv"),
        (("plan", "--scenario", SCENARIO, "--json", "FOLDER"), "--json"),
    ],
)
def test_an_output_that_cannot_be_a_file_is_refused_before_the_work(tmp_path, capfd, args, option):
    args = [str(a).replace("FOLDER", str(tmp_path)) for a in args]
    code, _, err = cli(capfd, *args)
    assert code == 2 and option in err and "Traceback" not in err


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_a_csv_header_with_spaces_after_the_commas_reads_as_the_stripped_names(tmp_path, capfd):
    warehouse = tmp_path / "wh.duckdb"
    run = write_json(tmp_path / "run.json", make_result(rate=2, seed=1))
    cli(capfd, "ingest", "--warehouse", warehouse, "--gpu", "rtx-4090", "--gpu-count", "1", run)
    exported = tmp_path / "e.csv"
    cli(capfd, "benchmarks", "--warehouse", warehouse, "-o", exported)
    lines = exported.read_text().split("\n")
    at = next(i for i, line in enumerate(lines) if not line.startswith("#"))
    lines[at] = ", ".join(lines[at].split(","))
    spaced = tmp_path / "spaced.csv"
    spaced.write_text("\n".join(lines))
    code, out, _ = cli(capfd, "ingest", "--warehouse", tmp_path / "other.duckdb", spaced)
    assert code == 0 and "1 imported" in out, out
    lines[at] = lines[at].replace("dtype", "model")
    spaced.write_text("\n".join(lines))
    code, out, _ = cli(capfd, "ingest", "--warehouse", tmp_path / "third.duckdb", spaced)
    assert code == 1 and "column(s) model given twice" in out, out


# -- 6. scenario numbers bounded to what is physically meaningful ----------------------------


def example() -> dict:
    return json.loads(open(SCENARIO, encoding="utf-8").read())


@pytest.mark.parametrize(
    ("where", "value"),
    [
        ("classes.0.rate_rps", 1e308),
        ("classes.0.ttft_p99_ms", 1e308),
        ("classes.0.tpot_p99_ms", 1e12),
        ("classes.0.output_len", 10**12),
        ("gpus.0.hourly_usd", 1e308),
        ("gpus.0.max_gpus", 10**15),
        ("gpus.0.embodied_kgco2e", 1e12),
        ("gpus.0.rated_w", 1e9),
        ("sites.0.electricity_usd_per_kwh", 1e308),
        ("sites.0.grid_gco2_per_kwh", 1e9),
        ("budget_usd_per_hour", 1e308),
        ("carbon_cap_kg_per_hour", 1e308),
        ("objective.carbon_price_usd_per_t", 1e308),
    ],
)
def test_scenario_numbers_out_of_range_are_refused_naming_the_field(where, value):
    scenario = example()
    *path, last = where.split(".")
    target = scenario
    for key in path:
        if key == "objective":
            scenario["objective"] = {}
        target = target[int(key)] if key.isdigit() else target[key]
    target[last] = value
    with pytest.raises(InputError) as caught:
        load_scenario(json.dumps(scenario).encode(), name="s.json")
    assert caught.value.field == where


def test_a_purchase_of_1e308_over_1e_300_years_is_refused_naming_the_fields():
    scenario = example()
    del scenario["gpus"][0]["hourly_usd"]
    scenario["gpus"][0].update(purchase_usd=1e308, lifetime_years=5)
    with pytest.raises(InputError) as caught:
        load_scenario(json.dumps(scenario).encode(), name="s.json")
    assert caught.value.field == "gpus.0.purchase_usd"
    scenario["gpus"][0].update(purchase_usd=30_000, lifetime_years=1e-300)
    with pytest.raises(InputError) as caught:
        load_scenario(json.dumps(scenario).encode(), name="s.json")
    assert caught.value.field == "gpus.0.lifetime_years"


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
@pytest.mark.parametrize(
    "patch",
    [
        {"classes": [{"name": "all", "rate_rps": 1e6}]},  # the highest rate
        {"gpus": [{"gpu_model": "h100-pcie", "hourly_usd": 1000, "site": "dc"}]},
        {
            "gpus": [
                {
                    "gpu_model": "h100-pcie",
                    "purchase_usd": 1e6,
                    "lifetime_years": 0.1,
                    "site": "dc",
                }
            ],
            "classes": [{"name": "all", "rate_rps": 1e6}],
        },
    ],
)
def test_the_bounds_themselves_plan(sample_warehouse_path, tmp_path, capfd, patch):
    scenario = {**example(), **patch}
    path = write_json(tmp_path / "s.json", scenario)
    code, out, err = cli(capfd, "plan", "--warehouse", sample_warehouse_path, "--scenario", path)
    assert code == 0, (out, err)
    assert "status" not in err.lower()


# -- 7. names with control characters are refused; file names are escaped when printed -------

HIDDEN = ["\n", "\x1b[31m", "\x00", "\u202e", "\u200f", "\u2028"]


@pytest.mark.parametrize("hidden", HIDDEN, ids=repr)
@pytest.mark.parametrize("key", ["model_id", "gpu"])
def test_names_with_control_characters_in_a_file_are_refused(hidden, key):
    result = make_result(rate=2, seed=1)
    options = {"gpu_count": 1}
    if key == "gpu":
        result["gpu_name"] = f"Acme{hidden}GPU"
    else:
        result["model_id"] = f"meta/Llama{hidden}8B"
    with pytest.raises(InputError, match="control or formatting character"):
        parse(FileInput.from_bytes("r.json", json.dumps(result).encode()), ImportOptions(**options))


@pytest.mark.parametrize("hidden", HIDDEN, ids=repr)
def test_scenario_names_with_control_characters_are_refused(hidden):
    scenario = example()
    scenario["classes"][0]["name"] = f"real{hidden}time"
    with pytest.raises(InputError, match="control or formatting character") as caught:
        load_scenario(json.dumps(scenario).encode(), name="s.json")
    assert caught.value.field == "classes.0.name"
    assert hidden not in str(caught.value)  # the message shows it escaped


def test_a_file_name_with_a_newline_cannot_forge_a_line_of_ingest_output(tmp_path, capfd):
    forged = tmp_path / "x.json\nimported  evil.json: 1 run(s), 1 point(s) via vllm\x1b[2K"
    forged.write_text("{}")
    code, out, _ = cli(capfd, "ingest", "--warehouse", tmp_path / "wh.duckdb", forged)
    assert code == 1
    lines = out.splitlines()
    assert not any(line.startswith("imported") for line in lines), out
    assert "\x1b" not in out and "x.json\\nimported  evil.json" in out
