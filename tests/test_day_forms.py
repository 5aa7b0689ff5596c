"""The Plan page's day tables without Streamlit (services.day_forms, services.day_fields): a day
scenario goes through the peak tables and back unchanged, its rows keep their day fields when
rows are renamed, deleted or added, a rate typed for a class of hours scales them, and bad day
input is refused naming the table, the row and the column."""

from __future__ import annotations

import pytest

from fleetplan.core.errors import InputError
from fleetplan.services import day_forms as forms
from fleetplan.services.planning import load_scenario
from fleetplan.services.scenario_forms import (
    classes_table,
    gpus_table,
    scenario_from_forms,
    sites_table,
    through_the_page,
)
from tests.support.paths import ROOT

DAY = load_scenario(ROOT / "examples" / "day-chat-nightly.json")


def from_tables(base, classes=None, gpus=None, sites=None):
    return scenario_from_forms(
        base,
        model=base.model,
        classes=classes_table(base) if classes is None else classes,
        gpus=gpus_table(base) if gpus is None else gpus,
        sites=sites_table(base) if sites is None else sites,
        settings={},
    )


def test_a_day_scenario_goes_through_the_page_unchanged():
    assert through_the_page(DAY) == DAY


def test_rows_renamed_deleted_and_added_keep_their_own_day_fields():
    table = classes_table(DAY)
    table.loc[0, "name"] = "chat (EU)"  # renamed: keeps its hours
    assert from_tables(DAY, classes=table).classes[0].hourly_rps == DAY.classes[0].hourly_rps
    kept = classes_table(DAY).drop(index=0)  # the first deleted: the second keeps its volume
    nightly = from_tables(DAY, classes=kept).classes[0]
    assert nightly.daily_requests == 50_000 and nightly.window_hours == (22, 6)
    shorter = DAY.model_copy(update={"classes": [DAY.classes[1]]})  # a base already without it
    assert from_tables(shorter, classes=kept).classes[0].daily_requests == 50_000
    added = classes_table(DAY)
    added.loc[2] = added.loc[0]
    added.loc[2, ["name", "rate_rps"]] = ["new", 2.0]
    assert from_tables(DAY, classes=added).classes[2].hourly_rps is None  # added: flat


def test_a_rate_typed_for_a_class_of_hours_scales_its_day():
    table = classes_table(DAY)
    table.loc[0, "rate_rps"] = 40.0  # the peak was 20
    table.loc[1, "rate_rps"] = DAY.classes[1].rate_rps * 2
    chat, nightly = from_tables(DAY, classes=table).classes
    assert chat.hourly_rps == [v * 2 for v in DAY.classes[0].hourly_rps]
    assert nightly.daily_requests == pytest.approx(100_000)


def test_the_day_tables_make_the_day_they_show():
    made = forms.with_day_tables(
        DAY,
        classes=forms.day_classes_table(DAY),
        hours=forms.hours_table(DAY),
        offers=forms.offers_table(DAY),
        site_hours=forms.site_hours_table(DAY),
        settings=forms.day_settings(DAY),
    )
    assert made == DAY


@pytest.mark.parametrize(
    ("table", "change", "words"),
    [
        ("hours", lambda t: t.__setitem__("5", None), "Requests/s in each hour, chat, hour 5"),
        ("classes", lambda t: t.__setitem__("window_to", None), "Window"),
        ("offers", lambda t: t.__setitem__("name", "same"), "appears twice"),
        ("hours", lambda t: t.__setitem__("5", -1.0), "Requests/s in each hour, chat"),
    ],
)
def test_bad_day_input_is_refused_naming_where(table, change, words):
    tables = {
        "classes": forms.day_classes_table(DAY),
        "hours": forms.hours_table(DAY),
        "offers": forms.offers_table(DAY),
        "site_hours": forms.site_hours_table(DAY),
    }
    change(tables[table])
    with pytest.raises(InputError) as raised:
        forms.with_day_tables(DAY, settings=forms.day_settings(DAY), **tables)
    assert words in str(raised.value)


def test_at_the_peak_is_version_1_and_an_offer_on_demand_is_added_beside():
    peak = forms.at_the_peak(DAY)
    assert not peak.is_day
    assert [c.rate_rps for c in peak.classes] == [c.rate_rps for c in DAY.classes]
    both = forms.with_offer(DAY, "h100-pcie", 3.0)
    assert [g.offer_name for g in both.gpus] == ["h100-pcie", "rtx-4090", "h100-pcie on demand"]
    assert both.offer_named("h100-pcie on demand").commitment == "on_demand"
    with pytest.raises(InputError, match="appears twice"):
        forms.at_the_peak(both)  # one GPU offered twice cannot be a version 1 scenario


def test_a_pasted_row_of_24_values_and_a_filled_range_set_a_rows_hours():
    """The day's hours tables take a spreadsheet's row pasted, and a range of hours filled
    (issue 36: the row was edited one cell at a time)."""
    from fleetplan.services import day_forms as forms

    row = "\t".join(str(v) for v in range(24))
    assert forms.pasted_hours(row, "x") == [float(v) for v in range(24)]
    assert forms.pasted_hours("1, 2;3\n" + " ".join(["4"] * 21), "x")[:4] == [1, 2, 3, 4]
    with pytest.raises(InputError, match=r"24 values .* 23 were pasted"):
        forms.pasted_hours(" ".join(["1"] * 23), "Requests/s in each hour, chat")
    with pytest.raises(InputError, match="'x' is not a number") as refused:
        forms.pasted_hours(" ".join(["1"] * 5 + ["x"] + ["1"] * 18), "chat")
    assert refused.value.field == "chat, hour 5"
    with pytest.raises(InputError, match="at least 0"):
        forms.pasted_hours(" ".join(["1"] * 23 + ["-2"]), "chat")
    with pytest.raises(InputError, match="at least 0"):
        forms.pasted_hours(" ".join(["1"] * 23 + ["nan"]), "chat")
    day = [1.0] * 24
    assert forms.filled_hours(day, 9, 17, 5.0) == [1.0] * 9 + [5.0] * 8 + [1.0] * 7
    assert forms.filled_hours(day, 22, 6, 0.0) == [0.0] * 6 + [1.0] * 16 + [0.0] * 2
    assert forms.filled_hours(day, 0, 0, 2.0) == [2.0] * 24
    changed = forms.with_hours(DAY, forms.HOURS_TITLE, "chat", [7.0] * 24)
    assert changed.classes[0].hourly_rps == [7.0] * 24
    assert changed.classes[1] == DAY.classes[1]
    grid = forms.with_hours(DAY, forms.SITE_HOURS_TITLE, DAY.sites[0].name, [100.0] * 24)
    assert grid.sites[0].hourly_grid_gco2_per_kwh == [100.0] * 24
