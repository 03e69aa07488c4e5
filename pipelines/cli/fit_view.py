"""``relia fit``'s default view: one line per class, then short notes, as wide as the terminal.

``relia fit --wide`` prints every column of the rates and the lifetimes (:mod:`pipelines.cli.fit`);
this view keeps the figures a capacity planner reads first. For the failure process: the class,
its unit level, failures, the exposure in node-days, the rate per 1000 node-days (what ``relia
project --node-failures-per-1000-node-days`` takes) and the headline MTBF per unit, both with
their exact 95 % intervals. A replacement run shows replacements, unit-years, the replacement AFR
and the MTBR; a repair run the MTTR with the family it rests on. Hours from 10,000 up are
written with ``k``/``M`` (``56.2k``: 56,200 hours), so a line fits 80 columns.

The notes below the table name classes instead of repeating the models' long warnings: the
lifetime fits resting on few failures, the means mostly extrapolated, the classes whose failure
rate changes over the window. A model warning the view does not summarise is printed whole,
wrapped to the terminal.
"""

from __future__ import annotations

import math
import textwrap
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from pipelines.cli.render import console, err, inert

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "compact_hours",
    "print_note",
    "rate_lines",
    "repair_lines",
    "short_notes",
    "span",
    "table",
]


def compact_hours(value: Any, digits: int = 3) -> str:
    """Hours to ``digits`` significant digits: ``4,895``; ``56.2k`` from 10,000; ``1.44M``."""
    from pipelines.analysis.headline import is_number, sig_text

    if not is_number(value):
        return "-"
    hours = float(value)
    for scale, suffix in ((1e6, "M"), (1e3, "k")):
        if abs(hours) >= 10 * scale or (suffix == "M" and abs(hours) >= scale):
            return sig_text(hours / scale, digits) + suffix
    return f"{hours:,.0f}"


def _outward(value: float, digits: int, up: bool) -> float:
    """``value`` rounded to ``digits`` significant digits, up or down (an interval only widens)."""
    if value == 0:
        return 0.0
    scale = 10.0 ** (math.floor(math.log10(abs(value))) - digits + 1)
    steps = value / scale
    # a bound that is already round stays (1.2 is not widened to 1.3 by float noise)
    steps = round(steps) if abs(steps - round(steps)) < 1e-9 else steps
    return (math.ceil(steps) if up else math.floor(steps)) * scale


def span(value: Any, lo: Any, hi: Any, fmt: Any) -> str:
    """``value (lo-hi)``: the value to 3 significant digits, the bounds to 2 rounded outward.

    ``≥ lo`` (3 digits, rounded down) with no point and no upper bound; ``fmt(x, digits)``
    formats a number.
    """
    from pipelines.analysis.headline import is_number

    def bound(x: Any, up: bool, digits: int = 2) -> str:
        return str(fmt(_outward(float(x), digits, up), digits))

    if not is_number(value) and not is_number(hi):
        return f"≥ {bound(lo, False, 3)}" if is_number(lo) else "-"
    if not is_number(hi):
        return f"{fmt(value, 3)} (≥ {bound(lo, False)})"
    return f"{fmt(value, 3)} ({bound(lo, False)}-{bound(hi, True)})"


def _rate(value: Any, digits: int) -> str:
    from pipelines.analysis.headline import sig_text

    return sig_text(value, digits)


def _split(frame: pl.DataFrame) -> bool:
    return bool(frame.height) and (
        frame["cohort"].n_unique() > 1 or frame["cohort"].first() != "all"
    )


def rate_lines(rates: pl.DataFrame, *, replacement: bool) -> list[dict[str, Any]]:
    """One row per class (and cohort) of a run's rates, most events first, short columns."""
    if rates.height == 0:
        return []
    split = _split(rates)
    rows = []
    for r in rates.sort("n_failures", "component_class", descending=[True, False]).iter_rows(
        named=True
    ):
        row: dict[str, Any] = {"class": r["component_class"]}
        row |= {"cohort": r["cohort"]} if split else {}
        row["level"] = r["unit_level"]
        mean = span(
            r["headline_mtbf_h"], r["headline_mtbf_lo_h"], r["headline_mtbf_hi_h"], compact_hours
        )
        if replacement:
            afr = [
                None if r[k] is None else r[k] * 876_600.0
                for k in ("rate_per_h", "rate_lo_per_h", "rate_hi_per_h")
            ]
            row |= {
                "replaced": r["n_failures"],
                "unit-years": f"{r['exposure_h'] / 8766.0:,.1f}",
                "AFR % (95 % CI)": span(afr[0], afr[1], afr[2], _rate),
                "MTBR h per unit": mean,
            }
        else:
            node_days = r["node_days"]
            row |= {
                "failures": r["n_failures"],
                "node-days": "-" if node_days is None else f"{node_days:,.0f}",
                "per 1000 node-days": span(
                    r["rate_per_1000_node_days"],
                    r["rate_lo_per_1000_node_days"],
                    r["rate_hi_per_1000_node_days"],
                    _rate,
                ),
                "MTBF h per unit": mean,
            }
        rows.append(row)
    return rows


