"""`fleetplan collect --ray`: a campaign, the standard probe on every selected host of a Ray
cluster. (A campaign, not a "fleet": in the planner a fleet is the GPUs it recommends.)

Hosts say what GPU they have with a custom resource, `fleetplan-gpu:<type>` (`ray start
--resources='{"fleetplan-gpu:rtx-4090": 1}'`), or with Ray's own `accelerator_type:<name>` label
where it names the card unambiguously (Ray calls every H100 "H100": PCIe or SXM is not known, so
such hosts are typed "H100" unless they say more). One task per (probe, GPU type, host slot) is
pinned to its host and asks for all of that host's type resource and GPUs, so a host runs one
probe at a time. Each task runs `collectors.run.execute`, the code path of a single-host `fleetplan
collect`, with the probe's options, and returns its run file to the driver, which writes it under
`--out` and, with `--ingest`, loads everything once at the end (the warehouse keeps one writer).

A task that fails or loses its host is run once more (on the same host if it is still there, else
on another host of the same type), then reported; the command exits 1 if anything failed. What
finished is kept in `<out>/campaign-<name>.json` (the resume state): running the same campaign
again skips it. A run with an incomplete level (its server stopped mid-level, or Ctrl-C, which
every host takes as a single-host collect does) lands as incomplete: kept, reported, measured
again next time. A closed stdout or stderr stops the printing, never the campaign (`report`).

Modules, in the order a campaign meets them:
- `campaign_file`: the campaign file (probes, per type, retries) and each probe's options.
- `hosts`: the live Ray nodes that say their GPU type.
- `jobs`: one job per probe, GPU type and host slot.
- `resume`: the resume state, what finished earlier.
- `task`: what runs on a host (the Ray task), its status board, and its failures in words.
- `driver`: connecting to Ray, dispatching, watching, retrying, landing run files.
- `report`: what the driver prints.
- `ingest`: loading the finished runs at the end.

This package's `__init__` imports nothing: its modules import each other by their full names.
"""
