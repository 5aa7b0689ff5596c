"""Level events: what a caller can hear from a collection while it runs, and metadata it adds to
every run. A Ray campaign uses them to show, per host, "level k of n" and to stamp runs with the
campaign; a plain `fleetplan collect` sets none. (Not the campaign's resume state, which is in
`ray_campaign.resume`, nor the progress bars, which `collect` draws.)"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

LevelObserver = Callable[[str, int, int], None]  # (shape name, level index from 0, levels)


@dataclass(frozen=True)
class LevelEvents:
    on_level: LevelObserver | None = None
    metadata: dict[str, str] = field(default_factory=dict)


# A context variable, not a parameter: the backends stay unaware of who listens.
_EVENTS: ContextVar[LevelEvents | None] = ContextVar("fleetplan_level_events", default=None)


@contextmanager
def observing(events: LevelEvents) -> Iterator[None]:
    token = _EVENTS.set(events)
    try:
        yield
    finally:
        _EVENTS.reset(token)


def level_started(shape: str, level: int, levels: int) -> None:
    events = _EVENTS.get()
    if events is not None and events.on_level is not None:
        events.on_level(shape, level, levels)


def run_metadata() -> dict[str, str]:
    events = _EVENTS.get()
    return dict(events.metadata) if events is not None else {}
