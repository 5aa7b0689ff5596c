"""Use cases that join the warehouse's data and the planner's logic, shared by the dashboard and
the command line. They sit above warehouse/ and planner/ and below app/ and cli/, and never import
Streamlit (tests/test_services.py checks it): what a page shows is computed here, or in planner/
or warehouse/, and tested without a browser.

- `planning`: load a scenario (a file or an upload, the same checks for both), GPU facts from the
  catalog, a plan from the warehouse or from tables already read.
- `scenario_forms`: the Plan page's editable tables <-> a `Scenario`, and its single inputs; the
  page's label for every scenario field (messages name what the user sees).
- `scenario_link`: a scenario in the Plan page's URL (compact, bounded, checked like a file).
- `day_forms`, `day_fields`: the Plan page's day (scenario version 2) as tables and back, and a
  day's fields kept through the peak tables' rows; `day_tables`: a day plan as the page shows it.
- `traffic_shapes`: the kinds of traffic a model was measured with; a stated default for a class
  that names none.
- `scenario_defaults`: a first scenario, workload presets and region figures for sites, from the
  warehouse's reference data.
- `benchmark_tables`: the Benchmarks page's filters, priced points and energy per level.
- `outliers`: the levels a reader should question, each with its reason.
- `energy_tables`: energy per token per level, measured or modelled from the catalog's power.
- `load_tables`: the latency-against-load curves the Benchmarks and Plan pages draw.
- `plan_tables`: the Plan page's readable tables of a plan (fleet, energy, measured levels,
  capacities), labelled and rounded for people (the CSV's schema is `planner.report.table`'s).
- `paper_check`: the io.net paper's claims against the warehouse's points and catalog.
- `upload_tables`: the Upload page's labels (GPU, dataset) as import options, its summary, runs
  with their token shapes, problems in full and short file ids.
- `capacity`: one configuration's capacity at P99 targets from its latency-against-load curve,
  with today's measured rule beside it (`fleetplan capacity`).

To add a use case: a module here with plain functions over warehouse queries (or tables they
return) and planner functions, typed in and out; the CLI and the pages call it.
"""
