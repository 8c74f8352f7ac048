"""What to save of a tensor: raw values, reductions, norms, shapes (docs/format.md section 5)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from smdebug.codec.values import parse_bool
from smdebug.core.tensors.reductions import ALLOWED_NORMS, ALLOWED_REDUCTIONS
from smdebug.exceptions import SMDebugValueError

__all__ = ["ReductionConfig", "ALLOWED_REDUCTIONS", "ALLOWED_NORMS"]


def _parse_bool(name: str, value: object) -> bool:
    try:
        return parse_bool(value)
    except ValueError as exc:
        raise SMDebugValueError(f"{name}={value!r} must be a boolean ({exc})") from None


class ReductionConfig:
    """Reductions to save instead of (or beside) the raw tensor.

    reductions / abs_reductions: names from min, max, mean, std, variance, sum, prod;
    norms / abs_norms: l1, l2 (vector norms of the flattened tensor).
    """

    def __init__(
        self,
        reductions: Iterable[str] | None = None,
        abs_reductions: Iterable[str] | None = None,
        norms: Iterable[str] | None = None,
        abs_norms: Iterable[str] | None = None,
        save_raw_tensor: bool = False,
        save_shape: bool = False,
    ) -> None:
        self.reductions = list(reductions or [])
        self.abs_reductions = list(abs_reductions or [])
        self.norms = list(norms or [])
        self.abs_norms = list(abs_norms or [])
        self.save_raw_tensor = _parse_bool("save_raw_tensor", save_raw_tensor)
        self.save_shape = _parse_bool("save_shape", save_shape)
        for name, values, allowed in (
            ("reductions", self.reductions, ALLOWED_REDUCTIONS),
            ("abs_reductions", self.abs_reductions, ALLOWED_REDUCTIONS),
            ("norms", self.norms, ALLOWED_NORMS),
            ("abs_norms", self.abs_norms, ALLOWED_NORMS),
        ):
            bad = [v for v in values if v not in allowed]
            if bad:
                norm = [v for v in bad if v in ALLOWED_NORMS] if "reductions" in name else []
                hint = (
                    (
                        f" ({', '.join(norm)} is a norm: norms={norm}, or '{norm[0]}_norm' in a hook JSON's "
                        "reductions string)"
                    )
                    if norm
                    else ""
                )
                raise SMDebugValueError(
                    f"{name} {bad} not allowed: {name} can only be one of {','.join(allowed)}" + hint
                )

    def all_reductions(self) -> list[tuple[str, bool]]:
        """(op, abs) pairs in the order they are written."""
        return (
            [(r, False) for r in self.reductions]
            + [(n, False) for n in self.norms]
            + [(r, True) for r in self.abs_reductions]
            + [(n, True) for n in self.abs_norms]
        )

    @classmethod
    def from_dict(cls, params: dict[str, Any] | None) -> ReductionConfig | None:
        """From the flattened form ``{"save_raw_tensor", "reductions": "mean,l2_norm,abs_max", "save_shape"}``."""
        if params is None:
            return None
        if not isinstance(params, dict):
            raise SMDebugValueError(f"reduction_config={params!r} must be a dict")
        reds = params.get("reductions", "")
        tokens = reds.split(",") if isinstance(reds, str) else list(reds)
        kw: dict[str, list] = {"reductions": [], "abs_reductions": [], "norms": [], "abs_norms": []}
        for tok in (t.strip() for t in tokens):
            if not tok:
                continue
            is_abs = tok.startswith("abs_")
            base = tok[4:] if is_abs else tok
            is_norm = base.endswith("_norm")
            base = base[: -len("_norm")] if is_norm else base
            kw[("abs_" if is_abs else "") + ("norms" if is_norm else "reductions")].append(base)
        return cls(
            save_raw_tensor=params.get("save_raw_tensor", False),
            save_shape=params.get("save_shape", False),
            **kw,
        )

    @classmethod
    def from_json(cls, json_str: str) -> ReductionConfig | None:
        return cls.from_dict(json.loads(json_str))

    def to_json_dict(self) -> dict:
        tokens = (
            list(self.reductions)
            + [f"{n}_norm" for n in self.norms]
            + [f"abs_{r}" for r in self.abs_reductions]
            + [f"abs_{n}_norm" for n in self.abs_norms]
        )
        return {
            "save_raw_tensor": self.save_raw_tensor,
            "reductions": ",".join(tokens),
            "save_shape": self.save_shape,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_json_dict())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ReductionConfig):
            return NotImplemented
        return vars(self) == vars(other)

    def __repr__(self) -> str:
        return (
            f"<class ReductionConfig: reductions={self.reductions}, abs_reductions={self.abs_reductions}, "
            f"norms={self.norms}, abs_norms={self.abs_norms}, save_shape={self.save_shape}, "
            f"save_raw_tensor={self.save_raw_tensor}>"
        )
