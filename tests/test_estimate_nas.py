"""NAS models (planner/capacity/nas.py): Llama-Nemotron's `block_configs`, a shape per layer
(attention with its own KV heads, none, or a linear layer; an MLP of its own width, none, or a
linear layer), sized as vLLM's nemotron_nas.py builds them: parameters against the card, the KV
cache over the layers that attend, tensor parallelism per layer, a step's all-reduces, the
identical-architecture test layer by layer, the estimate answering and refusals naming the key.
"""

from __future__ import annotations

import json

import pytest

from fleetplan.core.errors import InputError
from fleetplan.planner.capacity.architecture import (
    architecture_from_config,
    estimated_parameters,
    tensor_parallel_problem,
)
from fleetplan.planner.capacity.envelope import GIB, Hardware, server_envelope
from fleetplan.planner.capacity.nas import mlp_width
from fleetplan.planner.estimate.serving import Server, Shape
from fleetplan.planner.estimate.shape import identical_architectures, same_shape
from fleetplan.services.estimate import bundled_specs


def _block(group=None, mult=None, *, attention="attention", mlp="mlp") -> dict:
    """One block_configs entry as the checkpoints write it."""
    return {
        "attention": {
            "n_heads_in_group": group, "no_op": attention == "none",
            "replace_with_linear": attention == "linear", "window_length": None,
            "num_sink_tokens": None, "sparsify": None, "unshifted_sink": False,
        },
        "ffn": {"ffn_mult": mult, "no_op": mlp == "none", "replace_with_linear": mlp == "linear",
                "sparsify": None},
    }  # fmt: skip


def _nas(blocks: list[dict], **extra) -> dict:
    """A nemotron-nas config.json of Llama-3.3-70B's width around `blocks`."""
    return {
        "model_type": "nemotron-nas", "architectures": ["DeciLMForCausalLM"],
        "hidden_size": 8192, "num_attention_heads": 64, "num_key_value_heads": None,
        "intermediate_size": None, "num_hidden_layers": len(blocks), "vocab_size": 128256,
        "max_position_embeddings": 131072, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "block_configs": blocks,
    } | extra  # fmt: skip


# Llama-3.3-Nemotron-Super-49B-v1's layers (card: 49.9B): 49 of 80 attend, with 8 KV heads;
# 31 have no attention; MLP multipliers from 0.5 to 5.25 (widths 2,816 to 28,672)
SUPER_49B = _nas(
    [_block(8, 2.625)]
    + [_block(8, 5.25)] * 48
    + [_block(mult=m, attention="none") for m in [1.3125] * 10 + [1.0] * 8 + [0.5] * 6]
    + [_block(mult=m, attention="none") for m in [2.625] * 5 + [3.28125, 5.25]]
)
# A shape of the 51B's kinds (variable KV heads, attention replaced by a linear layer) and of the
# Ultra's (a layer with neither attention nor MLP), 6 layers
MIXED = _nas(
    [
        _block(8, 2.0),  # 8 KV heads
        _block(16, 2.0),  # 4
        _block(64, 1.0),  # 1
        _block(mult=2.0, attention="linear"),
        _block(8, mlp="linear"),
        _block(attention="none", mlp="none"),
    ]
)


def arch(config: dict):
    return architecture_from_config("acme/nas", config, source="test")


def test_the_mlp_width_is_vllms():
    """int(2 x ffn_mult x hidden / 3), rounded up to a multiple of 256."""
    assert mlp_width(5.25, 8192) == 28672  # 28,672: a multiple already
    assert mlp_width(1.3125, 8192) == 7168
    assert mlp_width(0.5, 8192) == 2816  # 2,730 rounded up
    assert mlp_width(3.28125, 8192) == 17920


def test_super_49b_against_its_card():
    assert estimated_parameters(SUPER_49B) == pytest.approx(49.9e9, rel=0.005)
    found = arch(SUPER_49B)
    assert found.weight_bytes == pytest.approx(2 * estimated_parameters(SUPER_49B))
    assert (found.layers, found.attention_layers, found.kv_heads) == (80, 49, 8)
    # 49 layers x 8 KV heads x 128 x key and value x 2 bytes: 80 layers would be 327,680
    assert found.kv_bytes_per_token == 49 * 8 * 128 * 2 * 2 == 200_704
    assert "49 of 80 layers attend (8 KV heads each; 31 without attention)" in found.source
    assert "MLP widths 2,816 to 28,672" in found.source


def test_each_layer_is_counted_as_it_is_built():
    found = arch(MIXED)
    hidden, attention_q_o = 8192, 2 * 8192 * 8192
    kv_heads = [8, 4, 1, 8]  # the attending layers: the 4th is a linear layer, the 6th none
    expected = (
        2 * 128256 * hidden  # untied embeddings
        + sum(attention_q_o + 2 * hidden * k * 128 for k in kv_heads)
        + hidden * hidden  # the linear attention
        + 3 * hidden * (3 * mlp_width(2.0, hidden) + mlp_width(1.0, hidden))
        + hidden * hidden  # the linear MLP
    )
    assert estimated_parameters(MIXED) == expected
    assert found.attention_layers == 4 and found.kv_heads == 8
    assert found.kv_bytes_per_token == 2 * (8 + 4 + 1 + 8) * 128 * 2
    assert "8 KV heads by layer" in found.source and "1 with a linear layer" in found.source
    # a step's all-reduces: the blocks that run, 5 attentions (one linear) and 5 MLPs
    assert found.sublayers == 10 and arch(SUPER_49B).sublayers == 49 + 80


