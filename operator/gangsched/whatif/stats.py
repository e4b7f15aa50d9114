"""Statistics of a sweep (whatif/sweep.py): paired per-seed differences and their 95% confidence interval.

Contract: `paired_interval(a, b) -> Interval` for two policies' values of one metric on the same seeds (a[i] and b[i]
from the same workload): the differences d_i = a_i - b_i, their mean, sample standard deviation (n - 1) and the
half-width t(0.975, n - 1) x sd / sqrt(n) of the two-sided 95% Student's t interval. Pairing removes the seed's own
variation (a hard workload is hard for every policy), so the interval is much narrower than the two means' own.
`t_quantile(df)`: t(0.975, df), from `T975` (the standard table, e.g. NIST/SEMATECH e-Handbook of Statistical
Methods, table 1.3.6.7.2, to three decimals) for df <= 30, beyond it the Cornish-Fisher expansion of the normal
quantile z = 1.95996 (Abramowitz & Stegun 26.7.5: z + (z^3 + z) / (4 df) + (5 z^5 + 16 z^3 + 3 z) / (96 df^2)),
within 0.001 of the exact value for df > 30. No scipy: the simulator needs none.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

# t(0.975, df) for df = 1..30 (two-sided 95%)
T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t_quantile(df: int) -> float:
    """t(0.975, df), the two-sided 95% quantile of Student's t with `df` >= 1 degrees of freedom."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, not {df}")
    if df <= len(T975):
        return T975[df - 1]
    z = NormalDist().inv_cdf(0.975)
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


@dataclass(frozen=True, slots=True)
class Interval:
    n: int  # pairs
    mean: float  # mean of the differences
    sd: float  # their sample standard deviation (0.0 when n < 2)
    half_width: float | None  # None when n < 2: no interval from one pair

    @property
    def low(self) -> float | None:
        return None if self.half_width is None else self.mean - self.half_width

    @property
    def high(self) -> float | None:
        return None if self.half_width is None else self.mean + self.half_width

    @property
    def overlaps_zero(self) -> bool:
        """True when the interval contains 0 (or there is none): the difference is not established."""
        return self.half_width is None or abs(self.mean) <= self.half_width

    def as_dict(self) -> dict[str, float | int | bool | None]:
        r = _round
        return {
            "n": self.n,
            "mean": r(self.mean),
            "sd": r(self.sd),
            "half_width": None if self.half_width is None else r(self.half_width),
            "low": None if self.low is None else r(self.low),
            "high": None if self.high is None else r(self.high),
            "overlaps_zero": self.overlaps_zero,
        }


def _round(x: float) -> float:
    return round(x, 6)


def paired_interval(a: Sequence[float], b: Sequence[float]) -> Interval:
    """The 95% t interval of the mean of a[i] - b[i]; ValueError when the lengths differ or there is no pair."""
    if len(a) != len(b):
        raise ValueError(f"paired values: {len(a)} and {len(b)} values")
    if not a:
        raise ValueError("paired values: none")
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    n = len(diffs)
    mean = sum(diffs) / n
    if n < 2:
        return Interval(n, mean, 0.0, None)
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    return Interval(n, mean, sd, t_quantile(n - 1) * sd / math.sqrt(n))
