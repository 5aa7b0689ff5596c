"""The Plan page's scenario outside Streamlit: its link (`scenario_link`), the page's words for
fields (`scenario_forms.place`, `page_message`), traffic shapes per class (`traffic_shapes`),
buying instead of renting, and what a loaded file becomes on the page (`planning.for_the_page`)."""

from __future__ import annotations

import base64
import hashlib
import json
import zlib

import pandas as pd
import pytest

from fleetplan.core.errors import InputError
from fleetplan.planner import GpuFacts, Scenario
from fleetplan.planner.plan import plan
from fleetplan.services.planning import MAX_SCENARIO_BYTES, for_the_page
from fleetplan.services.scenario_forms import (
    changed_fields,
    classes_table,
    gpus_table,
    page_message,
    scenario_from_forms,
    sites_table,
    through_the_page,
)
from fleetplan.services.scenario_link import (
    MAX_LINK_CHARS,
    scenario_from_link,
    scenario_to_link,
)
from fleetplan.services.traffic_shapes import (
    datasets,
    traffic_kinds,
    unmeasured_shapes,
    with_default_shapes,
)
from tests.support.planner_points import gpu, level, points, scenario

FULL = Scenario.model_validate(
    scenario(
        [
            {"name": "chat", "rate_rps": 4, "ttft_p99_ms": 300, "tpot_p99_ms": 80},
            {"name": "sum", "rate_rps": 2, "dataset": "synthetic", "input_len": 2048},
            {"name": "gen", "rate_rps": 1, "output_len": 1024},
        ],
        [
            gpu("h100-pcie", None, purchase_usd=25_000, lifetime_years=5, idle_w=60, rated_w=350),
            gpu("rtx-4090", 0.25, max_gpus=16, include_embodied=False, electricity_included=False),
        ],
        objective={"carbon_price_usd_per_t": 80},
        budget_usd_per_hour=40,
        capacity_rule="measured",
    )
)


def two_kinds() -> pd.DataFrame:
    """One model measured on two datasets; 'sharegpt' has more levels."""
    shared = points(("h100-pcie", 1, [level(1, 1), level(2, 2), level(4, 3.5)]), dataset="sharegpt")
    random = points(("h100-pcie", 1, [level(1, 1), level(2, 1.9)]), dataset="random")
    return pd.concat([shared, random], ignore_index=True)


# -- the link -----------------------------------------------------------------------------------


def test_a_link_gives_back_the_same_scenario_and_stays_short():
    link = scenario_to_link(FULL)
    assert link is not None and len(link) < 1000
    assert link.replace("-", "").replace("_", "").replace(".", "").isalnum()  # URL-safe
    assert scenario_from_link(link) == FULL


@pytest.mark.parametrize(
    ("link", "says"),
    [
        ("", "not a scenario written by this dashboard"),
        ("hello", "not a scenario written by this dashboard"),
        ("1.AAAA", "does not decode"),
        ("1." + "A" * (MAX_LINK_CHARS + 1), "longer than any link"),
    ],
)
def test_a_broken_link_is_refused_with_a_reason(link, says):
    with pytest.raises(InputError, match=says) as caught:
        scenario_from_link(link)
    assert caught.value.file == "the link"


