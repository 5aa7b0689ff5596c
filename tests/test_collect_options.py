"""`fleetplan collect`'s options model against the command line that builds it: the same options,
the same defaults, the same backends; values named and checked the same way from argv and from a
campaign's `args`."""

from __future__ import annotations

import math
import pickle

import pytest

from fleetplan.cli import build_parser
from fleetplan.collectors.options import (
    BACKEND_NAMES,
    OPTION_NAMES,
    CampaignOptions,
    CollectOptions,
    SearchOptions,
    non_default,
)
from fleetplan.collectors.ray_campaign.campaign_file import SET_BY_CAMPAIGN, check_campaign
from fleetplan.collectors.run import BACKENDS
from fleetplan.collectors.search import DEFAULT_TOLERANCE, SEARCH_MIN_REQUESTS
from fleetplan.core.errors import InputError


def parsed(*argv: str) -> dict[str, object]:
    args = build_parser().parse_args(["collect", "--out", "runs", *argv])
    return {name: value for name, value in vars(args).items() if name not in ("verbose", "command")}


def test_every_flag_is_an_option_or_the_campaigns_and_their_defaults_agree():
    given = parsed()
    assert set(given) == OPTION_NAMES | SET_BY_CAMPAIGN
    assert not OPTION_NAMES & SET_BY_CAMPAIGN
    # nothing given on the command line: every option at the model's own default
    assert non_default({name: given[name] for name in OPTION_NAMES}) == {}
    options = CollectOptions.from_mapping(
        {**{name: given[name] for name in OPTION_NAMES}, "backend": "openai"}
    )
    assert options.changed() == {"backend": "openai"}


def test_the_backends_offered_are_the_backends_run():
    assert tuple(BACKENDS) == BACKEND_NAMES


def test_options_from_argv_and_from_a_mapping_are_the_same():
    argv = parsed(
        "--backend", "vllm", "--model", "m", "--rates", "4,1,inf", "--engine-arg=--a",
        "--engine-arg=--b", "--tensor-parallel-size", "2", "--telemetry", "off", "--no-ignore-eos",
    )  # fmt: skip
    from_argv = CollectOptions.from_mapping({k: v for k, v in argv.items() if k in OPTION_NAMES})
    from_campaign = CollectOptions.from_mapping(
        {
            "backend": "vllm",
            "model": "m",
            "rates": [4, 1, "inf"],
            "engine-arg": ["--a", "--b"],
            "tensor_parallel_size": "2",  # YAML may quote it
            "telemetry": False,  # YAML reads a bare `off` as false
            "--no-ignore-eos": True,
        }
    )
    assert from_argv == from_campaign
    assert from_argv.measure.rates == (4.0, 1.0, math.inf)
    assert from_argv.measure.plan().rates == (1.0, 4.0, math.inf)  # a suite runs them in order
    assert from_argv.engine.engine_arg == ("--a", "--b")
    assert pickle.loads(pickle.dumps(from_argv)) == from_argv  # what a Ray task receives


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"num_requests": 0}, "--num-requests: Input should be greater than or equal to 1, got 0"),
        ({"rates": "1,x"}, "--rates: not a rate: 'x'"),
        ({"warmup": "many"}, "--warmup: .*got 'many'"),
        ({"telemetry": "sometimes"}, "--telemetry: "),
        ({"colour": "red"}, "--colour is not a `fleetplan collect` option"),
        ({"input_len": 8}, "a custom shape needs both --input-len and --output-len"),
        ({"suite": "standard", "input_len": 8, "output_len": 8}, "not both"),
        ({"backend": "tgi"}, "--backend: "),
    ],
)
def test_a_rejected_value_names_its_option(values, message):
    with pytest.raises(InputError, match=message):
        CollectOptions.from_mapping({"backend": "openai", **values})


