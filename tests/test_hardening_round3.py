"""Round three of hardening, away from the collector's requests: campaign and scenario files read
as ingest reads files, look-alike GPU labels, foreign databases, and what the dashboard gives a
scenario from a link."""

from __future__ import annotations

import errno
import json
import os
import subprocess
from pathlib import Path

import duckdb
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from fleetplan.collectors.ray_campaign.campaign_file import load_campaign
from fleetplan.core.contract import Run
from fleetplan.core.errors import InputError
from fleetplan.core.gpus import canonical_gpu
from fleetplan.services.planning import (
    PAGE_MAX_CHOICES,
    PAGE_TIME_LIMIT_S,
    load_scenario,
    plan_from_warehouse,
)
from fleetplan.services.scenario_link import scenario_to_link
from fleetplan.warehouse.db import ENV_VAR, Warehouse
from fleetplan.warehouse.preview import unexpected_error
from tests.support.paths import MAIN, ROOT
from tests.support.processes import fleetplan

PROBE = "    backend: openai\n    model: m\n    base_url: http://{node_ip}:8000\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: c\nprobes:\n  - name: a\n" + PROBE + "    args: &x {seed: 1}\n"
         "  - name: b\n" + PROBE + "    args: *x\n", "anchors and aliases are not accepted"),
        ("name: c\nname: d\nprobes:\n  - name: a\n" + PROBE, "the key 'name' is given twice"),
        ("name: c\nprobes:\n  - name: \"a\\x1b[2Jb\"\n" + PROBE, "control or formatting"),
        ("name: c\nprobes:\n  - name: \"a\\nb\"\n" + PROBE, "control or formatting"),
        ("name: c\nprobes:\n  - name: \"a\\0b\"\n" + PROBE, "control or formatting"),
        ("name: c\nprobes:\n  - name: a\n    backend: openai\n    model: m\n"
         "    base_url: file:///etc/passwd\n", "is not an http:// or https:// URL"),
        ("name: c\nprobes:\n  - name: a\n" + PROBE + "    args: {request_timeout: .inf}\n",
         "--request-timeout: Input should be a finite number"),
        ('{"name": "c", "name": "d", "probes": []}', "the key 'name' is given twice"),
        ('{"name": "c", "probes": [{"backend": "openai", "model": "m", "m\\u006fdel": "x"}]}',
         "the key 'model' is given twice"),  # the same key, once written with an escape
        ("name: c\nprobes:\n  - name: a\n" + PROBE + "    <<: {model: x}\n", "merge"),
        ("name: c\nprobes:\n  - name: a\n" + PROBE + "    gpu_types: [\"R\u0422X 4090\"]\n",
         "looks like rtx-4090 but is written with other letters (U+0422)"),
        ("name: c\nprobes:\n  - name: a\n    backend: openai\n    model: m\n"
         "    base_urls: {\"\u041d100 PCIe\": \"http://x:1\"}\n", "looks like h100-pcie"),
        ("name: c\nprobes:\n  - name: a\n" + PROBE + "    args: {engine_arg: [\"--x\\0\"]}\n",
         "--engine-arg: contains a control or formatting character (U+0000)"),
        ("name: c\nprobes:\n  - name: a\n" + PROBE + "    tokenizer: \"t\\e[2J\"\n",
         "control or formatting character (U+001B)"),
        ("name: c\nprobes:\n  - name: a\n" + PROBE + "    args: {port: 999999}\n",
         "--port: Input should be less than or equal to 65535"),
        ("name: c\nprobes:\n  - name: a\n" + PROBE + "    seed: -1\n", "--seed: Input should be"),
        ("name: c\nprobes:\n  - name: a\n" + PROBE + "    rates: [1e-300]\n", "over a week"),
        ("name: c\nprobes:\n  - name: a\n    backend: openai\n    model: m\n"
         "    base_url: http://me:pw@{node_ip}:8000\n", "with a user or password in it"),
    ],
)  # fmt: skip
def test_a_campaign_file_is_read_by_ingests_rules(tmp_path, text, message):
    path = tmp_path / ("campaign.json" if text.startswith("{") else "campaign.yaml")
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        load_campaign(path)
    assert message in str(caught.value)


def test_a_campaigns_api_key_with_a_control_character_is_refused_without_showing_it(tmp_path):
    path = tmp_path / "campaign.yaml"
    path.write_text("name: c\nprobes:\n  - name: a\n" + PROBE
                    + "    args: {api_key: \"sk-SECRET\\r\\nX-Evil: 1\"}\n")  # fmt: skip
    with pytest.raises(InputError, match="--api-key: contains a control") as caught:
        load_campaign(path)
    assert "SECRET" not in str(caught.value)


def test_the_example_campaign_still_loads():
    assert load_campaign(ROOT / "examples" / "campaign.yaml").probes


