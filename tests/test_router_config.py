"""The plan's routing as a router configuration (issue 23): a LiteLLM proxy config loaded by
LiteLLM's own Router routes each class to its planned pools in the planned proportions and falls
back as planned; a plain routing table says the same."""

from __future__ import annotations

import collections
import json
import random

import pytest
import yaml

from fleetplan.services.router_config import litellm_config, routing_json
from tests.support.planner_points import gpu
from tests.test_planner import run


def _mixed_plan(fallback: bool = True):
    # 4090 hosts up 95 % and at most 8 GPUs: chat spills onto H100s, which cover for them.
    return run(
        [
            {
                "name": "chat",
                "rate_rps": 14,
                "ttft_p99_ms": 300,
                "attainment": 0.99,
                "fallback": fallback,
            }
        ],
        [
            gpu("h100-pcie", 2.0, availability=0.999),
            gpu("rtx-4090", 0.25, availability=0.95, max_gpus=8),
        ],
        capacity_rule="measured",
    )


def _shares(plan) -> dict[str, float]:
    return {
        f"chat/{p.gpus_per_server}x-{p.gpu_model}#primary": p.rate_rps / 14
        for p in plan.recommended.pools
    }


def test_the_config_has_one_weighted_deployment_per_pool_and_the_planned_fallback():
    plan = _mixed_plan()
    config = yaml.safe_load(litellm_config(plan))
    primary = [d for d in config["model_list"] if d["model_name"] == "chat"]
    assert {d["model_info"]["id"]: d["litellm_params"]["weight"] for d in primary} == (
        pytest.approx(_shares(plan), abs=1e-6)
    )
    assert all(d["litellm_params"]["api_base"].startswith("os.environ/FLEETPLAN_") for d in primary)
    assert config["router_settings"]["fallbacks"] == [{"chat": ["chat-fallback"]}]
    backup = [d for d in config["model_list"] if d["model_name"] == "chat-fallback"]
    assert [d["model_info"]["id"] for d in backup] == ["chat/1x-h100-pcie#fallback"]
    table = json.loads(routing_json(plan))["classes"]["chat"]
    assert table["fallback_to"] == ["chat/1x-h100-pcie"]
    assert sum(p["share"] for p in table["pools"]) == pytest.approx(1.0)
    no_fallback = yaml.safe_load(litellm_config(_mixed_plan(fallback=False)))
    assert "fallbacks" not in no_fallback["router_settings"]


def _router(config: dict, monkeypatch, mocks: dict[str, object] | None = None):
    litellm = pytest.importorskip("litellm", reason="litellm (the dev extra) is not installed")
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network
    for deployment in config["model_list"]:
        params = deployment["litellm_params"]
        monkeypatch.setenv(params["api_base"].removeprefix("os.environ/"), "http://127.0.0.1:9/v1")
        params["api_key"] = "placeholder"
        if mocks is not None:  # answered without a request (LiteLLM's mock_response)
            params["mock_response"] = mocks[deployment["model_info"]["id"]]
    return litellm.Router(model_list=config["model_list"], **config["router_settings"])


@pytest.mark.slow  # imports litellm (seconds) and routes 4000 requests
def test_litellm_routes_each_class_to_its_pools_in_the_planned_proportions(monkeypatch):
    plan = _mixed_plan()
    router = _router(yaml.safe_load(litellm_config(plan)), monkeypatch)
    random.seed(23)
    picks = 4000
    chosen = collections.Counter(
        router.get_available_deployment(model="chat")["model_info"]["id"] for _ in range(picks)
    )
    shares = _shares(plan)
    assert len(shares) > 0  # a loop over nothing asserts nothing
    for pool, share in shares.items():
        # Binomial: 4 standard deviations at 4,000 picks is under 0.032.
        assert chosen[pool] / picks == pytest.approx(share, abs=0.032)


@pytest.mark.slow  # imports litellm (seconds)
def test_litellm_falls_back_to_the_datacenter_pool_when_the_consumer_pool_is_down(monkeypatch):
    plan = _mixed_plan()
    config = yaml.safe_load(litellm_config(plan))
    mocks = {
        "chat/2x-rtx-4090#primary": "litellm.InternalServerError",  # its hosts are gone
        "chat/1x-h100-pcie#primary": "h100",
        "chat/1x-h100-pcie#fallback": "h100 (fallback)",
    }
    router = _router(config, monkeypatch, mocks)
    random.seed(5)
    answers = collections.Counter(
        router.completion(model="chat", messages=[{"role": "user", "content": "hi"}])
        .choices[0]
        .message.content
        for _ in range(60)
    )
    # Every request is served: the 4090 pool's share through the fallback group.
    assert set(answers) == {"h100", "h100 (fallback)"}
    assert answers["h100 (fallback)"] > 0
    # A pool marked down (cooldown) drops out of its group: the class goes to the H100 pool.
    router = _router(yaml.safe_load(litellm_config(plan)), monkeypatch)
    router.cooldown_cache.add_deployment_to_cooldown(
        "chat/2x-rtx-4090#primary", RuntimeError("hosts lost"), 503, 600.0
    )
    picks = {router.get_available_deployment(model="chat")["model_info"]["id"] for _ in range(200)}
    assert picks == {"chat/1x-h100-pcie#primary"}
