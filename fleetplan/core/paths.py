"""Where fleetplan's own files are, for a checkout (editable install) and a normal install alike.

An editable install runs from the checkout: sample_data/ sits beside the `fleetplan/` folder and
the default warehouse is `var/fleetplan.duckdb` in the checkout. A normal install carries the
sample data inside the package (`fleetplan/sample_data/`) and keeps its default warehouse under the
working directory (`./var/fleetplan.duckdb`), since site-packages is no place to write.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]  # the `fleetplan` package folder


def checkout_root() -> Path | None:
    """The project checkout this package runs from, or None for a normal install."""
    root = _PACKAGE.parent
    return root if (root / "pyproject.toml").is_file() and (root / "sample_data").is_dir() else None


def project_root() -> Path:
    """The checkout, else the working directory: where `var/` (the default warehouse) lives."""
    return checkout_root() or Path.cwd()


def sample_data_dir() -> Path:
    """The bundled sample data: the checkout's sample_data/, else the copy inside the package."""
    root = checkout_root()
    return root / "sample_data" if root else _PACKAGE / "sample_data"
