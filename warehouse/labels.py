"""The traffic a run was measured with, where its file does not say: a benchmark dataset's name,
or synthetic prompts of fixed input/output tokens (recorded as `fleetplan collect`, GuideLLM and
GenAI-Perf runs are: dataset "synthetic" with the lengths). The user gives it with the upload
page's Dataset field (or `ImportOptions.dataset`); like the GPU, it fills what a file leaves
out and never overrides what the file says: a file that says otherwise is refused."""

from __future__ import annotations

from dataclasses import replace

from fleetplan.core.errors import InputError
from fleetplan.core.text import plain_name
from fleetplan.warehouse.importers.base import ImportOptions, ParsedFile, resolve

SYNTHETIC = "synthetic"
# The server's free label (`Run.variant`, `--variant`) is filled the same way: where a run has
# none; a run whose file names another is refused.
_TRAFFIC = ("dataset", "input_len", "output_len", "variant")
_LONGEST_NAME = 500  # the data contract's limit on text


def check_traffic(options: ImportOptions, file: str) -> None:
    """Synthetic traffic needs both lengths; lengths are whole numbers >= 1; a dataset's name
    is short text."""
    for key in ("dataset", "variant"):
        value = getattr(options, key)
        if value is not None and not 0 < len(value.strip()) <= _LONGEST_NAME:
            raise InputError(
                f"{options.name_of(key)} must be a name of 1 to {_LONGEST_NAME} characters",
                file=file,
            )
        if value is not None:
            try:
                plain_name(value)
            except ValueError as error:
                raise InputError(f"{options.name_of(key)}: {error}", file=file) from None
    for key in ("input_len", "output_len"):
        value = getattr(options, key)
        if value is not None and (not isinstance(value, int) or value < 1):
            raise InputError(f"{options.name_of(key)} must be a whole number >= 1", file=file)
    if options.dataset == SYNTHETIC and (options.input_len is None or options.output_len is None):
        lengths = options.ask_for("input_len", "output_len")
        raise InputError(f"synthetic traffic needs its token lengths: {lengths}", file=file)


def label_traffic(parsed: ParsedFile, options: ImportOptions) -> ParsedFile:
    """The file's runs with the user's traffic label where they have none (InputError when a
    run says otherwise)."""
    given = {key: getattr(options, key) for key in _TRAFFIC if getattr(options, key) is not None}
    if "variant" in given:
        given["variant"] = given["variant"].strip()
    if not given:
        return parsed
    name = parsed.file.name
    check_traffic(options, name)
    runs = []
    for position, run in enumerate(parsed.runs):
        where = f"run {position + 1} of {len(parsed.runs)}"
        for key, value in given.items():
            resolve(
                getattr(run, key),
                value,
                flag=options.name_of(key),
                file=name,
                field=key,
                where=where,
            )
        # Checked above (whole numbers >= 1, text): the contract's rules for these fields.
        gaps = {key: value for key, value in given.items() if getattr(run, key) is None}
        runs.append(run.model_copy(update=gaps) if gaps else run)
    return replace(parsed, runs=tuple(runs))
