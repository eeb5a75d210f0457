"""Layout: how one serving instance splits a model (TP, attention-DP, PP, MoE TP/EP, CP, SP)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pdplan._text import foreign_digits, gpus
from pdplan.errors import ConfigError

__all__ = ["Layout"]

_KEYS = {
    "tp": "tp",
    "dp": "dp",
    "adp": "dp",
    "pp": "pp",
    "ep": "ep",
    "etp": "moe_tp",
    "moetp": "moe_tp",
    "cp": "cp",
}


_NAMES = {"tp": "TP", "dp": "DP", "pp": "PP", "ep": "EP", "moe_tp": "expert TP", "cp": "CP",
          "sp": "SP"}  # fmt: skip


@dataclass(frozen=True)
class Layout:
    """One instance's parallel split.

    GPUs per instance = tp * dp * cp * pp. Attention runs TP-way inside each of `dp`
    data-parallel attention groups (DP attention); the MoE FFN of a layer is spread over the
    same tp*dp*cp GPUs as moe_tp * ep (expert TP x expert parallel). Dense FFNs use TP.
    `sp` turns on sequence parallelism of the non-TP parts (norms, residual) alongside TP.
    """

    tp: int = 1
    dp: int = 1
    pp: int = 1
    ep: int = 1
    moe_tp: int | None = None  # default: tp*dp*cp // ep
    cp: int = 1
    sp: bool = False

    def __post_init__(self) -> None:
        for k in ("tp", "dp", "pp", "ep", "cp"):
            v = getattr(self, k)
            if not isinstance(v, int) or v < 1:
                raise ConfigError(f"{k.upper()}={v} must be a positive integer")
        width = self.tp * self.dp * self.cp
        if self.moe_tp is None:
            if width % self.ep:
                raise ConfigError(
                    f"EP={self.ep} does not divide the {gpus(width)} of a stage (TP*DP*CP)"
                )
            object.__setattr__(self, "moe_tp", width // self.ep)
        elif self.moe_tp * self.ep != width:
            raise ConfigError(
                f"MoE TP={self.moe_tp} x EP={self.ep} = {self.moe_tp * self.ep} must equal "
                f"TP*DP*CP = {width}"
            )

    @property
    def gpus(self) -> int:
        """GPUs in one instance."""
        return self.tp * self.dp * self.cp * self.pp

    @property
    def stage_gpus(self) -> int:
        """GPUs in one pipeline stage."""
        return self.tp * self.dp * self.cp

    @property
    def etp(self) -> int:
        return int(self.moe_tp or 1)

    def __str__(self) -> str:
        parts = [f"tp{self.tp}"]
        for name, v in (("dp", self.dp), ("pp", self.pp), ("cp", self.cp), ("ep", self.ep)):
            if v > 1:
                parts.append(f"{name}{v}")
        if self.ep > 1 and self.etp > 1:
            parts.append(f"etp{self.etp}")
        if self.sp:
            parts.append("sp")
        return "-".join(parts)

    @classmethod
    def parse(cls, text: str) -> Layout:
        """Parse 'tp4', 'tp8-ep8', 'tp=4,pp=2', 'dp8 ep8', 'tp4-sp' (case-insensitive)."""
        s = text.strip().lower()
        if not s:
            raise ConfigError("empty layout; expected e.g. 'tp4', 'tp8-pp2', 'dp8-ep8'")
        odd = foreign_digits(text)
        if odd:  # '\d' and int() read 'tp４' as tp4
            raise ConfigError(f"layout {text!r}: {odd}")
        kw: dict[str, int | bool] = {}
        for tok in re.split(r"[\s,\-_x]+", s):
            if not tok:
                continue
            m = re.fullmatch(r"([a-z]+)=?(\d+)", tok)
            if tok != "sp" and (not m or m.group(1) not in _KEYS):
                raise ConfigError(
                    f"cannot read layout part {tok!r} in {text!r}; "
                    "use tpN, dpN, ppN, epN, etpN, cpN, sp"
                )
            key = "sp" if m is None else _KEYS[m.group(1)]
            if key in kw:  # 'tp8-tp2' would silently keep the last one
                raise ConfigError(f"layout {text!r} gives {_NAMES[key]} twice; name each part once")
            kw[key] = True if m is None else int(m.group(2))
        if not kw:
            raise ConfigError(
                f"cannot read layout {text!r}; expected e.g. 'tp4', 'tp8-pp2', 'dp8-ep8'"
            )
        return cls(**kw)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, int | bool]:
        return {
            "tp": self.tp,
            "dp": self.dp,
            "pp": self.pp,
            "ep": self.ep,
            "moe_tp": self.etp,
            "cp": self.cp,
            "sp": self.sp,
            "gpus": self.gpus,
        }
