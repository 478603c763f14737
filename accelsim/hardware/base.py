"""The base model and number types every hardware config section is built from."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from accelsim.config import schema as configio
from accelsim.dtypes import DtypeName  # noqa: F401 (re-exported: config sections name dtypes with it)

PosInt = Annotated[int, Field(gt=0, le=configio.MAX_DIM)]
NonNegInt = Annotated[int, Field(ge=0, le=configio.MAX_DIM)]
BigPosInt = Annotated[int, Field(gt=0, le=configio.MAX_BIG)]
BigNonNegInt = Annotated[int, Field(ge=0, le=configio.MAX_BIG)]
PosFloat = Annotated[float, Field(gt=0, le=configio.MAX_FLOAT)]
NonNegFloat = Annotated[float, Field(ge=0, le=configio.MAX_FLOAT)]
Unlimited = Literal["unlimited"]
PosFloatOrUnlimited = Annotated[PosFloat | Unlimited, configio.one_message("a number greater than 0 or 'unlimited'")]
# A clock, per-cycle rate or bandwidth: a divisor, so bounded below (configio.MIN_RATE) as well as above.
Rate = Annotated[float, Field(ge=configio.MIN_RATE, le=configio.MAX_FLOAT)]
RateOrUnlimited = Annotated[Rate | Unlimited, configio.one_message(
    f"a number of at least {configio.MIN_RATE:g} (smaller rates make cycle counts overflow) or 'unlimited'")]
ClockGHz = Annotated[float, Field(ge=configio.MIN_RATE, le=configio.MAX_CLOCK_GHZ)]
Triple = Annotated[list[PosInt], Field(min_length=3, max_length=3)]
Fraction = Annotated[float, Field(gt=0, le=1)]


def drop_defaults(data: dict[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """A section's serialized ``data`` without the keys that hold their default (``defaults``: key -> default):
    optional fields added after configs were written stay out of the resolved config, which reads (and hashes)
    as before. For a section's ``model_serializer(mode="wrap")``."""
    for key, default in defaults.items():
        if key in data and data[key] == default:
            data.pop(key)
    return data


class Strict(BaseModel):
    """Base for config values: unknown keys rejected, YAML types taken as they are, floats finite, frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class OmitsDefaults(Strict):
    """A section with fields added after configs were written: while they hold their defaults (``omitted``:
    key -> default) they stay out of the resolved config, which reads (and hashes) as before. Pydantic applies a
    model's last serializer only: a subclass defines none of its own."""

    omitted: ClassVar[Mapping[str, Any]] = {}

    @model_serializer(mode="wrap")
    def _omit_defaults(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return drop_defaults(handler(self), self.omitted)
