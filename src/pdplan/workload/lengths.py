"""Token-length distributions for synthetic traffic: fixed, uniform, lognormal, empirical."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pdplan._text import foreign_digits
from pdplan.errors import InputError
from pdplan.workload.values import INT32_MAX

__all__ = ["LengthSpec", "parse_length_spec"]


@dataclass(frozen=True, eq=False)
class LengthSpec:
    """A token-length distribution: fixed, uniform [a, b], lognormal (mean a, log-sigma b,
    clipped at `cap`), or empirical (resample `values`, optionally weighted)."""

    kind: str
    a: float = 0.0
    b: float = 0.0
    cap: int = INT32_MAX
    values: np.ndarray | None = None
    weights: np.ndarray | None = None

    @classmethod
    def empirical(cls, values: np.ndarray, weights: np.ndarray | None = None) -> LengthSpec:
        if len(values) == 0:
            raise InputError("empirical length distribution needs at least one value")
        w = None if weights is None else np.asarray(weights, dtype=np.float64) / np.sum(weights)
        return cls("empirical", values=np.asarray(values, dtype=np.int64), weights=w)

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, int]:
        """n lengths (int32) and how many were clipped into [1, cap]."""
        vals, low, high = self.sample_clipped(n, rng)
        return vals, low + high

    def sample_clipped(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, int, int]:
        """n lengths (int32), how many draws were raised to 1 and how many cut to `cap`."""
        raw = self._draw(n, rng)
        low, high = int(np.count_nonzero(raw < 1)), int(np.count_nonzero(raw > self.cap))
        return np.clip(raw, 1, self.cap).astype(np.int32), low, high

    def _draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        if self.kind == "fixed":
            raw = np.full(n, self.a)
        elif self.kind == "uniform":
            raw = rng.integers(int(self.a), int(self.b) + 1, size=n).astype(np.float64)
        elif self.kind == "lognormal":
            # lognormal with mean a: mu = ln(a) - sigma^2 / 2 (E[X] = exp(mu + sigma^2/2))
            mu = math.log(self.a) - self.b**2 / 2
            raw = np.rint(rng.lognormal(mu, self.b, size=n))
        elif self.kind == "empirical" and self.values is not None:
            raw = rng.choice(self.values, size=n, p=self.weights).astype(np.float64)
        else:
            raise InputError(f"unknown length distribution {self.kind!r}")
        return raw


_FORMS = {"fixed": "fixed:N", "uniform": "uniform:LO:HI", "lognormal": "lognormal:MEAN:SIGMA[:MAX]"}


def parse_length_spec(text: str | int | LengthSpec) -> LengthSpec:
    """'512' | 'fixed:512' | 'uniform:100:2000' | 'lognormal:MEAN:SIGMA[:MAX]'."""
    if isinstance(text, LengthSpec):
        return text
    if str(text).strip() == "empirical:":  # 'numbers expected after the kind' misled
        raise InputError(f"bad length spec {text!r}: name the trace after it: empirical:FILE")
    odd = foreign_digits(str(text))
    if odd and not str(text).startswith("empirical:"):  # float() read 'uniform:１:５' as 1..5
        raise InputError(f"bad length spec {text!r}: {odd}")
    parts = str(text).strip().split(":")
    kind, args = (parts[0], parts[1:]) if not parts[0].isdigit() else ("fixed", parts)
    try:
        nums = [float(a) for a in args]
    except ValueError:
        raise InputError(f"bad length spec {text!r}: numbers expected after the kind") from None
    shapes = {"fixed": (1, 1), "uniform": (2, 2), "lognormal": (2, 3)}
    if kind not in shapes:
        raise InputError(
            f"bad length spec {text!r}: use N, fixed:N, uniform:LO:HI, lognormal:MEAN:SIGMA[:MAX]"
            " or empirical:FILE"
        )
    lo, hi = shapes[kind]
    if not lo <= len(nums) <= hi:
        raise InputError(f"bad length spec {text!r}: use {_FORMS[kind]}")
    if any(not math.isfinite(x) or x < 0 for x in nums):
        raise InputError(f"bad length spec {text!r}: parameters must be finite numbers >= 0")
    # token counts (N, LO, HI, MAX) are whole: 'fixed:1.5' was cut to 1 and 'uniform:1.5:3.7'
    # drew from 1..3, while '1.5' alone is refused; MEAN and SIGMA may be fractional
    if any(x != int(x) for x in (nums if kind != "lognormal" else nums[2:])):
        raise InputError(f"bad length spec {text!r}: token counts must be whole numbers")
    if (kind == "fixed" and nums[0] < 1) or (kind == "uniform" and not 1 <= nums[0] <= nums[1]):
        raise InputError(f"bad length spec {text!r}: lengths must be >= 1 (and LO <= HI)")
    if any(x > INT32_MAX for x in (nums if kind != "lognormal" else nums[:1])):
        raise InputError(f"bad length spec {text!r}: lengths must be at most {INT32_MAX:,} tokens")
    if kind == "lognormal" and (nums[0] < 1 or nums[1] <= 0 or nums[2:3] == [0.0]):
        raise InputError(f"bad length spec {text!r}: MEAN >= 1, SIGMA > 0 and MAX >= 1 required")
    cap = int(min(nums[2], INT32_MAX)) if len(nums) == 3 else INT32_MAX
    return LengthSpec(kind, nums[0], nums[1] if len(nums) > 1 else 0.0, cap)
