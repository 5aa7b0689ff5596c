"""Reference data shipped in `sample_data/`: the GPU catalog and region presets.

Every figure must carry its source: the models below refuse a number without one. Keys ending in
`note` are gathered into one notes text.
"""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from fleetplan.core.contract import validation_message
from fleetplan.core.errors import InputError
from fleetplan.core.gpus import canonical_gpu
from fleetplan.warehouse.db import Warehouse, utc_now

CATALOG_FILE = "gpu_catalog.toml"
REGIONS_FILE = "regions.toml"

Num = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Source = Annotated[str, Field(min_length=3)]


class _Reference(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    notes: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _gather_notes(cls, data: Any) -> Any:
        if isinstance(data, dict):
            notes = [f"{k}: {v}" for k, v in data.items() if k == "note" or k.endswith("_note")]
            data = {k: v for k, v in data.items() if not (k == "note" or k.endswith("_note"))}
            if notes:
                data["notes"] = "\n".join(notes)
        return data

    def _require(self, value_field: str, *source_fields: str) -> None:
        if getattr(self, value_field) is None:
            return
        missing = [name for name in source_fields if not getattr(self, name)]
        if missing:
            raise ValueError(f"{value_field} is given without {', '.join(missing)}")


class HourlyPrice(_Reference):
    usd: Num
    provider: str
    date: str
    kind: str | None = None
    electricity_included: bool | None = None
    source: Source


class GpuSpec(_Reference):
    id: str
    name: str
    segment: Literal["consumer", "datacenter", "workstation"] | None = None
    form_factor: str | None = None
    memory_gb: Num | None = None
    memory_type: str | None = None
    memory_bandwidth_gb_s: Num | None = None
    fp16_tensor_tflops_dense: Num | None = None
    spec_source: Source | None = None
    rated_power_w: Num | None = None
    rated_power_source: Source | None = None
    idle_power_w: Num | None = None
    idle_power_basis: str | None = None
    idle_power_source: Source | None = None
    embodied_kgco2e: Num | None = None
    embodied_kgco2e_low: Num | None = None
    embodied_kgco2e_high: Num | None = None
    embodied_basis: str | None = None
    embodied_source: Source | None = None
    host_embodied_kgco2e_per_gpu: Num | None = None
    host_embodied_basis: str | None = None
    host_embodied_source: Source | None = None
    purchase_usd: Num | None = None
    purchase_date: str | None = None
    purchase_source: Source | None = None
    lifetime_years_default: Num | None = None
    lifetime_source: Source | None = None
    hourly_price: tuple[HourlyPrice, ...] = ()

    @model_validator(mode="after")
    def _sourced(self) -> GpuSpec:
        identity = canonical_gpu(self.id)
        if not identity.known or identity.gpu_id != self.id:
            raise ValueError(f"id {self.id!r} is not a canonical GPU id")
        for field in ("memory_gb", "memory_bandwidth_gb_s", "fp16_tensor_tflops_dense"):
            self._require(field, "spec_source")
        self._require("rated_power_w", "rated_power_source")
        self._require("idle_power_w", "idle_power_source", "idle_power_basis")
        for field in ("embodied_kgco2e", "embodied_kgco2e_low", "embodied_kgco2e_high"):
            self._require(field, "embodied_source", "embodied_basis")
        self._require("host_embodied_kgco2e_per_gpu", "host_embodied_source", "host_embodied_basis")
        self._require("purchase_usd", "purchase_source", "purchase_date")
        self._require("lifetime_years_default", "lifetime_source")
        return self


class Region(_Reference):
    id: str
    name: str
    grid_gco2_per_kwh: Num | None = None
    grid_year: int | None = None
    grid_basis: Literal["lifecycle", "direct", "marginal", "unknown"] | None = None
    grid_source: Source | None = None
    electricity_usd_per_kwh: Num | None = None
    electricity_year: int | None = None
    electricity_basis: str | None = None
    electricity_source: Source | None = None
    electricity_original: str | None = None
    household_electricity_usd_per_kwh: Num | None = None
    household_electricity_source: Source | None = None
    pue_default: Annotated[float, Field(ge=1, le=5)] | None = None
    pue_source: Source | None = None

    @model_validator(mode="after")
    def _sourced(self) -> Region:
        self._require("grid_gco2_per_kwh", "grid_source", "grid_basis")  # year may be unknown
        self._require(
            "electricity_usd_per_kwh", "electricity_source", "electricity_year", "electricity_basis"
        )
        self._require("household_electricity_usd_per_kwh", "household_electricity_source")
        self._require("pue_default", "pue_source")
        return self


class Catalog(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    meta: dict[str, Any]
    gpu: tuple[GpuSpec, ...]


class Regions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    meta: dict[str, Any]
    region: tuple[Region, ...]


def _read(path: Path, model: type[BaseModel]) -> tuple[Any, str]:
    try:
        data = path.read_bytes()
        parsed = model.model_validate(tomllib.loads(data.decode("utf-8")))
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror or error}", file=str(path)) from None
    except tomllib.TOMLDecodeError as error:
        raise InputError(f"invalid TOML: {error}", file=str(path)) from None
    except ValidationError as error:
        raise validation_message(error, file=str(path)) from None
    return parsed, hashlib.sha256(data).hexdigest()


def read_catalog(folder: Path) -> Catalog:
    return _read(folder / CATALOG_FILE, Catalog)[0]


def read_regions(folder: Path) -> Regions:
    return _read(folder / REGIONS_FILE, Regions)[0]


def load_reference(warehouse: Warehouse, folder: Path) -> dict[str, int]:
    """Replace the catalog and region tables with the files in `folder`, in one transaction."""
    catalog, catalog_sha = _read(folder / CATALOG_FILE, Catalog)
    regions, regions_sha = _read(folder / REGIONS_FILE, Regions)
    gpu_rows, price_rows = [], []
    for gpu in catalog.gpu:
        row = gpu.model_dump(exclude={"hourly_price"})
        gpu_rows.append([row.pop("id"), *row.values()])
        for price in gpu.hourly_price:
            price_rows.append(
                [
                    gpu.id,
                    price.usd,
                    price.provider,
                    price.date,
                    price.kind,
                    price.electricity_included,
                    price.source,
                    price.notes,
                ]
            )
    region_rows = []
    for region in regions.region:
        row = region.model_dump()
        region_rows.append([row.pop("id"), *row.values()])
    gpu_columns = ["gpu_id", *(k for k in GpuSpec.model_fields if k not in ("id", "hourly_price"))]
    region_columns = ["region_id", *(k for k in Region.model_fields if k != "id")]
    with warehouse.transaction() as con:
        for table in ("gpu_catalog", "gpu_prices", "regions"):
            con.execute(f"DELETE FROM {table}")  # noqa: S608 - fixed table names
        con.executemany(_insert("gpu_catalog", gpu_columns), gpu_rows)
        if price_rows:
            con.executemany(
                "INSERT INTO gpu_prices (gpu_id, usd_per_gpu_hour, provider, price_date, kind, "
                "electricity_included, source, notes) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                price_rows,
            )
        con.executemany(_insert("regions", region_columns), region_rows)
        for name, sha in ((CATALOG_FILE, catalog_sha), (REGIONS_FILE, regions_sha)):
            con.execute(
                "INSERT OR REPLACE INTO reference_files VALUES (?, ?, ?)", [name, sha, utc_now()]
            )
    return {"gpus": len(gpu_rows), "prices": len(price_rows), "regions": len(region_rows)}


def ensure_reference(warehouse: Warehouse, folder: Path | None = None) -> bool:
    """Load the shipped reference data (GPU catalog, regions) into a warehouse that has none,
    whoever created it (`fleetplan ingest`, the upload page, `fleetplan build`): a plan from it
    has energy and carbon for every GPU the catalog knows. True when it was loaded now."""
    count = warehouse.cursor().execute("SELECT count(*) FROM gpu_catalog").fetchone()
    if count and count[0]:
        return False
    from fleetplan.core.paths import sample_data_dir

    load_reference(warehouse, folder or sample_data_dir())
    return True


def _insert(table: str, columns: list[str]) -> str:
    # Column names come from the models above, never from the files.
    return (
        f"INSERT INTO {table} ({', '.join(columns)}) "  # noqa: S608
        f"VALUES ({', '.join('?' for _ in columns)})"
    )