def test_replace_checks_again_and_keeps_the_rest():
    options = CollectOptions.from_mapping({"backend": "openai", "model": "m", "seed": 3})
    moved = options.replace(base_url="http://10.0.0.1:8000")
    assert moved.server.base_url == "http://10.0.0.1:8000" and moved.measure.seed == 3
    assert options.server.base_url is None  # frozen: a new model, never a changed one
    with pytest.raises(InputError, match="--gpu-count"):
        options.replace(gpu_count=0)


def test_campaign_options_read_the_gpu_type_list():
    options = CampaignOptions(out="runs", gpu_types="rtx-4090,,h100-pcie")
    assert options.gpu_types == ("rtx-4090", "h100-pcie") and options.address == "auto"


def test_find_capacity_options_from_argv_and_from_a_campaign_are_the_same():
    argv = parsed(
        "--backend", "openai", "--model", "m", "--find-capacity", "--ttft-p99", "200",
        "--tpot-p99", "40", "--tolerance", "0.1", "--rates", "8", "--burstiness", "4",
    )  # fmt: skip
    from_argv = CollectOptions.from_mapping({k: v for k, v in argv.items() if k in OPTION_NAMES})
    from_campaign = CollectOptions.from_mapping(
        {"backend": "openai", "model": "m", "find-capacity": True, "ttft_p99": 200,
         "tpot_p99": "40", "tolerance": 0.1, "rates": [8], "burstiness": 4}
    )  # fmt: skip
    assert from_argv == from_campaign
    plan = from_argv.search.plan(from_argv.measure.num_requests)
    assert (plan.ttft_p99_ms, plan.tpot_p99_ms, plan.tolerance) == (200, 40, 0.1)
    assert plan.min_requests == SEARCH_MIN_REQUESTS == 400  # the rule's own, unless given
    assert from_argv.search.plan(50).min_requests == 50
    assert from_argv.measure.plan().burstiness == 4
    assert CollectOptions.from_mapping({"backend": "openai"}).search.plan(None) is None
    assert SearchOptions().tolerance == DEFAULT_TOLERANCE  # the search's own default


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"find_capacity": True}, "--find-capacity needs --ttft-p99 MS"),
        ({"ttft_p99": 200, "tpot_p99": 9}, "--ttft-p99, --tpot-p99 without --find-capacity"),
        ({"tolerance": 0.1}, "--tolerance without --find-capacity"),
        ({"find_capacity": True, "ttft_p99": 200, "tolerance": 1}, "--tolerance: .*less than 1"),
        ({"find_capacity": True, "ttft_p99": 0}, "--ttft-p99: .*greater than 0"),
        ({"find_capacity": True, "ttft_p99": 200, "backend": "torch"}, "torch backend runs a"),
        ({"find_capacity": True, "ttft_p99": 200, "max_concurrency": 8}, "--max-concurrency"),
        ({"find_capacity": True, "ttft_p99": 200, "rates": "inf"}, "a finite rate in --rates"),
        ({"burstiness": 0}, "--burstiness: .*greater than or equal to 0.01"),
    ],
)
def test_a_capacity_search_that_cannot_work_is_refused(values, message):
    with pytest.raises(InputError, match=message):
        CollectOptions.from_mapping({"backend": "openai", **values})


def test_a_campaign_probe_carries_the_search_and_is_refused_for_torch():
    probe = {"backend": "openai", "model": "m", "base_url": "http://{node_ip}:8000",
             "args": {"find_capacity": True, "ttft_p99": 300}}  # fmt: skip
    campaign = check_campaign({"name": "c", "probes": [probe]}, "campaign.yaml")
    options = campaign.probes[0].options("rtx-4090", "10.0.0.2")
    assert options.search.find_capacity and options.search.ttft_p99 == 300
    torch_probe = {"backend": "torch", "model": "m", "args": {"find_capacity": True,
                                                              "ttft_p99": 300}}  # fmt: skip
    with pytest.raises(InputError, match="torch backend runs a closed-loop"):
        check_campaign({"name": "c", "probes": [torch_probe]}, "campaign.yaml")
