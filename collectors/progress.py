"""Hooks a caller can set around a collection: told when each load level starts, and metadata
added to every run. `fleetplan collect --ray` uses them to show, per host, "level k of n" and to
stamp runs with the campaign; a plain `fleetplan collect` sets none."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

LevelObserver = Callable[[str, int, int], None]  # (shape name, level index from 0, levels)


@dataclass(frozen=True)
class Hooks:
    on_level: LevelObserver | None = None
    metadata: dict[str, str] = field(default_factory=dict)


_HOOKS: ContextVar[Hooks | None] = ContextVar("fleetplan_collect_hooks", default=None)


@contextmanager
def observing(hooks: Hooks) -> Iterator[None]:
    token = _HOOKS.set(hooks)
    try:
        yield
    finally:
        _HOOKS.reset(token)


def level_started(shape: str, level: int, levels: int) -> None:
    hooks = _HOOKS.get()
    if hooks is not None and hooks.on_level is not None:
        hooks.on_level(shape, level, levels)


def run_metadata() -> dict[str, str]:
    hooks = _HOOKS.get()
    return dict(hooks.metadata) if hooks is not None else {}
