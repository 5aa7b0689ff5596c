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
