"""Typed access to the values of a result file, with errors that name the file, where in it,
and the key."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fleetplan.core.errors import InputError


class Reader:
    """Typed access to one result object, with errors that name the object and the key."""

    def __init__(self, obj: dict[str, Any], file: str, where: str):
        self.obj, self.file, self.where = obj, file, where

    def error(self, key: str, message: str) -> InputError:
        return InputError(f"{self.where}: {message}", file=self.file, field=key)

    def number(self, key: str, *, required: bool = False, integer: bool = False) -> Any:
        if key not in self.obj or self.obj[key] is None:
            if required:
                raise self.error(key, "missing")
            return None
        value = self.obj[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(key, f"expected a number, got {type(value).__name__} {value!r:.40}")
        if isinstance(value, int) and abs(value) > 2**53:
            raise self.error(key, f"the number {str(value)[:20]}... is implausibly large")
        if math.isnan(value) or math.isinf(value):
            raise self.error(key, f"expected a finite number, got {value}")
        if value < 0:
            raise self.error(key, f"expected a number >= 0, got {value}")
        if integer:
            if value != int(value):
                raise self.error(key, f"expected a whole number, got {value}")
            return int(value)
        return float(value)

    def text(self, key: str) -> str | None:
        value = self.obj.get(key)
        if value is None:
            return None
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        if not isinstance(value, str):
            raise self.error(key, f"expected text, got {type(value).__name__}")
        return value.strip() or None

    def positive_int_text(self, key: str) -> int | None:
        value = self.obj.get(key)
        if value is None:
            return None
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value
        digits = value.strip() if isinstance(value, str) else ""
        if digits.isdecimal() and len(digits) <= 9 and int(digits) >= 1:
            return int(digits)
        raise self.error(key, f"expected a whole number >= 1, got {value!r:.40}")

    def array(self, key: str, length: int | None) -> np.ndarray | None:
        if key not in self.obj or self.obj[key] is None:
            return None
        value = self.obj[key]
        if not isinstance(value, list):
            raise self.error(key, f"expected a list, got {type(value).__name__}")
        try:
            values = np.asarray(value) if value else np.zeros(0)
        except (TypeError, ValueError, OverflowError):  # ragged, nested, or huge
            raise self.error(key, "expected a flat list of numbers") from None
        if values.ndim != 1 or values.dtype.kind not in "if":
            raise self.error(key, "expected a list of numbers")
        values = values.astype(float)
        self._check_values(key, values)
        if length is not None and values.size != length:
            raise self.error(key, f"has {values.size} entries but ttfts has {length}")
        return values

    def _check_values(self, key: str, values: np.ndarray) -> None:
        if values.size and not np.isfinite(values).all():
            raise self.error(key, "contains NaN or infinity")
        if values.size and (values < 0).any():
            raise self.error(key, f"contains a negative value ({values.min()})")


def hardware(
    options: Any,
    file: str,
    *,
    label: str | None = None,
    count: int | None = None,
    tool: str = "this tool",
) -> tuple[str, str, int]:
    """(canonical GPU id, label, GPUs per server): from the file where it says, else from what
    the user gave (`--gpu`, `--gpu-count`, or the upload form); asked for, never guessed."""
    from fleetplan.core.gpus import canonical_gpu

    given = options.gpu
    if (
        given is not None
        and label is not None
        and canonical_gpu(given).gpu_id != canonical_gpu(label).gpu_id
    ):
        raise InputError(
            f"the file says {label!r} but --gpu says {given!r}", file=file, field="gpu"
        )
    label = label or options.gpu
    count = count or options.gpu_count
    if label is None or count is None:
        missing = " and ".join(
            n for n, v in (("--gpu", label), ("--gpu-count", count)) if v is None
        )
        raise InputError(
            f"{tool} does not record the hardware: give {missing} (in the app: "
            "the GPU fields above the upload)",
            file=file,
            field="gpu",
        )
    return canonical_gpu(label).gpu_id, label, int(count)


def model_name(options: Any, file: str, found: str | None, key: str = "model") -> str:
    """The model the file names, else the one the user gave; a contradiction is an error."""
    if options.model is not None and found is not None and options.model != found:
        raise InputError(
            f"the file says {found!r} but --model says {options.model!r}", file=file, field=key
        )
    if found is not None and not isinstance(found, str):
        raise InputError(f"expected the model's name, got {found!r:.40}", file=file, field=key)
    chosen = found or options.model
    if not chosen:
        raise InputError("the file does not name the model: give --model", file=file, field=key)
    return chosen


def number(value: Any, *, file: str, field: str, where: str = "") -> float:
    """A finite, non-negative, plausible number, as float; InputError naming the field else."""
    prefix = f"{where}: " if where else ""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(
            f"{prefix}expected a number, got {type(value).__name__} {value!r:.40}",
            file=file,
            field=field,
        )
    if isinstance(value, int) and abs(value) > 2**53:
        raise InputError(
            f"{prefix}the number {str(value)[:20]}... is implausibly large", file=file, field=field
        )
    if not math.isfinite(value):
        raise InputError(f"{prefix}expected a finite number, got {value}", file=file, field=field)
    if value < 0:
        raise InputError(f"{prefix}expected a number >= 0, got {value}", file=file, field=field)
    return float(value)


def build(contract: Any, file: str, where: str = "", /, **values: Any) -> Any:
    """A contract object, or an InputError naming the field (never pydantic's raw error)."""
    from pydantic import ValidationError

    from fleetplan.core.contract import validation_message

    try:
        return contract(**values)
    except ValidationError as error:
        problem = validation_message(error)
        reason = f"{where}: {problem.reason}" if where else problem.reason
        raise InputError(reason, file=file, field=problem.field) from None


def timestamp(value: Any) -> Any:
    """A Unix time in seconds as a naive UTC datetime; None when absent or implausible."""
    from datetime import UTC, datetime

    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    try:
        return datetime.fromtimestamp(value, UTC).replace(tzinfo=None)
    except (OverflowError, OSError, ValueError):
        return None


def finite(value: Any) -> float | None:
    """A JSON number as a finite float, or None (not a number, NaN, inf, or an integer too big
    for a float)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, int) and abs(value) > 2**53:
        return None
    return float(value) if math.isfinite(value) else None
