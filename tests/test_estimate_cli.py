"""`fleetplan capacity --estimate` (fleetplan/services/capacity_estimate.py): a configuration
nobody measured answers from the serving model calibrated on the sample warehouse, labelled,
with its curve and the validation's band; a model of identical architecture answers with its
measurement; a measured configuration answers as it does without the flag."""

from __future__ import annotations

import json

import pytest

from fleetplan.core.paths import sample_data_dir

CONFIG = sample_data_dir() / "models" / "llama-3.1-8b-config.json"
LLAMA = ("--model", "meta-llama/Llama-3.1-8B", "--model-config", CONFIG)
TARGETS = ("--ttft-p99", "500", "--tpot-p99", "50")


def capacity(cli, warehouse, *args):
    return cli("capacity", "--warehouse", warehouse, *args, "--format", "json")


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
@pytest.mark.parametrize("gpu", ["h100-sxm", "l40s", "a100-80gb"])
def test_an_unmeasured_gpu_is_estimated_with_its_curve_calibration_and_band(
    cli, sample_warehouse_path, gpu
):
    done = capacity(
        cli, sample_warehouse_path, *LLAMA, "--gpu", gpu, "--gpu-count", "1", *TARGETS,
        "--estimate",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["basis"] == "estimated" and report["gpu_model"] == gpu
    estimate = report["estimate"]
    curve = estimate["curve"]
    rates = [p["rate_rps"] for p in curve]
    assert len(curve) >= 10 and rates == sorted(rates)
    assert rates[0] < 0.1 * report["saturation_rps"] <= rates[-1]
    assert all(set(p) == {"rate_rps", "ttft_p99_ms", "tpot_p99_ms"} for p in curve)
    assert all(p["ttft_p99_ms"] > 0 and p["tpot_p99_ms"] > 0 for p in curve)
    assert any("h100-pcie" in c for c in estimate["calibrated_on"]) or any(
        "rtx-4090" in c for c in estimate["calibrated_on"]
    )
    error = estimate["error"]
    bands = json.loads((sample_data_dir() / "models" / "estimate_errors.json").read_text())
    assert error["kind"] in bands["bands"] or error["kind"] == "same architecture"
    for metric in ("saturation", "ttft_p99", "tpot_p99"):
        low, high = error[metric]
        assert [low, high] == bands["bands"][error["kind"]][metric]  # read from the validation
    assert report["bounds"]["kv_tokens"] > 0 and estimate["method"]
    assert 0 < report["rps_low"] <= report["capacity_rps"] <= report["rps_high"]
    assert report["predicted_tpot_p99_ms"] <= 50 + 1e-6
    assert report["predicted_ttft_p99_ms"] <= 500 + 1e-6


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_a_gpu_of_another_architecture_says_whose_efficiencies_it_borrows(
    cli, sample_warehouse_path
):
    done = capacity(
        cli, sample_warehouse_path, *LLAMA, "--gpu", "a100-80gb", "--gpu-count", "1", "--estimate"
    )
    report = json.loads(done.stdout)
    assert "borrowed from h100-pcie" in report["estimate"]["gpu_basis"]
    assert "ampere" in report["estimate"]["gpu_basis"]
    # moved to the A100 as the validation moved it: the floor by memory bandwidth, with figures
    assert (
        "moved from h100-pcie to a100-80gb: step floor scaled by memory bandwidth (2000 / 2039"
        in (report["estimate"]["gpu_basis"])
    )
    sxm = json.loads(
        capacity(
            cli,
            sample_warehouse_path,
            *LLAMA,
            "--gpu",
            "h100-sxm",
            "--gpu-count",
            "1",
            "--estimate",
        ).stdout
    )
    assert "nearest measured hopper GPU" in sxm["estimate"]["gpu_basis"]
    # a faster GPU of the same family carries more at the same targets
    assert sxm["saturation_rps"] > 1.3 * report["saturation_rps"] / 1.64


def test_the_instruct_model_of_most_public_sweeps_is_in_the_architectures_table(
    cli, sample_warehouse_path
):
    """Llama-3.1-8B-Instruct (the model of the inference-perf KubeCon demos, no bundled run)
    needs no config.json: its shape is in the table, and it is R1-Distill-Llama-8B's."""
    done = capacity(
        cli, sample_warehouse_path, "--model", "meta-llama/Llama-3.1-8B-Instruct",
        "--gpu", "rtx-4090", "--gpu-count", "1", *TARGETS, "--estimate",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["basis"] == "identical architecture"
    assert report["identical_to"] == "deepseek-ai/DeepSeek-R1-Distill-Llama-8B"


def test_an_identical_architecture_answers_with_its_measurement(cli, sample_warehouse_path):
    done = capacity(
        cli, sample_warehouse_path, *LLAMA, "--gpu", "rtx-4090", "--gpu-count", "1", *TARGETS,
        "--estimate",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["basis"] == "identical architecture"
    assert report["identical_to"] == "deepseek-ai/DeepSeek-R1-Distill-Llama-8B"
    assert "measured on an identical architecture" in report["reason"]
    assert report["model"] == "meta-llama/Llama-3.1-8B" and report["estimate"] is None
    stand_in = capacity(
        cli, sample_warehouse_path, "--model", "deepseek-ai/DeepSeek-R1-Distill-Llama-8B",
        "--gpu", "rtx-4090", "--gpu-count", "1", *TARGETS,
    )  # fmt: skip
    measured = json.loads(stand_in.stdout)
    assert report["capacity_rps"] == measured["capacity_rps"]
    assert report["levels"] == measured["levels"]


def test_a_measured_configuration_answers_as_without_the_flag(cli, sample_warehouse_path):
    args = ("--model", "DeepSeek-R1-Distill-Qwen-14B", "--gpu", "h100-pcie", "--gpu-count", "1")
    plain = capacity(cli, sample_warehouse_path, *args, "--ttft-p99", "46")
    flagged = capacity(cli, sample_warehouse_path, *args, "--ttft-p99", "46", "--estimate")
    assert plain.returncode == flagged.returncode == 0
    assert json.loads(plain.stdout) == json.loads(flagged.stdout)
    assert json.loads(plain.stdout)["estimate"] is None


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_without_the_flag_an_unmeasured_configuration_is_refused_pointing_to_it(
    cli, sample_warehouse_path
):
    done = capacity(cli, sample_warehouse_path, *LLAMA, "--gpu", "h100-sxm", "--gpu-count", "1")
    assert done.returncode == 1 and "--estimate" in done.stderr
    # a 1.5B model measured on one 4090 but not on two: refused, then estimated
    qwen = ("--model", "DeepSeek-R1-Distill-Qwen-1.5B", "--gpu", "rtx-4090", "--gpu-count", "2")
    assert capacity(cli, sample_warehouse_path, *qwen).returncode == 1
    estimated = capacity(cli, sample_warehouse_path, *qwen, "--estimate")
    assert estimated.returncode == 0, estimated.stderr
    report = json.loads(estimated.stdout)
    assert report["basis"] == "estimated"
    assert "fitted on rtx-4090's own runs" in report["estimate"]["gpu_basis"]


def test_a_model_without_a_shape_or_a_gpu_without_figures_is_refused(cli, sample_warehouse_path):
    done = capacity(
        cli, sample_warehouse_path, "--model", "Qwen/Qwen3-32B", "--gpu", "h100-sxm",
        "--gpu-count", "1", "--estimate",
    )  # fmt: skip
    assert done.returncode == 1 and "--model-config" in done.stderr
    done = capacity(
        cli, sample_warehouse_path, *LLAMA, "--gpu", "cpu", "--gpu-count", "1", "--estimate"
    )
    assert done.returncode == 1 and "gpu_specs.toml" in done.stderr


def test_weights_too_large_for_the_server_are_no_capacity(cli, sample_warehouse_path):
    done = capacity(
        cli, sample_warehouse_path, "--model", "meta-llama/Meta-Llama-3-70B-Instruct",
        "--gpu", "rtx-4090", "--gpu-count", "1", "--estimate",
    )  # fmt: skip
    assert done.returncode == 2
    report = json.loads(done.stdout)
    assert report["capacity_rps"] == 0 and "do not fit" in report["reason"]


def test_the_text_report_says_estimate_first_with_its_band(cli, sample_warehouse_path):
    done = cli(
        "capacity", "--warehouse", sample_warehouse_path, *LLAMA, "--gpu", "l40s",
        "--gpu-count", "1", *TARGETS, "--estimate",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    first, *rest = done.stdout.splitlines()
    assert first.startswith("ESTIMATE")
    text = "\n".join(rest)
    assert "ESTIMATED by the serving model" in text and "Error band" in text
    assert "borrowed from rtx-4090" in text and "Simulated curve" in text


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"num_hidden_layers": 0}, "num_hidden_layers must be a number above 0"),
        ({"num_hidden_layers": 32.5}, "num_hidden_layers must be a whole number"),
        ({"num_hidden_layers": 10**9}, "num_hidden_layers must be a whole number from 1 to 10,000"),
        ({"hidden_size": "4096", "head_dim": None}, "hidden_size must be a number above 0"),
        ({"head_dim": 1e-300}, "head_dim must be a whole number"),
        ({"num_key_value_heads": -8}, "num_key_value_heads must be a number above 0"),
    ],
)
def test_a_hostile_config_json_is_refused_naming_the_key(cli, sample_warehouse_path, tmp_path,
                                                         change, says):  # fmt: skip
    config = json.loads(CONFIG.read_text()) | change
    path = tmp_path / "config.json"
    path.write_text(json.dumps({k: v for k, v in config.items() if v is not None}))
    done = capacity(
        cli, sample_warehouse_path, "--model", "x/new", "--model-config", path, "--gpu",
        "h100-sxm", "--gpu-count", "1", "--estimate",
    )  # fmt: skip
    assert done.returncode == 1 and says in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_weights_no_gpu_holds_are_no_capacity_not_an_estimate(cli, sample_warehouse_path, tmp_path):
    # ten trillion parameters (a vocabulary of 10**12 is refused as out of range now)
    config = json.loads(CONFIG.read_text()) | {"fleetplan_parameters": 1e13}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    done = capacity(
        cli, sample_warehouse_path, "--model", "x/new", "--model-config", path, "--gpu",
        "h100-sxm", "--gpu-count", "1", "--estimate",
    )  # fmt: skip
    assert done.returncode == 2 and json.loads(done.stdout)["capacity_rps"] == 0


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_the_p99s_shown_are_those_at_the_end_of_the_interval_shown(cli, sample_warehouse_path):
    args = (*LLAMA, "--gpu", "h100-sxm", "--gpu-count", "1", *TARGETS, "--estimate")
    low = json.loads(capacity(cli, sample_warehouse_path, *args).stdout)
    mid = json.loads(capacity(cli, sample_warehouse_path, *args, "--capacity-at", "mid").stdout)
    assert low["capacity_rps"] < mid["capacity_rps"]
    # at the low end the server is less loaded than at the estimate: lower P99s, on the curve
    assert low["predicted_tpot_p99_ms"] < mid["predicted_tpot_p99_ms"]
    curve = low["estimate"]["curve"]
    rates = [p["rate_rps"] for p in curve]
    i = max(k for k, r in enumerate(rates) if r <= low["capacity_rps"])
    tpots = (curve[i]["tpot_p99_ms"], curve[i + 1]["tpot_p99_ms"])
    assert min(tpots) <= low["predicted_tpot_p99_ms"] <= max(tpots)


