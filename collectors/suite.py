"""The standard probe suite: fixed seed, synthetic prompts of exact token lengths, `ignore_eos`,
a warm-up, then load levels in increasing order (docs/definitions.md, section 2)."""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

STANDARD_RATES: tuple[float, ...] = (1, 2, 4, 8, 16, 32, math.inf)


class TokenShape(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    input_len: Annotated[int, Field(ge=1, le=1_000_000)]
    output_len: Annotated[int, Field(ge=1, le=1_000_000)]


STANDARD_SHAPES: tuple[TokenShape, ...] = (
    TokenShape(name="chat", input_len=256, output_len=256),
    TokenShape(name="rag", input_len=2048, output_len=256),
    TokenShape(name="generation", input_len=256, output_len=1024),
)


class Suite(BaseModel):
    """What one `fleetplan collect` measures: token shapes x load levels (and how they load)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    shapes: Annotated[tuple[TokenShape, ...], Field(min_length=1)]
    rates: Annotated[tuple[float, ...], Field(min_length=1)] = STANDARD_RATES
    num_requests: Annotated[int, Field(ge=1, le=1_000_000)] = 200
    warmup_requests: Annotated[int, Field(ge=0, le=10_000)] = 4
    seed: int = 0
    burstiness: Annotated[float, Field(gt=0)] = 1.0
    max_concurrency: Annotated[int | None, Field(ge=1)] = None  # a cap on requests in flight

    @field_validator("rates")
    @classmethod
    def _increasing(cls, rates: tuple[float, ...]) -> tuple[float, ...]:
        if any(not (r > 0) for r in rates):
            raise ValueError("rates must be > 0 (inf for all requests at once)")
        return tuple(sorted(rates))


def standard_suite(**overrides: object) -> Suite:
    return Suite(shapes=STANDARD_SHAPES, **overrides)


def parse_rates(text: str) -> tuple[float, ...]:
    """'1,2,4,inf' -> (1.0, 2.0, 4.0, inf); raises ValueError naming the bad entry."""
    rates = []
    for part in text.split(","):
        part = part.strip().lower()
        if part in {"inf", "infinity", "max"}:
            rates.append(math.inf)
            continue
        try:
            value = float(part)
        except ValueError:
            raise ValueError(f"not a rate: {part!r} (use numbers of requests/s or inf)") from None
        if not value > 0 or math.isnan(value):
            raise ValueError(f"a rate must be > 0, got {part}")
        rates.append(value)
    return tuple(rates)
