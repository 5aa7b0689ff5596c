"""fleetplan run files (`"format": "fleetplan.runs"`): the data contract as JSON, strictly
validated. Collectors write them; the bundled sample data ships as one."""

from __future__ import annotations

from pathlib import PurePath

from pydantic import ValidationError

from fleetplan.contract import Run, RunFile, validation_message
from fleetplan.errors import InputError

IMPORTER = "fleetplan-runs"
VERSION = "1"
FORMAT = "fleetplan.runs"


def parse(file: str, data: bytes, sha256: str) -> tuple[list[Run], list[str]]:
    try:
        run_file = RunFile.model_validate_json(data)
    except ValidationError as error:
        raise validation_message(error, file=file) from None
    runs = []
    seen: set[tuple[str, int]] = set()
    for position, run in enumerate(run_file.runs):
        fill = {}
        if run.source_file is None:
            fill["source_file"] = PurePath(file).name
        if run.source_sha256 is None:
            fill["source_sha256"] = sha256
        if run.source_index is None:
            fill["source_index"] = position
        run = run.model_copy(update=fill) if fill else run
        origin = (run.source_sha256, run.source_index)
        if origin in seen:
            raise InputError(
                f"two runs claim the same origin (source_sha256 {origin[0][:12]}..., source_index "
                f"{origin[1]})",
                file=file,
                field=f"runs.{position}.source_index",
            )
        seen.add(origin)
        runs.append(run)
    return runs, []