def test_layers_of_fewer_kv_heads_than_gpus_are_replicated_layer_by_layer():
    found = arch(MIXED)
    # over 8 GPUs: the 8-head layers split, the 4-head one is held twice, the 1-head one 8 times
    assert found.kv_replicas(8) == pytest.approx((8 + 8 + 8 + 8) / (8 + 4 + 1 + 8))
    assert found.kv_replicas(1) == 1.0
    spec = bundled_specs()["h100-sxm"]
    server = Server(Shape.of(found, 8192), spec, 8)
    moved, *_ = server.terms(10, 10_000, 0, 0)
    weights = found.read_bytes(10) / 8
    per_gpu = 10_000 * 2 * (1 + 1 + 1 + 1) * 128 * 2  # each GPU: one KV head of each layer
    assert (moved * spec.bandwidth - weights) == pytest.approx(per_gpu)


def test_tensor_parallelism_is_checked_layer_by_layer():
    """48 heads: KV heads of 4 and 3 by layer. 4 GPUs divide the heads and the first layer's
    KV heads but neither divide nor are a multiple of the other's 3 (vLLM refuses it); 12 GPUs
    are a multiple of both (each GPU a copy of a head)."""
    config = _nas([_block(12, 2.0), _block(16, 2.0)], num_attention_heads=48, hidden_size=6144)
    found = arch(config)
    assert found.blocks is not None and found.blocks.kv_heads == (4, 3)
    problem = tensor_parallel_problem(found, 4)
    assert problem is not None and "3 KV heads of a layer" in problem
    assert tensor_parallel_problem(found, 12) is None
    assert tensor_parallel_problem(found, 1) is None
    assert found.kv_replicas(12) == pytest.approx(24 / 7)


def test_the_bound_holds_the_kv_of_the_layers_that_attend():
    found = arch(SUPER_49B)
    hardware = Hardware("h100-sxm", 80, 3350)
    bounds = server_envelope(
        found, hardware, gpu_count=2, tensor_parallel_size=2, input_tokens=1000, output_tokens=200
    )
    free = 2 * 80 * GIB - found.weight_bytes
    assert bounds.kv_tokens == pytest.approx(free / 200_704)


def test_two_nas_shapes_are_identical_only_layer_by_layer():
    """Two layers' MLP widths swapped: the same totals (layers, KV, weights), other blocks."""
    swapped_blocks = list(SUPER_49B["block_configs"])
    swapped_blocks[0], swapped_blocks[49] = swapped_blocks[49], swapped_blocks[0]
    swapped = arch(SUPER_49B | {"block_configs": swapped_blocks})
    found = arch(SUPER_49B)
    assert swapped.kv_bytes_per_token == found.kv_bytes_per_token
    assert swapped.weight_bytes == found.weight_bytes and swapped.layers == found.layers
    assert not same_shape(found, swapped)
    again = architecture_from_config("acme/nas-copy", dict(SUPER_49B), source="test")
    assert identical_architectures(found, [("acme/nas-copy", again), ("x", swapped)]) == [
        "acme/nas-copy"
    ]
    # a Llama of the same layers, KV heads and weights is not a NAS model's shape
    plain = architecture_from_config(
        "acme/plain", {k: v for k, v in SUPER_49B.items() if k != "block_configs"}
        | {"num_key_value_heads": 8, "intermediate_size": 28672}, source="test"
    )  # fmt: skip
    assert not same_shape(found, plain)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda b: b[1]["attention"].update(window_length=4096),
         "block_configs[1].attention.window_length"),
        (lambda b: b[0]["attention"].update(n_heads_in_group=None),
         "block_configs[0].attention.n_heads_in_group"),
        (lambda b: b[1]["attention"].update(n_heads_in_group=7),
         "block_configs[1].attention.n_heads_in_group"),
        (lambda b: b[2]["ffn"].update(ffn_mult=None), "block_configs[2].ffn.ffn_mult"),
        (lambda b: b[2]["ffn"].update(moe={"num_local_experts": 8}), "block_configs[2].ffn.moe"),
        (lambda b: b[0]["attention"].update(no_op="false"), "block_configs[0].attention.no_op"),
        (lambda b: b.pop(), "block_configs"),
        (lambda b: [x["attention"].update(no_op=True) for x in b], "block_configs"),
    ],
    ids=["window", "no-group", "group-not-dividing", "no-width", "experts", "flag-not-bool",
         "one-short", "no-attention"],
)  # fmt: skip
def test_what_it_cannot_size_is_refused_naming_the_key(change, field):
    blocks = json.loads(json.dumps(MIXED["block_configs"]))
    change(blocks)
    with pytest.raises(InputError) as error:
        arch(MIXED | {"block_configs": blocks})
    assert error.value.field == field


@pytest.mark.slow  # runs the command: 1 s or more
def test_capacity_estimates_a_nas_model(cli, sample_warehouse_path, tmp_path):
    from tests.support.estimates import estimate_capacity

    common = {"model": "acme/nas", "config": SUPER_49B, "gpu": "h100-sxm", "count": 2}
    common |= {"lengths": (1000, 200), "targets": (2000, 100)}
    done = estimate_capacity(cli, sample_warehouse_path, tmp_path, **common)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["basis"] == "estimated" and report["capacity_rps"] > 0
    bounds = report["bounds"]
    assert bounds["nas_layers"].startswith("a NAS model (block_configs): 49 of 80 layers attend")
    assert "49 of 80 layers attend" in bounds["architecture"]
    text = estimate_capacity(cli, sample_warehouse_path, tmp_path, **common, json_out=False)
    assert text.returncode == 0
    assert "Layers:        a NAS model (block_configs): 49 of 80" in text.stdout
