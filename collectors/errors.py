"""The collectors' own error: a collection that could not start or could not go on. (Prompts have
theirs, `prompts.PromptError`; a rejected option is `core.errors.InputError`.)"""

from __future__ import annotations

from fleetplan.core.errors import FleetplanError


class CollectError(FleetplanError):
    """The collection could not start or could not go on."""
