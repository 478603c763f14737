"""How a part runs sparsity formats that are not native N:M patterns (``core.sparse.formats``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from accelsim.config import schema as configio
from accelsim.hardware.base import NonNegInt, PosInt, Rate, RateOrUnlimited, Strict

__all__ = ["FormatsSpec", "UnstructuredSupport"]


class UnstructuredSupport(Strict):
    """How a part runs unstructured sparsity (``unstructured:P%``, accelsim/formats/unstructured.py)."""

    runs_on: Literal["load_sparse_compute_dense", "vector_spmm"] = Field(
        description="'load_sparse_compute_dense' (tensor_core parts; Flash-LLM, arXiv 2309.10285): A moves "
                    "compressed, a decompress stage places the nonzeros into a dense shared-memory tile, the dense "
                    "tensor cores multiply it (no MAC skipped). 'vector_spmm' (Sputnik-style CSR SpMM on the "
                    "CUDA cores / vector unit): only nonzeros are multiplied, at spmm_macs_per_cycle.")
    index: Literal["bitmap", "csr"] = Field(
        "bitmap", description="A's index encoding: 'bitmap' (1 bit per dense position, rows padded to bytes) or "
                              "'csr' (index_bits per nonzero + a pointer_bits row pointer per row).")
    index_bits: NonNegInt = Field(16, description="csr: bits of each nonzero's column index (Flash-LLM's Tiled-CSL "
                                                  "stores a 16-bit location per value); 0 only as a counterfactual "
                                                  "(no index bytes: the reality ladder's metadata-free rungs).")
    pointer_bits: NonNegInt = Field(32, description="csr: bits of each row pointer (m + 1 of them); 0: none.")
    decompress_values_per_cycle: RateOrUnlimited = Field(
        "unlimited", description="load_sparse_compute_dense: nonzeros the decompress stage places into the dense "
                                 "tile per cycle per core (shared by the core's CTAs, as the metadata decoder); "
                                 "'unlimited': never binds.")
    spmm_macs_per_cycle: Rate | None = Field(
        None, description="vector_spmm (required there): sustained MACs per cycle per core of the SpMM on the "
                          "vector unit, nonzeros only.")
    b_access: Literal["dense_tile", "row_gather"] = Field(
        "dense_tile", description="vector_spmm: how B reaches the SpMM. 'dense_tile': as a dense kernel's tiles. "
        "'row_gather' (Sputnik, Gale et al. SC'20): per nonzero, a CTA (cta_rows x cta_n) reads the cta_n-wide "
        "segment of B's row at its column through the core's L1 (gather stage); L2 sends each core the union of "
        "the segments its rows of one n-tile need (accelsim/engine/rowgather.py).")
    cta_rows: PosInt = Field(4, description="row_gather: rows of A per CTA (one subwarp each).")
    cta_n: PosInt = Field(64, description="row_gather: columns of B and C per CTA (a gathered segment's width).")
    gather_rows_per_cycle: RateOrUnlimited = Field(
        "unlimited", description="row_gather: B row segments (cta_n wide) the core's L1 serves per cycle.")

    @model_validator(mode="after")
    def _spmm_rate(self) -> UnstructuredSupport:
        if self.runs_on == "vector_spmm" and self.spmm_macs_per_cycle is None:
            raise configio.FieldError(("spmm_macs_per_cycle",), "runs_on vector_spmm needs the SpMM rate "
                                                                 "(MACs per cycle per core)")
        if self.b_access == "row_gather" and self.runs_on != "vector_spmm":
            raise configio.FieldError(("b_access",), f"row_gather needs runs_on vector_spmm, not {self.runs_on}")
        return self

    @model_serializer(mode="wrap")
    def _row_gather_if_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Row-gather kernel fields only where b_access is row_gather (configs read back as before)."""
        data = handler(self)
        if data.get("b_access") == "dense_tile":
            for key in ("b_access", "cta_rows", "cta_n", "gather_rows_per_cycle"):
                data.pop(key, None)
        return data


class FormatsSpec(Strict):
    """Sparsity formats that are not native N:M patterns, by family: how this part runs each (absent: falls back
    dense, format_unsupported). channel:P% needs no entry: every part runs it as a smaller dense GEMM."""

    unstructured: UnstructuredSupport | None = Field(None, description="unstructured:P%.")

    @model_serializer(mode="wrap")
    def _listed_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if v is not None}
