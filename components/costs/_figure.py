"""A money figure that says what it is: a price, at most, at least, a range, or unknown.

A catalog cell whose basis is ``bound`` (on-demand standing in for an unknown flex-start or
Spot rate) is only an upper end of the real price; one whose basis is ``floor`` (Compute
Engine's rate without Vertex's fee) only a lower end. A ``Figure`` keeps both ends apart, so a
bound is never added to a price and shown as one price: ``price + at most = at most``, ``price
+ at least = at least``, and where both ends are known (each part bounded both ways) a range.
Every output renders one by ``figure_text``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = [
    "COST_BASES",
    "LOWER_BASES",
    "UPPER_BASES",
    "ZERO",
    "Figure",
    "cost_basis",
    "dearest",
    "delta_text",
    "figure_of_output",
    "figure_text",
    "spread",
    "with_reason",
]

UPPER_BASES = frozenset({"bound"})
"""Bases whose figure is an upper end only (``prices.csv``: on-demand standing in)."""
LOWER_BASES = frozenset({"floor"})
"""Bases whose figure is a lower end only (Compute Engine's rate, Vertex's fee left out)."""


@dataclass(frozen=True, slots=True)
class Figure:
    """What is known of an amount: its lower end ``low`` and upper end ``high`` (None: not known).

    ``low == high``: a price. ``why`` says why an end is missing, once per reason.
    """

    low: float | None
    high: float | None
    why: tuple[str, ...] = ()

    @classmethod
    def price(cls, value: float) -> Figure:
        return cls(value, value)

    @classmethod
    def of(cls, value: float | None, basis: str, why: str = "") -> Figure:
        """A catalog cell of ``basis`` as a figure (``bound``: at most, ``floor``: at least)."""
        if value is None:
            return cls(None, None, (why,) if why else ())
        if basis in UPPER_BASES:
            return cls(None, value, (why or "on-demand stands in as the upper bound",))
        if basis in LOWER_BASES:
            return cls(value, None, (why or "Vertex's fee is not in the rate",))
        return cls(value, value)

    @property
    def kind(self) -> str:
        """``price``, ``at_most``, ``at_least``, ``range`` or ``unknown``."""
        if self.low is None:
            return "unknown" if self.high is None else "at_most"
        if self.high is None:
            return "at_least"
        return "price" if abs(self.high - self.low) <= 1e-9 * max(1.0, self.high) else "range"

    @property
    def is_price(self) -> bool:
        return self.kind == "price"

    @property
    def bounded(self) -> bool:
        """Known only as a bound or a range, not as one price."""
        return self.kind in ("at_most", "at_least", "range")

    @property
    def worst(self) -> float | None:
        """The most it can be (a rule that needs the worst case judges this; None: not known)."""
        return self.high

    def __add__(self, other: Figure) -> Figure:
        low = None if self.low is None or other.low is None else self.low + other.low
        high = None if self.high is None or other.high is None else self.high + other.high
        return Figure(low, high, tuple(dict.fromkeys(self.why + other.why)))

    def __neg__(self) -> Figure:
        return Figure(
            None if self.high is None else -self.high,
            None if self.low is None else -self.low,
            self.why,
        )

    def __sub__(self, other: Figure) -> Figure:
        """The change from ``other`` to this: its least is this least less the other's most,
        its most this most less the other's least (an end either side lacks is not known)."""
        return self + -other

    def times(self, factor: float) -> Figure:
        low = None if self.low is None else self.low * factor
        high = None if self.high is None else self.high * factor
        return Figure(low, high, self.why)


ZERO = Figure(0.0, 0.0)

COST_BASES = ("price", "at most", "at least", "range", "unknown")
"""What a resource's cost outputs are (``costBasis``, ``cost_basis``): one price, an upper end
only (``hourlyCostUsd`` is then the most), a lower end only (the least), a range (both ends
known, apart), or unknown. A ``Figure.kind`` in words, as ``figure_text`` says them."""


def cost_basis(figure: Figure) -> str:
    """``figure``'s kind as a ``COST_BASES`` word (``at_most`` → ``at most``)."""
    return figure.kind.replace("_", " ")


