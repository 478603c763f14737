"""The base model and number types every hardware config section is built from."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

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
Triple = Annotated[list[PosInt], Field(min_length=3, max_length=3)]
Fraction = Annotated[float, Field(gt=0, le=1)]


class Strict(BaseModel):
    """Base for config values: unknown keys rejected, YAML types taken as they are, floats finite, frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)