def test_a_cut_or_changed_link_is_refused_and_a_valid_one_is_checked_like_a_file():
    link = scenario_to_link(FULL)
    assert link is not None
    with pytest.raises(InputError, match="cut off"):
        scenario_from_link(link[: len(link) // 2])
    bad = FULL.model_dump(mode="json") | {"max_utilization": 3}
    packed = zlib.compress(json.dumps(bad).encode())
    hostile = "1." + base64.urlsafe_b64encode(packed).decode().rstrip("=")
    with pytest.raises(InputError, match="max_utilization"):
        scenario_from_link(hostile)


def test_a_link_that_unpacks_to_more_than_a_scenario_is_refused_before_it_is_read():
    bomb = zlib.compress(b" " * (MAX_SCENARIO_BYTES * 4), 9)
    link = "1." + base64.urlsafe_b64encode(bomb).decode().rstrip("=")
    assert len(link) <= MAX_LINK_CHARS  # small enough to pass the length check
    with pytest.raises(InputError, match="unpacks to more"):
        scenario_from_link(link)


def test_a_scenario_too_large_for_a_link_has_none():
    many = FULL.model_dump(mode="json")
    many["classes"] = [  # names that do not compress
        {"name": hashlib.sha256(str(i).encode()).hexdigest(), "rate_rps": 1} for i in range(500)
    ]
    assert scenario_to_link(Scenario.model_validate(many)) is None


# -- the page's words ----------------------------------------------------------------------------


def test_the_missing_power_message_names_the_columns_the_user_sees():
    error = InputError(
        "electricity is not included in the price of h100-pcie, so its power is needed, but it "
        "has no measured power and no idle power in the catalog: set idle_w and rated_w for it",
        field="gpus.h100-pcie.idle_w",
    )
    message = page_message(error)
    assert message.startswith("GPUs on offer, h100-pcie: ")
    assert "Idle W and Rated W" in message and "or tick Power in price" in message
    assert "idle_w" not in message and "gpus." not in message


def test_form_errors_name_the_table_row_and_column_label():
    table = classes_table(FULL)
    table.loc[1, "rate_rps"] = None
    table.loc[1, "share_pct"] = 25
    with pytest.raises(InputError) as caught:
        rebuild(classes=table)
    assert caught.value.field == "Traffic classes, row 2, or % of total"
    gpus = gpus_table(FULL)
    gpus.loc[1, "purchase_usd"] = 900.0  # and it still has a price per hour
    with pytest.raises(InputError) as caught:
        rebuild(gpus=gpus)
    assert caught.value.field == "GPUs on offer, row 2"
    assert "$ / GPU-hour" in caught.value.reason and "Purchase $ / GPU" in caught.value.reason
    assert "hourly_usd" not in caught.value.reason


def rebuild(classes=None, gpus=None, base=FULL, **kwargs) -> Scenario:
    return scenario_from_forms(
        base,
        model=base.model,
        classes=classes if classes is not None else classes_table(base),
        gpus=gpus if gpus is not None else gpus_table(base),
        sites=sites_table(base),
        settings={},
        **kwargs,
    )


# -- buying, shapes and nothing dropped ----------------------------------------------------------


def test_every_field_a_file_gives_is_kept_by_the_page():
    assert through_the_page(FULL) == FULL
    assert changed_fields(FULL, through_the_page(FULL)) == []
    table = classes_table(FULL)
    assert table.loc[1, ["dataset", "input_len"]].tolist() == ["synthetic", 2048]
    assert table.loc[2, "output_len"] == 1024


def test_a_gpu_can_be_bought_in_the_table():
    gpus = gpus_table(FULL)
    gpus.loc[1, ["hourly_usd", "purchase_usd", "lifetime_years"]] = [None, 1800.0, 3.0]
    bought = rebuild(gpus=gpus).offer("rtx-4090")
    assert (bought.hourly_usd, bought.purchase_usd, bought.lifetime_years) == (None, 1800, 3)
    assert bought.usd_per_gpu_hour() == pytest.approx(1800 / (3 * 8760))


def test_catalog_lifetime_fills_the_table_and_changes_no_plan():
    facts = {"rtx-4090": GpuFacts("rtx-4090", rated_w=450, idle_w=21, lifetime_years=4)}
    shown = through_the_page(FULL, facts)
    assert shown.offer("rtx-4090").lifetime_years == 4
    assert changed_fields(FULL, shown) == []  # filled in, not dropped


def test_a_field_the_page_shows_otherwise_is_said():
    shown = FULL.model_copy(
        update={"classes": [c.model_copy(update={"input_len": None}) for c in FULL.classes]}
    )
    (change,) = changed_fields(FULL, shown)
    assert change == "Traffic classes, row 2, Input tokens: 2048 in the file, empty here"


def test_traffic_kinds_are_listed_most_measured_first():
    kinds = traffic_kinds(two_kinds(), "acme/m")
    assert [(k.label(), k.levels) for k in kinds] == [("sharegpt", 3), ("random", 2)]
    assert datasets(two_kinds(), "acme/m") == ["random", "sharegpt"]
    assert traffic_kinds(two_kinds(), "other/model") == []


def test_a_class_without_a_shape_is_planned_on_the_most_measured_kind_and_told_so():
    base = Scenario.model_validate(
        scenario(
            [{"name": "chat", "rate_rps": 1}, {"name": "sum", "rate_rps": 1, "dataset": "random"}],
            [gpu("h100-pcie", 2.0)],
        )
    )
    with pytest.raises(InputError, match="several kinds of traffic"):
        plan(base, two_kinds(), {})  # what the command line says
    shaped, notes = with_default_shapes(base, two_kinds())
    assert [c.dataset for c in shaped.classes] == ["sharegpt", "random"]
    (note,) = notes
    assert "'chat' named no traffic shape" in note and "sharegpt: 3 levels; random: 2" in note
    assert "planned on sharegpt, the most measured" in note
    assert with_default_shapes(shaped, two_kinds()) == (shaped, [])  # idempotent
    assert plan(shaped, two_kinds(), {}).recommended.totals is not None


def test_a_class_asking_for_unmeasured_traffic_is_kept_and_told_so():
    base = Scenario.model_validate(
        scenario(
            [{"name": "sum", "rate_rps": 1, "dataset": "longdocs", "input_len": 8000}],
            [gpu("h100-pcie", 2.0)],
        )
    )
    assert with_default_shapes(base, two_kinds()) == (base, [])  # as the command line has it
    (warning,) = unmeasured_shapes(base, two_kinds())
    assert "'sum' asks for longdocs 8000/? tokens, which m was not measured with" in warning
    assert "(sharegpt: 3 levels; random: 2 levels)" in warning
    assert plan(base, two_kinds(), {}).recommended.totals is None  # nothing can serve it
    assert unmeasured_shapes(with_default_shapes(base, two_kinds())[0], two_kinds())


def test_a_shape_several_kinds_share_is_narrowed_to_the_most_measured():
    shared = points(("h100-pcie", 1, [level(1, 1)] * 3), dataset="sharegpt")
    shared[["input_len", "output_len"]] = [256, 256]
    longer = points(("h100-pcie", 1, [level(1, 1)]), dataset="sharegpt")
    longer[["input_len", "output_len"]] = [2048, 256]
    both = pd.concat([shared, longer], ignore_index=True)
    base = Scenario.model_validate(
        scenario([{"name": "c", "rate_rps": 1, "dataset": "sharegpt"}], [gpu("h100-pcie", 2)])
    )
    shaped, (note,) = with_default_shapes(base, both)
    narrowed = shaped.classes[0]
    assert (narrowed.dataset, narrowed.input_len, narrowed.output_len) == ("sharegpt", 256, 256)
    assert "asked for sharegpt, which matches several kinds" in note


def test_one_kind_of_traffic_needs_no_shape():
    one = points(("h100-pcie", 1, [level(1, 1)]), dataset="sharegpt")
    base = Scenario.model_validate(scenario([{"name": "c", "rate_rps": 1}], [gpu("h100-pcie", 2)]))
    assert with_default_shapes(base, one) == (base, [])


def test_a_loaded_file_for_an_unmeasured_model_says_what_the_page_shows_instead():
    other = FULL.model_copy(update={"model": "nobody/unmeasured"})
    shown, notes = for_the_page(other, two_kinds(), {})
    assert shown.model == "acme/m"
    assert notes[0].startswith("Model 'nobody/unmeasured' has no benchmark results here")
    short = FULL.model_copy(update={"model": "m"})  # the name after the '/': same model
    assert for_the_page(short, two_kinds(), {})[0].model == "acme/m"


def test_the_planners_power_question_reaches_the_page_in_its_words():
    unpowered = Scenario.model_validate(
        scenario(
            [{"name": "chat", "rate_rps": 1, "dataset": "sharegpt"}],
            [gpu("h100-pcie", 2.0, electricity_included=False)],
        )
    )
    facts = {"h100-pcie": GpuFacts("h100-pcie", rated_w=350)}  # no idle power known
    with pytest.raises(InputError) as caught:
        plan(unpowered, two_kinds(), facts)
    assert caught.value.field == "gpus.h100-pcie.idle_w"  # the scenario file's words
    message = page_message(caught.value)
    assert message.startswith("GPUs on offer, h100-pcie: electricity is not included")
    assert "Idle W and Rated W" in message and message.endswith("(or tick Power in price)")
    assert "idle_w" not in message
