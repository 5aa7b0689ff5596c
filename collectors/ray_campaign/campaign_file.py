"""A campaign: what to measure on which GPU types of a Ray cluster (YAML or JSON, validated).

    name: llama-8b-fleet
    per_type: 2                 # hosts of each GPU type (default: every host)
    retries: 1                  # a failed or lost host's task runs once more, then is reported
    probes:
      - name: chat-8b
        gpu_types: [rtx-4090, h100-pcie]        # default: every type the cluster has
        backend: vllm                           # openai | vllm | torch
        model: meta-llama/Llama-3.1-8B-Instruct
        suite: standard                         # or input_len / output_len
        rates: [1, 2, 4, 8, inf]
        num_requests: 200
        gpu_count: 2                            # GPUs per server (default: what Ray sees)
        args:                                   # any other `fleetplan collect` option
          tensor_parallel_size: 2               # (dashed or underscored, as on the command line)
          engine_arg: [--enforce-eager]
      - name: chat-8b-running-servers
        backend: openai
        model: llama-8b
        base_url: "http://{node_ip}:8000"       # each host's own server; or base_urls per type

Every probe becomes the options of one `fleetplan collect` on each host (`Probe.options`), checked
before any host starts: one measurement path whether a host runs alone or in a campaign.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from fleetplan.collectors.options import (
    OPTION_NAMES,
    CollectOptions,
    GpuLabel,
    http_url,
    option_name,
)
from fleetplan.core.contract import validation_message
from fleetplan.core.errors import InputError
from fleetplan.core.files import read_at_most
from fleetplan.core.gpus import canonical_gpu
from fleetplan.core.strict import load_json, load_yaml
from fleetplan.core.text import PlainName

# `fleetplan collect` options the campaign decides per host: a probe's `args` may not set them.
SET_BY_CAMPAIGN = frozenset(
    {"out", "ingest", "warehouse", "wait", "ray", "campaign", "gpu_types", "per_type", "restart"}
)
# The probe's own settings that are `fleetplan collect` options too: said once, here or in `args`.
_SETTINGS = (
    "backend",
    "model",
    "tokenizer",
    "suite",
    "input_len",
    "output_len",
    "rates",
    "num_requests",
    "warmup",
    "seed",
    "gpu_count",
)


_Url = Annotated[str, Field(max_length=2000), AfterValidator(http_url)]

MAX_CAMPAIGN_BYTES = 1 << 20  # a campaign is a page of settings


class Probe(BaseModel):
    # inf in rates: written as Infinity where a probe's digest is made, not as null
    model_config = ConfigDict(extra="forbid", frozen=True, ser_json_inf_nan="constants")

    name: Annotated[str, Field(min_length=1, max_length=80), PlainName] | None = None
    gpu_types: tuple[GpuLabel, ...] | None = None
    backend: Literal["openai", "vllm", "torch"]
    model: Annotated[str, Field(min_length=1, max_length=500), PlainName]
    base_url: _Url | None = None
    base_urls: dict[GpuLabel, _Url] | None = None
    tokenizer: Annotated[str, Field(max_length=4096), PlainName] | None = None
    suite: Literal["standard"] | None = None
    input_len: int | None = Field(None, ge=1)
    output_len: int | None = Field(None, ge=1)
    rates: tuple[float | Literal["inf"], ...] | None = None
    num_requests: int | None = Field(None, ge=1)
    warmup: int | None = Field(None, ge=0)
    seed: int | None = None
    gpu_count: int | None = Field(None, ge=1)
    args: dict[str, Any] = Field(default_factory=dict)  # option name -> value

    @field_validator("gpu_types", mode="before")
    @classmethod
    def _types(cls, value):
        if isinstance(value, str):
            return tuple(value.split(","))
        if isinstance(value, list | tuple):  # YAML reads `[4090]` as a number
            return tuple(str(v) if isinstance(v, int) else v for v in value)
        return value

    @field_validator("base_urls", mode="before")
    @classmethod
    def _canonical_keys(cls, value):
        if not isinstance(value, dict):
            return value
        return {
            canonical_gpu(str(gpu)).gpu_id if isinstance(gpu, str | int) else gpu: url
            for gpu, url in value.items()
        }

    def digest(self) -> str:
        """Names what this probe measures: a finished run counts on resume only while its
        probe is unchanged."""
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:16]

    @field_validator("args", mode="before")
    @classmethod
    def _mapping(cls, value: object) -> object:
        if isinstance(value, list | tuple):  # the command-line words of earlier versions
            raise ValueError(
                "args is a mapping of option name to value, e.g. {tensor_parallel_size: 2, "
                "engine_arg: [--enforce-eager]}"
            )
        return value

    @field_validator("args")
    @classmethod
    def _options(cls, value: dict[str, Any]) -> dict[str, Any]:
        names = {}
        for key, item in value.items():
            name = option_name(str(key))
            if name in SET_BY_CAMPAIGN:
                raise ValueError(f"{name} is set by the campaign, not a probe")
            if name not in OPTION_NAMES:
                raise ValueError(f"{name} is not a `fleetplan collect` option")
            names[name] = item
        return dict(sorted(names.items()))  # the digest does not depend on their order

    @model_validator(mode="after")
    def _said_once(self) -> Probe:
        given = {name for name in _SETTINGS if getattr(self, name) is not None}
        if self.base_url or self.base_urls:
            given.add("base_url")
        if twice := sorted(given & set(self.args)):
            raise ValueError(f"{twice[0]} is given twice: as the probe's setting and in its args")
        return self

    def label(self, index: int) -> str:
        if self.name:
            return self.name
        shape = f"{self.input_len}-{self.output_len}" if self.input_len else "standard"
        return f"{index + 1}-{self.backend}-{self.model.rsplit('/', 1)[-1]}-{shape}"

    def base_url_for(self, gpu_type: str, node_ip: str) -> str | None:
        url = (self.base_urls or {}).get(gpu_type) or self.base_url
        return url.replace("{node_ip}", node_ip) if url else None

    def types_without_url(self, gpu_types: Iterable[str]) -> list[str]:
        """The GPU types among `gpu_types` this probe has no server URL for, where it needs one
        (the openai backend measures a running server; vllm and torch start their own)."""
        if self.backend != "openai" or self.base_url:
            return []
        types = dict.fromkeys(canonical_gpu(str(t)).gpu_id for t in gpu_types)
        return [t for t in types if t not in (self.base_urls or {})]

    def options(self, gpu_type: str, node_ip: str) -> CollectOptions:
        """The `fleetplan collect` options of this probe on one host (checked again)."""
        settings = {name: getattr(self, name) for name in _SETTINGS}
        settings["base_url"] = self.base_url_for(gpu_type, node_ip)
        return CollectOptions.from_mapping({**settings, **self.args})


class Campaign(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=80, pattern=r"^[A-Za-z0-9._-]+$")
    per_type: int | None = Field(None, ge=1)
    retries: int = Field(1, ge=0, le=3)
    probes: tuple[Probe, ...] = Field(min_length=1)

    def labels(self) -> list[str]:
        return [probe.label(i) for i, probe in enumerate(self.probes)]

    @model_validator(mode="after")
    def _distinct_names(self) -> Campaign:
        labels = self.labels()
        if twice := sorted({label for label in labels if labels.count(label) > 1}):
            raise ValueError(f"two probes are named {twice[0]!r}: each probe needs its own name")
        return self


def load_campaign(path: Path) -> Campaign:
    """Read and check a campaign file; every probe's options are checked as each host will
    check them, so a mistake is reported before any host starts."""
    # a regular file, bounded (not /dev/zero, not a FIFO that never ends), as ingest reads
    data = read_at_most(path, limit=MAX_CAMPAIGN_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("cannot read it: not UTF-8 text", file=str(path)) from None
    # as ingest reads files: no YAML anchors or aliases, no key given twice (core.strict)
    if path.suffix.lower() == ".json" or text.lstrip().startswith("{"):
        raw = load_json(text, file=str(path))
    else:
        raw = load_yaml(text, file=str(path))
    return check_campaign(raw, str(path))


def check_campaign(raw: object, source: str) -> Campaign:
    try:
        campaign = Campaign.model_validate(raw)
    except ValidationError as error:
        problem = validation_message(error)
        raise InputError(problem.reason, file=source, field=problem.field) from None
    for label, probe in zip(campaign.labels(), campaign.probes, strict=True):
        if probe.backend == "openai" and not (probe.base_url or probe.base_urls):
            raise InputError(
                f"probe {label}: the openai backend needs base_url (e.g. "
                '"http://{node_ip}:8000") or base_urls per GPU type',
                file=source,
                field="base_url",
            )
        if lacking := probe.types_without_url(probe.gpu_types or ()):
            raise InputError(
                f"probe {label}: base_urls has no URL for {', '.join(lacking)}, which its "
                "gpu_types name: add them to base_urls, or give base_url for every other type",
                file=source,
                field="base_urls",
            )
        try:  # checked, and its suite planned, as the host will
            probe.options("gpu", "127.0.0.1").measure.plan()
        except InputError as error:
            raise InputError(f"probe {label}: {error.detail}", file=source) from None
    return campaign


def campaign_from_options(options: CollectOptions) -> Campaign:
    """The campaign of a command line without a campaign file: one probe with its options."""
    top = {"backend": options.backend, "model": options.model, "base_url": options.server.base_url}
    args = {k: v for k, v in options.changed().items() if k not in top}
    model = str(options.model)
    probe = Probe(name=f"{options.backend}-{model.rsplit('/', 1)[-1]}", **top, args=args)
    # Named by its settings: the same command resumes, a different one starts afresh.
    return check_campaign(
        {"name": f"collect-{probe.digest()[:8]}", "probes": [probe]}, "the command line"
    )
