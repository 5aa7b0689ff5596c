"""What the Ray campaign tests share: the GPU types the local cluster's nodes declare, the
`fleetplan collect --ray` driver process, a campaign file and a node as `ray.nodes()` lists it.
(The cluster itself is the `ray_cluster` fixture in tests/conftest.py.)"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path

from tests.support.processes import interruptible

TYPES = {"rtx-4090": "fleetplan-gpu:rtx-4090", "h100-pcie": "fleetplan-gpu:h100-pcie"}


class Driver:
    """`fleetplan collect --ray ...` as a process, its progress lines read as they come."""

    def __init__(self, *args):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "fleetplan", "collect", *map(str, args)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=interruptible,  # the tests Ctrl-C it
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stderr:
            self.lines.put(line)

    def wait_for(self, *needles: str, timeout: float = 120) -> str:
        while True:
            try:
                line = self.lines.get(timeout=timeout)
            except queue.Empty:
                self.process.kill()
                seen = "".join(self.seen)
                raise AssertionError(f"no line with {needles}; so far:\n{seen}") from None
            self.seen.append(line)
            if all(n in line for n in needles):
                return line

    def finish(self, timeout: float = 300) -> tuple[int, str, str]:
        out = self.process.stdout.read()
        self.process.wait(timeout=timeout)
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        return self.process.returncode, out, "".join(self.seen)


def campaign_file(
    tmp_path: Path, urls: dict[str, str], name: str = "fleet", num_requests: int = 10
) -> Path:
    campaign = {
        "name": name,
        "retries": 1,
        "probes": [
            {
                "name": "chat",
                "backend": "openai",
                "model": "stream-test",
                "base_urls": urls,
                "input_len": 16,
                "output_len": 16,
                "rates": [2, "inf"],
                "num_requests": num_requests,
                "warmup": 1,
            }
        ],
    }
    path = tmp_path / "campaign.json"
    path.write_text(json.dumps(campaign))
    return path


def ray_node(n: int, name: str, resources: dict, alive: bool = True) -> dict:
    """A node as `ray.nodes()` lists it."""
    return {
        "NodeID": str(n) * 56,
        "Alive": alive,
        "NodeManagerAddress": f"10.0.0.{n}",
        "NodeManagerHostname": name,
        "Resources": resources,
    }