def repair_lines(results: pl.DataFrame) -> list[dict[str, Any]]:
    """One row per class of a repair run: repairs, closed, the MTTR and the family it rests on."""
    import polars as pl

    chosen = results.filter(pl.col("chosen")).sort(
        "n_failures", "component_class", descending=[True, False]
    )
    split = _split(chosen)
    rows = []
    for r in chosen.iter_rows(named=True):
        row: dict[str, Any] = {"class": r["component_class"]}
        row |= {"cohort": r["cohort"]} if split else {}
        row |= {
            "repairs": r["n_units"],
            "closed": r["n_failures"],
            "MTTR h (95 % CI)": span(
                r["headline_mtbf_h"], r["headline_mtbf_lo_h"], r["headline_mtbf_hi_h"], _rate
            ),
            "family": r["family"],
            "shape": f"{r['shape']:.2f}",
        }
        rows.append(row)
    return rows


def table(rows: list[dict[str, Any]]) -> Table:
    """Rows as a borderless table, one line per row: numbers right-aligned, headers bold."""
    grid = Table(box=None, pad_edge=False, padding=(0, 1), header_style="bold underline")
    if not rows:
        grid.add_column("(none)")
        return grid
    for column in rows[0]:
        numeric = isinstance(rows[0][column], int | float) or column in ("node-days", "unit-years")
        grid.add_column(column, justify="right" if numeric else "left", overflow="fold")
    for row in rows:
        grid.add_row(
            *[
                inert("-" if v is None else f"{v:,}" if isinstance(v, int) else str(v))
                for v in row.values()
            ]
        )
    return grid


def _label(row: dict[str, Any], split: bool) -> str:
    """Return a row's class, with its cohort when the run is split: ``gpu (batch=b2)``."""
    return f"{row['component_class']} ({row['cohort']})" if split else str(row["component_class"])


def _classes(chosen: pl.DataFrame, keep: Any) -> str:
    """Return the classes (and cohorts, sorted, each once) of the rows where ``keep(row)``."""
    split = _split(chosen)
    kept = {_label(r, split) for r in chosen.iter_rows(named=True) if keep(r)}
    return ", ".join(sorted(kept))


def short_notes(results: pl.DataFrame, rates: pl.DataFrame | None, *, quantity: str) -> list[str]:
    """Return the notes under the default view, naming classes: few events, extrapolation, trend."""
    import polars as pl

    from pipelines.analysis.headline import trend_text

    chosen = results.filter(pl.col("chosen"))
    fits, events = {
        "repair_time": ("MTTR", "closed repairs"),
        "replacement": ("replacement lifetime", "replacements"),
    }.get(quantity, ("lifetime", "failures"))
    notes = []
    if quantity != "repair_time":
        notes.append(
            f"{fits} fits (AIC-chosen family, shape, mean life; a model, not the headline): "
            "relia fit --wide, or --format csv --table fits"
        )
    weibayes = _classes(chosen, lambda r: r["lifetime_method"] == "weibayes_lr")
    if weibayes:
        notes.append(f"Weibayes {fits} (1 to 5 {events}, a known shape): {weibayes}")
    if quantity != "repair_time":
        bounds = _classes(chosen, lambda r: r["n_failures"] == 0)
        if bounds:
            notes.append(f"no {events} (each mean a one-sided 95 % lower bound, ≥): {bounds}")
        extrapolated = _classes(chosen, lambda r: bool(r.get("lifetime_extrapolated")))
        if extrapolated:
            notes.append(f"mean life mostly beyond the oldest age observed: {extrapolated}")
    if rates is not None and "trend_verdict" in rates.columns:
        split = _split(rates)
        changing = [
            f"{_label(r, split)} {trend_text(r)}"
            for r in rates.sort("component_class", "cohort").iter_rows(named=True)
            if r["trend_verdict"] not in (None, "homogeneous")
        ]
        if changing:
            notes.append("rate not constant over the window: " + "; ".join(changing))
    return notes


def print_note(text: str, *, label: str = "note") -> None:
    """Print ``label: text`` on stderr, wrapped to the terminal's width (continuations indented)."""
    width = max(err.width, 40)
    wrapped = textwrap.fill(
        f"{label}: {text}",
        width=width,
        subsequent_indent="  ",
        break_on_hyphens=False,
    )
    err.print(
        Text.assemble((f"{label}:", "yellow"), inert(wrapped[len(label) + 1 :], lines=True)),
        soft_wrap=True,
    )


def print_line(text: str) -> None:
    """Print ``text`` on stdout, wrapped to the terminal's width."""
    console.print(text, highlight=False, markup=False)