def test_a_billion_laughs_campaign_is_refused_before_it_expands(tmp_path):
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(9)
    )
    path = tmp_path / "laughs.yaml"
    path.write_text(laughs)
    with pytest.raises(InputError, match="anchors and aliases"):
        load_campaign(path)


def _scenario() -> dict:
    return json.loads((ROOT / "examples" / "chat-batch-qwen14b.json").read_text())


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('"rate_rps": 6.0', '"rate_rps": 6.0, "rate_rps": 600000'),
        ('"objective": "cost"', '"objective": "cost", "objective": "carbon"'),
    ],
)
def test_a_scenario_with_a_key_twice_is_refused_naming_it(old, new):
    text = (ROOT / "examples" / "chat-batch-qwen14b.json").read_text()
    assert old in text
    with pytest.raises(InputError, match="is given twice in one object") as caught:
        load_scenario(text.replace(old, new, 1).encode(), name="twice.json")
    assert "twice.json" in str(caught.value)
    assert load_scenario(text.encode(), name="once.json").classes


@pytest.mark.parametrize(
    "label",
    ["RTX\u20104090", "RTX\u20114090", "\uff32\uff34\uff38 \uff14\uff10\uff19\uff10",
     "NVIDIA GeForce RTX\u00a04090", "rtx\u22124090", "RTX \u0664\u0660\u0669\u0660"],
)  # fmt: skip
def test_look_alike_dashes_and_full_width_letters_are_the_gpu_they_show(label):
    assert canonical_gpu(label).gpu_id == "rtx-4090"


def test_an_en_dash_is_a_dash():
    assert canonical_gpu("H100\u2013PCIe").gpu_id == "h100-pcie"


@pytest.mark.parametrize(("label", "imitated"), [("\u041d100 PCIe", "h100-pcie"),
                                                  ("RT\u0425 4090", "rtx-4090"),
                                                  ("\u0280\u1d1bx 4090", "rtx-4090"),  # small caps
                                                  ("\u041d100", "H100")])  # fmt: skip
def test_a_label_in_look_alike_letters_is_refused_not_a_gpu_of_its_own(label, imitated):
    identity = canonical_gpu(label)
    assert not identity.known and identity.lookalike_of == imitated
    with pytest.raises(ValueError, match=f"looks like {imitated}"):
        Run(tool="t", model="m", gpu_model=label, gpu_count=1,
            points=[{"offered_rate_rps": 1.0, "completed": 1, "duration_s": 1.0}])  # fmt: skip


def _link_app(monkeypatch, warehouse: Path, change) -> AppTest:
    """The Plan page opened from a link holding the default scenario, changed by `change`."""
    monkeypatch.setenv(ENV_VAR, str(warehouse))
    st.cache_data.clear()
    default = AppTest.from_file(MAIN, default_timeout=120)
    default.run()
    scenario = change(default.session_state["s_current"])
    link = scenario_to_link(scenario)
    assert link is not None
    at = AppTest.from_file(MAIN, default_timeout=120)
    at.query_params["s"] = link
    at.run()
    assert not at.exception, at.exception
    return at


def test_a_link_asking_an_hour_of_solving_gets_the_dashboards_few_seconds(
    monkeypatch, sample_warehouse_path
):
    at = _link_app(
        monkeypatch, sample_warehouse_path, lambda s: s.model_copy(update={"time_limit_s": 3600})
    )
    said = f"the dashboard solves for at most {PAGE_TIME_LIMIT_S:g} s, not the 3600 s"
    assert any(said in note for note in at.session_state["s_notes"])
    assert any(said in note for note in at.session_state["s_result"].notes)


def test_a_link_with_more_choices_than_the_page_plans_is_refused_saying_the_bound(
    monkeypatch, sample_warehouse_path
):
    def many(scenario):
        first = scenario.classes[0]
        classes = [first.model_copy(update={"name": f"c{i}"}) for i in range(300)]
        return scenario.model_copy(update={"classes": classes, "time_limit_s": 3600})

    at = _link_app(monkeypatch, sample_warehouse_path, many)
    errors = " ".join(e.value for e in at.error)
    assert f"over the {PAGE_MAX_CHOICES} the dashboard plans" in errors
    assert "s_result" not in at.session_state


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
@pytest.mark.parametrize(
    ("table", "made_by"),
    [
        ("sales", "CREATE TABLE sales (x INTEGER)"),
        ("runs", "CREATE TABLE runs (x INTEGER)"),
        ("runs", "CREATE TABLE t (x INTEGER); CREATE VIEW runs AS SELECT * FROM t"),
        ("other.sales", "CREATE SCHEMA other; CREATE TABLE other.sales (x INTEGER)"),
        ("sequence ids", "CREATE SEQUENCE ids"),
        ("macro runs", "CREATE MACRO runs(a) AS a"),
        ("type mood", "CREATE TYPE mood AS ENUM ('a', 'b')"),
        # a table of fleetplan's name, another application's columns
        (
            "schema_migrations",
            "CREATE TABLE schema_migrations (version VARCHAR); "
            "INSERT INTO schema_migrations VALUES ('2023')",
        ),
    ],
)
@pytest.mark.parametrize("command", ["ingest", "benchmarks"])
def test_another_applications_database_is_refused_and_left_unchanged(
    cli, tmp_path, table, made_by, command
):
    path = tmp_path / "theirs.duckdb"
    con = duckdb.connect(str(path))
    con.execute(made_by)
    con.close()
    before = path.read_bytes()
    sample = next((ROOT / "sample_data" / "benchmarks").glob("*.json"))
    extra = [sample] if command == "ingest" else []
    done = cli(command, "--warehouse", path, *extra)
    assert done.returncode == 3, done.stderr
    assert "another application's DuckDB database" in done.stderr and table in done.stderr
    assert "Traceback" not in done.stderr
    assert path.read_bytes() == before