def test_a_band_end_of_ten_times_or_more_reads_as_a_multiple():
    """A validation's far end (a level the estimate put past saturation) is a multiple, not a
    percentage of six digits, in the plan's tables, its text and `capacity --estimate`."""
    from fleetplan.planner.report.table import band_text, band_words

    assert band_text([-0.154, 1.475]) == "-15% to +148%"
    assert band_text([-0.501, 59281.446]) == "-50% to 59,282x"
    assert band_text([-0.5, 8.99]) == "-50% to +899%" and band_text([0, 9.0]) == "+0% to 10x"
    assert band_text(None) == "unknown" and band_text([1.0]) == "unknown"
    words = band_words({"saturation": [-0.2, 0.1], "ttft_p99": [-0.06, 54.7], "tpot_p99": None})
    assert words == "saturation -20% to +10%, P99 TTFT -6% to 56x, P99 TPOT unknown"


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_runs_on_the_gpu_that_cannot_calibrate_it_are_named_with_what_they_lack(
    cli, sample_warehouse_path, tool_outputs
):
    """A team uploads an ML.ENERGY summary of its H100 (SXM): closed-loop levels of a model the
    shape table does not hold, with inter-token latencies but no TPOT and no prompt lengths. An
    estimate on h100-sxm cannot calibrate on them; it says so, not "no run on h100-sxm"."""
    summary = tool_outputs / "ml-energy-leaderboard" / "Qwen__Qwen3-14B__lm-arena-chat.json"
    done = cli("ingest", "--warehouse", sample_warehouse_path, "--gpu", "h100-sxm", summary)
    assert done.returncode == 0, done.stdout + done.stderr
    traffic = ("--input-len", "200", "--output-len", "600")  # the warehouse has two datasets now
    args = (*LLAMA, "--gpu", "h100-sxm", "--gpu-count", "1", *traffic, *TARGETS, "--estimate")
    report = json.loads(capacity(cli, sample_warehouse_path, *args).stdout)
    basis = report["estimate"]["gpu_basis"]
    assert basis.startswith("no run on h100-sxm can calibrate it (its runs of Qwen/Qwen3-14B: ")
    assert "a model of known shape" in basis and "prompt and output token counts" in basis
    assert "a TPOT" in basis and "a throughput" not in basis  # the summary gives throughputs
    borrowed = "efficiencies borrowed from h100-pcie, the nearest measured hopper GPU; "
    assert f"{borrowed}moved from h100-pcie to h100-sxm: step floor scaled by" in basis
    # the B200 runs of the same file keep their own label: nothing else on h100-sxm
    assert "B200" not in basis