def figure_of_output(basis: object, low: object, high: object, why: str = "") -> Figure | None:
    """The figure a resource's cost outputs carry (``costBasis`` and the ends), or None where
    they carry no basis (a state written before the basis, a value unknown at preview): its
    one number may then be a bound added into prices, and is not read as a price. ``why``:
    the reason a bounded figure gives (the outputs carry none)."""
    if basis not in COST_BASES:
        return None

    def end(value: object) -> float | None:
        return (
            float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
        )

    figure = Figure(end(low), end(high))
    if cost_basis(figure) != basis:
        return None  # the ends do not make the basis they claim: not read as either
    return Figure(figure.low, figure.high, (why,) if why and basis != "price" else ())


def dearest(figures: Sequence[Figure]) -> Figure:
    """The most of several figures: what a job costs wherever of several places it lands.

    Its upper end is the highest upper end, known only where every figure has one; its lower
    end the highest known lower end (the dearest is at least each one's least). No figures:
    unknown.
    """
    if not figures:
        return Figure(None, None)
    highs = [f.high for f in figures]
    high = None if any(h is None for h in highs) else max(h for h in highs if h is not None)
    lows = [f.low for f in figures if f.low is not None]
    why = tuple(dict.fromkeys(w for f in figures for w in f.why))
    return Figure(max(lows) if lows else None, high, why)


def spread(figures: Sequence[Figure]) -> Figure:
    """What a job costs that lands in one of several places, not yet known which: from the
    least of their lower ends to the most of their upper ends (each end known only where every
    figure has it). Figures that are one price give that price. No figures: unknown."""
    if not figures:
        return Figure(None, None)
    lows, highs = [f.low for f in figures], [f.high for f in figures]
    low = None if any(v is None for v in lows) else min(v for v in lows if v is not None)
    high = None if any(v is None for v in highs) else max(v for v in highs if v is not None)
    why = tuple(dict.fromkeys(w for f in figures for w in f.why))
    return Figure(low, high, why)


def figure_text(figure: Figure, *, unit: str = "/h", digits: int = 2, why: bool = True) -> str:
    """``$1.23/h``, ``at most $24.89/h (why)``, ``at least $2.15/h (why)``, ``$1.20 to
    $2.40/h``, ``unknown``: how every output shows a figure."""
    return _text(figure, lambda value: f"${value:,.{digits}f}", unit, why)


def delta_text(figure: Figure, *, unit: str = "/h", why: bool = True) -> str:
    """A change as ``figure_text`` shows an amount, signed: ``+$5.00/h``, ``at most +$5.00/h
    (why)``, ``at least -$2.00/h (why)``, ``-$1.00 to +$3.00/h (why)``, ``unknown (why)``."""
    return _text(figure, lambda value: f"{'+' if value >= 0 else '-'}${abs(value):,.2f}", unit, why)


def _text(figure: Figure, money: Callable[[float], str], unit: str, why: bool) -> str:
    kind = figure.kind
    reason = f" ({'; '.join(figure.why)})" if why and figure.why and kind != "price" else ""
    if kind == "price":
        assert figure.high is not None
        return money(figure.high) + unit
    if kind == "at_most":
        assert figure.high is not None
        return f"at most {money(figure.high)}{unit}{reason}"
    if kind == "at_least":
        assert figure.low is not None
        return f"at least {money(figure.low)}{unit}{reason}"
    if kind == "range":
        assert figure.low is not None and figure.high is not None
        return f"{money(figure.low)} to {money(figure.high)}{unit}{reason}"
    return "unknown" + reason


def with_reason(door: Figure, catalog: Figure) -> Figure:
    """A figure read from a resource's outputs (``figure_of_output``, which carry no reason)
    with the reason ``catalog``'s figure of the same job gives, where both are of one kind; a
    bound the catalog does not see says whose it is."""
    if door.is_price:
        return door
    same = catalog.kind == door.kind and catalog.why
    return Figure(door.low, door.high, catalog.why if same else ("the resource's outputs",))