def test_an_empty_duckdb_database_is_no_warehouse_to_read_but_one_to_fill(cli, tmp_path):
    path = tmp_path / "new.duckdb"
    duckdb.connect(str(path)).close()
    before = path.read_bytes()
    done = cli("benchmarks", "--warehouse", path)
    assert done.returncode == 3 and "Traceback" not in done.stderr
    assert "(an empty DuckDB database): build it with `fleetplan build`" in done.stderr
    assert path.read_bytes() == before
    sample = next((ROOT / "sample_data" / "benchmarks").glob("*.json"))
    assert cli("ingest", "--warehouse", path, sample).returncode == 0
    assert cli("benchmarks", "--warehouse", path).returncode == 0


def test_a_class_that_rounds_to_no_server_is_noted(sample_warehouse_path):
    data = _scenario()
    data["classes"][0]["rate_rps"] = 1e-6
    scenario = load_scenario(json.dumps(data).encode(), name="tiny.json")
    with Warehouse.open(sample_warehouse_path) as wh:
        result = plan_from_warehouse(wh, scenario)
    name = data["classes"][0]["name"]
    assert not any(p.traffic_class == name for p in result.recommended.pools)
    assert any(n.startswith(f"{name}: 1e-06 req/s rounds to no server") for n in result.notes)


def test_a_link_out_of_an_ingested_folder_is_not_followed_nor_its_bytes_shown(cli, tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("root:$6$hashhashhash:19000:0:99999:7:::\n")
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "shadow.json").symlink_to(secret)
    (folder / "odd.json").write_text("root:$6$otherhash:19000\nuser:x\n")
    done = cli("ingest", "--warehouse", tmp_path / "wh.duckdb", folder)
    assert "shadow.json" not in done.stdout and "not following" in done.stderr
    assert "odd.json" in done.stdout and "rejected" in done.stdout
    assert "hash" not in done.stdout + done.stderr


def test_a_warehouse_path_over_the_systems_limit_is_a_message(cli, tmp_path):
    done = cli("benchmarks", "--warehouse", tmp_path / ("w" * 300 + ".duckdb"))
    assert done.returncode == 3 and "File name too long" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_full_disk_says_the_disk_is_full():
    assert unexpected_error(OSError(errno.ENOSPC, "No space left on device")).startswith(
        "the disk is full"
    )
    message = 'TransactionException: Failed to commit: could not write: "No space left on device"'
    assert "disk is full" in unexpected_error(RuntimeError(message))


@pytest.mark.parametrize(
    "command",
    [
        ("collect", "--campaign", "FILE", "--out", "OUT"),
        ("simulate", "--plan", "FILE"),
    ],
)
def test_a_campaign_or_plan_that_is_no_regular_file_is_refused_without_reading_it(
    tmp_path, command
):
    fifo = tmp_path / "campaign.yaml"
    os.mkfifo(fifo)  # opened to read, a FIFO nobody writes to waits forever
    args = [{"FILE": fifo, "OUT": tmp_path / "out"}.get(word, word) for word in command]
    done = fleetplan(*args, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "a pipe (FIFO), not a file: only regular files are read" in done.stderr


def test_a_scenario_that_is_no_json_is_refused_without_echoing_its_bytes(cli, tmp_path):
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$hashhashhash:19000:0:99999:7:::\n")
    done = cli("plan", "--scenario", secret)
    assert done.returncode != 0 and "Invalid JSON: expected value at line 1" in done.stderr
    assert "hash" not in done.stdout + done.stderr and "Traceback" not in done.stderr
    with pytest.raises(InputError) as caught:
        load_scenario(b'{"model": "m", "classes": [' + b"9" * 5000 + b"]}", name="big.json")
    assert "999" not in str(caught.value)
