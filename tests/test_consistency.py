"""A file whose figures are impossible is refused, naming them, whatever its format; a stated
figure apart from the counts is kept in a note and not planned with; every real file of every
tool imports."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from benchmarks.inputs.fuzzing import seed_files
from benchmarks.inputs.shared_data import ionet_results_dir, tool_outputs_dir
from benchmarks.inputs.vllm_results import make_result
from fleetplan.core.errors import InputError
from fleetplan.warehouse.consistency import agree, contradiction
from fleetplan.warehouse.importers.base import FileInput, ImportOptions
from fleetplan.warehouse.importers.registry import parse
from fleetplan.warehouse.preview import companion_pairs
from tests.support.paths import ROOT

IONET = ionet_results_dir()
FOUR_090 = (
    "vllm_200prompts16qps_DeepSeek-R1-Distill-Qwen-14B_sharegpt_2xNVIDIA-GeForce-RTX-4090.json"
)
needs_ionet = pytest.mark.skipif(IONET is None, reason="the io.net results are not beside this")


def ionet_file() -> dict:
    return json.loads((IONET / FOUR_090).read_text())


def refusal(name: str, value: object, options: ImportOptions | None = None) -> InputError:
    data = value if isinstance(value, bytes) else json.dumps(value).encode()
    with pytest.raises(InputError) as caught:
        parse(FileInput.from_bytes(name, data), options or ImportOptions())
    return caught.value


@needs_ionet
def test_the_real_file_imports_as_it_is():
    (run,) = parse(FileInput.from_bytes(FOUR_090, (IONET / FOUR_090).read_bytes())).runs
    assert run.gpu_count == 2 and run.points[0].completed == 200


def imported(name: str, value: object, options: ImportOptions | None = None):
    data = value if isinstance(value, bytes) else json.dumps(value).encode()
    return parse(FileInput.from_bytes(name, data), options or ImportOptions())


@needs_ionet
def test_a_throughput_of_a_million_beside_200_requests_in_51_s_is_kept_and_not_planned_with():
    parsed = imported(FOUR_090, ionet_file() | {"request_throughput": 1e6})
    (point,) = parsed.runs[0].points
    # the plan's figure is the counts': 200 requests over the 51.473 s the file states
    assert point.request_throughput_rps == pytest.approx(200 / 51.473, rel=1e-4)
    (note,) = point.notes
    assert "request throughput 1e+06 req/s as the file states" in note
    assert "completed requests 200 / duration 51.473 s = 3.88553" in note
    assert "fleetplan plans with 3.88553 from the counts" in note
    assert any("request throughput 1e+06" in w for w in parsed.warnings)


@needs_ionet
@pytest.mark.parametrize(
    ("change", "field", "counts"),
    [
        ({"output_throughput": 1e308}, "output_throughput_tps", "output throughput 1e+308"),
        ({"total_token_throughput": 1e308}, "total_throughput_tps", "total throughput 1e+308"),
        ({"request_throughput": 1e308}, "request_throughput_rps", "request throughput 1e+308"),
        ({"request_throughput": 1.0}, "request_throughput_rps", "request throughput 1 req/s"),
        ({"output_throughput": 1.0}, "output_throughput_tps", "output throughput 1 tok/s"),
    ],
)
def test_a_stated_throughput_apart_from_the_counts_by_any_ratio_is_a_note(change, field, counts):
    original = imported(FOUR_090, ionet_file()).runs[0].points[0]
    (point,) = imported(FOUR_090, ionet_file() | change).runs[0].points
    # whatever the file states, above or below, the point holds what the counts give
    assert getattr(point, field) == pytest.approx(getattr(original, field), rel=0.05)
    (note,) = point.notes
    assert f"{counts}" in note and "as the file states" in note and "both kept" in note


@needs_ionet
@pytest.mark.parametrize(
    ("change", "field", "named"),
    [
        ({"mean_ttft_ms": 1.0, "mean_tpot_ms": 1.0}, "ttft_mean_ms", "mean TTFT 1 ms is below"),
        ({"mean_tpot_ms": 1.0}, "tpot_mean_ms", "0.5 x p50 TPOT 96.8169 ms"),
        ({"completed": 201}, "completed", "exceeds requests sent 200"),
        ({"duration": 1e-300}, "ttft_mean_ms", "longer than the duration 1e-300 s"),
        ({"duration": 2.0}, "duration_s", "no server completes requests faster than they are"),
    ],
)
def test_each_contradiction_is_refused_naming_both_figures(change, field, named):
    error = refusal(FOUR_090, ionet_file() | change)
    assert error.field == field and named in str(error), str(error)
    assert "run 1 of 1, level 1 of 1" in str(error)


def test_a_stream_faster_than_any_gpu_decodes_is_refused():
    document = make_result(detailed=False)
    for key in [k for k in document if k.endswith("_tpot_ms")]:
        document[key] = 0.001
    error = refusal("vllm.json", document)
    assert error.field == "tpot_mean_ms" and "faster than any GPU decodes" in str(error)


def test_more_completed_than_the_concurrency_allows_is_refused():
    document = make_result(detailed=False) | {"request_rate": "inf", "max_concurrency": 1}
    document["duration"] = document["completed"] * document["mean_e2el_ms"] / 1000 / 10
    document.pop("request_throughput")
    error = refusal("vllm.json", document)
    assert error.field == "duration_s" and "(Little's law)" in str(error), str(error)
    # at the rate one request in flight allows, nothing is refused
    document["duration"] *= 10
    assert imported("vllm.json", document).runs[0].points[0].max_concurrency == 1


def test_a_p99_ttft_above_the_p99_e2el_is_refused():
    document = make_result(detailed=False)  # statistics as stated, with E2EL
    name = "vllm.json"
    document["p99_ttft_ms"] = document["p99_e2el_ms"] * 1.5
    error = refusal(name, document)
    assert error.field == "ttft_p99_ms" and "exceeds p99 E2EL" in str(error), str(error)


@needs_ionet
def test_a_duration_shorter_than_its_latencies_is_refused_without_throughputs():
    tiny = ionet_file() | {"duration": 1e-300}
    for key in ("request_throughput", "output_throughput", "total_token_throughput"):
        tiny.pop(key)
    error = refusal(FOUR_090, tiny)
    assert "longer than the duration 1e-300 s" in str(error)


def test_rounding_is_tolerated_and_contradictions_are_not():
    assert agree(3.89, 3.885530416444041)  # two decimals
    assert agree(100.0, 104.0) and not agree(100.0, 106.0)
    assert not agree(1e6, 3.885)


# -- every format: the check runs once, on the canonical points --------------------------------


def _seed(label: str) -> tuple[str, bytes]:
    return seed_files()[label]


def test_a_fleetplan_run_file_stating_another_throughput_plans_with_its_counts():
    name, data = _seed("fleetplan-run")
    document = json.loads(data)
    point = document["runs"][0]["points"][0]
    point["request_throughput_rps"] = point["completed"] / point["duration_s"] * 100
    (planned, *_) = imported(name, document).runs[0].points
    assert planned.request_throughput_rps == pytest.approx(point["completed"] / point["duration_s"])
    assert any("as the file states" in note for note in planned.notes)


def test_a_csv_table_row_that_contradicts_itself_is_refused():
    name, data = _seed("csv-table")
    rows = list(csv.DictReader(io.StringIO(data.decode())))
    rows[0]["e2el_p99_ms"] = "0.5"
    rows[0]["ttft_p99_ms"] = "1000"
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    error = refusal(name, out.getvalue().encode())
    assert "contradicts itself" in str(error), str(error)


def test_a_genai_perf_export_that_completes_faster_than_it_sends_is_refused():
    name, data = _seed("genai-perf")
    document = json.loads(data)
    document["request_throughput"]["avg"] *= 1000
    error = refusal(name, document, ImportOptions(gpu="rtx-4090", gpu_count=1))
    # GenAI-Perf states no duration: it is read as count / request throughput, and a thousand
    # times the rate the requests were sent at is no window or counting difference
    assert error.field == "request_throughput_rps" and "contradicts itself" in str(error)
    assert "sent at 4 a second" in str(error)


def test_a_vllm_bench_file_stating_another_throughput_plans_with_its_counts():
    name, data = _seed("vllm")
    document = json.loads(data)
    document["request_throughput"] *= 1000
    (point, *_) = imported(name, document).runs[0].points
    assert point.request_throughput_rps == pytest.approx(
        document["completed"] / document["duration"]
    )


# -- every real file of every tool still imports -------------------------------------------------


def _real_files() -> list[Path]:
    roots = [ROOT / "tests" / "fixtures" / "formats", tool_outputs_dir(), IONET]
    files = []
    for root in filter(None, roots):
        files += [p for p in sorted(root.rglob("*")) if p.is_file() and p.suffix in _RESULTS]
    return files


_RESULTS = {".json", ".yaml", ".jsonl", ".csv", ".gz"}


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_no_real_file_of_any_tool_contradicts_itself():
    files = _real_files()
    pairs = companion_pairs(str(p) for p in files)
    checked = 0
    assert len(files) > 0  # a loop over nothing asserts nothing
    for path in files:
        companions = {}
        if str(path) in pairs:
            partner = Path(pairs[str(path)])
            companions = {partner.name: partner.read_bytes()}
        options = ImportOptions(gpu="rtx-4090", gpu_count=1, companions=companions)
        try:
            parsed = parse(FileInput.from_bytes(str(path), path.read_bytes()), options)
        except InputError as error:
            assert "contradicts itself" not in str(error), str(error)
            continue
        assert len(parsed.runs) > 0  # a loop over nothing asserts nothing
        for run in parsed.runs:
            assert all(contradiction(point) is None for point in run.points)
        checked += 1
    # with other tools' real outputs beside the checkout, 20 at least; the fixtures alone hold 11
    assert checked >= (20 if tool_outputs_dir() else 10)


def test_every_format_goes_through_the_check(monkeypatch):
    from fleetplan.warehouse.importers import registry

    checked: dict[str, int] = {}
    real = registry.check_runs

    def recording(runs, *, file, derived=frozenset()):
        checked[file] = sum(len(run.points) for run in runs)
        return real(runs, file=file, derived=derived)

    monkeypatch.setattr(registry, "check_runs", recording)
    formats = set()
    seeds = seed_files()
    assert len(seeds) > 0  # a loop over nothing asserts nothing
    for name, data in seeds.values():
        try:
            parsed = parse(
                FileInput.from_bytes(name, data), ImportOptions(gpu="rtx-4090", gpu_count=1)
            )
        except InputError:
            continue  # seeds that are not results on their own
        assert checked.pop(name) == parsed.points
        formats.add(parsed.importer)
    # every format but those whose seeds are other tools' files read from ../shared (two when
    # it is there; without it, four: two more formats are seeded only from there)
    assert len(formats) >= len(registry.FORMATS) - (2 if tool_outputs_dir() else 4)


@pytest.mark.slow  # imports every raw io.net file twice: about 10 s
@needs_ionet
def test_ingest_refuses_the_poisoned_file_and_the_warehouse_keeps_its_runs(
    cli, sample_warehouse_path, tmp_path
):

    before = cli("benchmarks", "--warehouse", sample_warehouse_path, check=True).stdout
    poisoned = ionet_file() | {"mean_ttft_ms": 1.0, "mean_tpot_ms": 1.0}
    path = tmp_path / FOUR_090
    path.write_text(json.dumps(poisoned))
    done = cli("ingest", "--warehouse", sample_warehouse_path, path)
    assert done.returncode == 1, done
    assert "mean TTFT 1 ms is below 0.5 x p50 TTFT" in done.stdout
    after = cli("benchmarks", "--warehouse", sample_warehouse_path, check=True).stdout
    assert after == before
