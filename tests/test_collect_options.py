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
    non_default,
)
from fleetplan.collectors.ray_campaign.campaign_file import SET_BY_CAMPAIGN
from fleetplan.collectors.run import BACKENDS
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