def test_calibration_gaps_name_what_no_level_has_or_how_few_have_it_all():
    import pandas as pd

    from fleetplan.planner.estimate.calibrate import calibration_gaps

    whole = {
        "model": "Org/Known-8B",
        "input_tokens_mean": 200.0,
        "output_tokens_mean": 300.0,
        "request_throughput_rps": 2.0,
        "tpot_mean_ms": 20.0,
    }
    known = {"org/known-8b"}
    assert calibration_gaps(pd.DataFrame([whole] * 3), known) == ""
    assert calibration_gaps(pd.DataFrame([whole] * 2), known) == (
        "2 of their levels have all it needs, not 3"
    )
    no_tpot = [{**whole, "tpot_mean_ms": None, "itl_p50_ms": 20.0}] * 3
    assert calibration_gaps(pd.DataFrame(no_tpot), known) == (
        "no level has a TPOT, or E2EL and TTFT means (inter-token latency alone is not one)"
    )
    # a level whose TPOT was not per token keeps its E2EL and TTFT: its decode time from them
    means = [{**whole, "tpot_mean_ms": None, "e2el_mean_ms": 6000.0, "ttft_mean_ms": 20.0}] * 3
    assert calibration_gaps(pd.DataFrame(means), known) == ""
    unknown = [{**whole, "model": "Org/Other", "input_tokens_mean": None}] * 3
    assert calibration_gaps(pd.DataFrame(unknown), known) == (
        "no level has a model of known shape or prompt and output token counts"
    )
    # a configured length stands for a measured mean
    configured = [{**whole, "input_tokens_mean": None, "input_len": 128}] * 3
    assert calibration_gaps(pd.DataFrame(configured), known) == ""
