"""Where the tests find the checkout (the shared data beside it: benchmarks/inputs/shared_data)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAIN = str(ROOT / "app" / "main.py")  # the dashboard's entry point, as AppTest.from_file takes it
