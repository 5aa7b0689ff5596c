"""The dashboard, through Streamlit's AppTest and as a real server process."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest
import requests
import streamlit as st
from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT, held_by_another_process
from warehouse.db import ENV_VAR

MAIN = str(ROOT / "app" / "main.py")


@pytest.fixture(autouse=True)
def _fresh_caches():
    st.cache_data.clear()
    st.cache_resource.clear()
    yield
    st.cache_resource.clear()  # closes nothing by itself: drop the connection before the next test


def run_app(monkeypatch, warehouse_path) -> AppTest:
    monkeypatch.setenv(ENV_VAR, str(warehouse_path))
    at = AppTest.from_file(MAIN, default_timeout=60).run()
    assert not at.exception, at.exception
    return at


def test_benchmarks_page_shows_sample_data_with_chart_and_table(monkeypatch, sample_warehouse_path):
    at = run_app(monkeypatch, sample_warehouse_path)
    assert at.title[0].value == "Benchmarks"
    model = at.selectbox(key="w_model")
    assert "meta-llama/Meta-Llama-3-8B-Instruct" in model.options
    # by default the model measured on the most configurations
    assert model.value in {"deepseek-ai/DeepSeek-R1-Distill-Qwen-14B",
                           "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
                           "deepseek-ai/DeepSeek-R1-Distill-Llama-8B"}  # fmt: skip
    model.set_value("deepseek-ai/DeepSeek-R1-Distill-Qwen-14B").run()
    assert not at.exception
    configs = at.multiselect(key="w_configs:deepseek-ai/DeepSeek-R1-Distill-Qwen-14B")
    assert configs.value == ["1x h100-pcie", "2x rtx-4090", "4x rtx-4090", "8x rtx-4090"]
    figure = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert figure["layout"]["xaxis"]["title"]["text"] == "Offered load (requests/s, Poisson)"
    assert figure["layout"]["yaxis"]["title"]["text"] == "Total tokens/s (input + output)"
    traces = {trace["name"] for trace in figure["data"]}
    assert traces == {"h100-pcie, 1x h100-pcie", "rtx-4090, 2x rtx-4090", "rtx-4090, 4x rtx-4090",
                      "rtx-4090, 8x rtx-4090"}  # fmt: skip
    table = at.dataframe[0].value
    assert set(table["gpu_count"]) == {1, 2, 4, 8}
    assert len(table) == 25  # 5 rates x 4 configurations, the H100 runs repeated at each rate
    configs.set_value(["4x rtx-4090"]).run()
    assert set(at.dataframe[0].value["gpu_count"]) == {4}


def test_switching_throughput_metric(monkeypatch, sample_warehouse_path):
    at = run_app(monkeypatch, sample_warehouse_path)
    at.selectbox(key="w_metric").set_value("request_throughput_rps").run()
    assert not at.exception
    figure = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert figure["layout"]["yaxis"]["title"]["text"] == "Completed requests/s"


def test_empty_warehouse_explains_how_to_get_data(monkeypatch, warehouse_path):
    at = run_app(monkeypatch, warehouse_path)
    assert "fleetplan ingest" in at.info[0].value and "make run" in at.info[0].value


def test_busy_warehouse_is_a_message_not_a_stack_trace(monkeypatch, sample_warehouse_path):
    with held_by_another_process(sample_warehouse_path):
        at = run_app(monkeypatch, sample_warehouse_path)
        assert "in use by process" in at.error[0].value


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_fleetplan_app_serves_the_dashboard(sample_warehouse_path):
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "fleetplan.cli", "app", "--port", str(port), "--headless",
         "--warehouse", str(sample_warehouse_path)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                health = requests.get(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)
                if health.ok:
                    break
            except requests.ConnectionError:
                pass
            assert server.poll() is None, server.stdout.read()
            assert time.monotonic() < deadline, "the dashboard did not start within 60 s"
            time.sleep(0.5)
        assert health.text == "ok"
        page = requests.get(f"http://127.0.0.1:{port}/", timeout=5)
        assert page.ok and "<noscript>" in page.text
    finally:
        server.terminate()
        server.wait(timeout=20)


def test_table_follows_the_model_and_offers_a_csv_download(monkeypatch, sample_warehouse_path):
    at = run_app(monkeypatch, sample_warehouse_path)
    at.selectbox(key="w_model").set_value("meta-llama/Meta-Llama-3-8B-Instruct").run()
    button = at.get("download_button")[0]
    assert "Download these points" in button.proto.label
    shown = at.dataframe[0].value
    assert set(shown["model"]) == {"meta-llama/Meta-Llama-3-8B-Instruct"} and len(shown) == 10
