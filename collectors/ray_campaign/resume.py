"""A campaign's resume state: which jobs finished, kept beside the run files, so that the same
campaign given again runs only the rest. A finished run counts while its probe is unchanged and
its run file is still there."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fleetplan.collectors.ray_campaign.campaign_file import Campaign
from fleetplan.collectors.ray_campaign.jobs import Job
from fleetplan.core.errors import InputError
from fleetplan.core.files import read_at_most
from fleetplan.core.strict import load_json


class ResumeState:
    """What finished, kept beside the run files (`OUT/campaign-<name>.json`) so that the same
    campaign can be resumed."""

    def __init__(self, path: Path, campaign: Campaign, *, restart: bool):
        self.path = path
        self.jobs: dict[str, dict[str, Any]] = {}
        if path.exists() and not restart:
            try:
                data = read_at_most(path, limit=64 << 20)
            except (OSError, InputError) as error:
                raise InputError(f"unreadable campaign progress: {error}", file=str(path)) from None
            try:  # invalid JSON, or a key given twice: refused
                saved = load_json(data, file=str(path))
            except InputError as error:
                raise InputError(
                    f"unreadable campaign progress: {error.reason}", file=str(path)
                ) from None
            if not isinstance(saved, dict):
                raise InputError("campaign progress is not a JSON object", file=str(path))
            self.jobs = saved.get("jobs", {})
        self.campaign = campaign

    def done(self, job: Job) -> dict[str, Any] | None:
        entry = self.jobs.get(job.key)
        if entry and entry.get("state") == "done" and entry.get("probe") == job.probe.digest():
            run_file = self.path.parent / entry["run_file"]
            return entry if run_file.exists() else None
        return None

    def record(self, job: Job) -> None:
        self.jobs[job.key] = {
            "state": job.state,
            "probe": job.probe.digest(),
            "run_file": job.run_file,
            "host": job.where(),
            "attempts": job.attempts,
            "error": job.error,
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        body = {"campaign": self.campaign.name, "jobs": self.jobs}
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps(body, indent=1), encoding="utf-8")
        temporary.replace(self.path)
