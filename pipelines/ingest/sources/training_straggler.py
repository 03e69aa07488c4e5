"""Per-rank straggler reports in training logs: one row per rank and figure (docs/goodput.md §1).

Two tools print them, and :mod:`pipelines.ingest.sources.training` reads both (``event``
``straggler``; ``metric``, ``value`` and ``rank`` say what the row is about)::

    megatron  [2024-03-14 23:07:56] | MnRtt/Rnk: 3453.08ms/8 | MxRtt/Rnk: 3468.20ms/0 | MnPwr/Rnk:
                  601796W/8 | ... | MnEtpt/Rnk: 296.02TF/0 | MxEtpt/Rnk: 297.32TF/8
              ^^^^ Bottom 4 Ranks with lowest  Etpt(TF): 296.02/0, 296.17/2, 296.23/1, 296.23/4,
              ^^^^ Top    4 Ranks with highest Etpt(TF): 297.28/15, 297.28/11, 297.32/12, 297.32/8,
    nvrx      GPU relative performance:
               Worst performing 5/512 ranks:
                Rank=76 Node=h100-001-253-012 Score=0.94
              STRAGGLER DETECTION WARNING: Some GPUs have worse relative performance. Affected
                  ranks: [76, 13, 45]

Megatron-Core's ``StragglerDetector.report()`` (``megatron/core/utils.py``, ``--log-straggler``)
prints, every log interval, the minimum and the maximum across ranks of seven figures with the
rank each was measured on (``<value><unit>/<rank>``): one row each, ``metric`` from
:data:`MINMAX_FIGURES` (``rtt_min_ms``, ``rtt_max_ms``, ..., ``etpt_max_tf``). Power is
NVML's milliwatts printed as ``W`` (``601796W`` is 601.8 W): ``pwr_*_w`` is it divided by 1000.
With ``--straggler-minmax-count N`` it adds the N ranks of lowest and of highest estimated
throughput: one row per rank (``etpt_bottom_tf``, ``etpt_top_tf``).

The NVIDIA resiliency extension (NVRx, through NeMo or Megatron-Bridge) prints ``Rank=<r>
Node=<host> Score=<s>`` lines under a ``GPU relative performance:`` or ``GPU individual
performance:`` header: one row per line, ``metric`` ``nvrx_relative`` / ``nvrx_individual`` (the
nearest header before it in the file), ``value`` the score (0-1, 1 best), ``host`` the ``Node=``
value. Its ``STRAGGLER DETECTION WARNING: ... Affected ranks: [76, 13, 45]`` gives one row per
rank (``nvrx_warning``, ``value`` null, ``detail`` the warning's text). The headers, the
``Worst/Best performing`` lines, the ``gpu_relative_perf scores: {...}`` summary and the
processing-time line are ignored.

A line that gives several rows is still one line: it is loaded whole or quarantined once, with
the reason of its first bad figure (a value that is not a number, a unit other than the one
printed for that figure, a rank that is not a number, a rank listed twice, a list with no rank,
a figure name the detector does not print).
"""

from __future__ import annotations

import polars as pl

MINMAX_FIGURES: dict[str, tuple[str, str, str, float]] = {
    "Rtt": ("rtt", "ms", "ms", 1.0),  # round-trip time of the traced ops, per iteration
    "Pwr": ("pwr", "w", "W", 1000.0),  # NVML's milliwatts, printed as "W"
    "Tmp": ("tmp", "c", "C", 1.0),
    "Utl": ("utl", "pct", "%", 1.0),
    "Clk": ("clk", "mhz", "MHz", 1.0),  # SM clock
    "DRtt": ("batch", "ms", "ms", 1.0),  # get_batch latency
    "Etpt": ("etpt", "tf", "TF", 1.0),  # estimated throughput, TFLOP/s
}
"""StragglerDetector's printed figure → (metric stem, metric unit, printed unit, divisor to the
metric unit)."""

METRICS: tuple[str, ...] = (
    *[
        f"{stem}_{side}_{unit}"
        for stem, unit, _, _ in MINMAX_FIGURES.values()
        for side in ("min", "max")
    ],
    "etpt_bottom_tf",
    "etpt_top_tf",
    "nvrx_relative",
    "nvrx_individual",
    "nvrx_warning",
)
"""The ``metric`` of a straggler row."""

ROLES: tuple[str, ...] = ("minmax", "ranklist", "score", "warning")
"""The ``role`` of the straggler line formats (:data:`pipelines.ingest.sources.training.FORMATS`):
``minmax`` (Megatron's ``Mn.../Mx...`` line), ``ranklist`` (its ``Bottom/Top N`` lines),
``score`` (an NVRx ``Rank= Node= Score=`` line), ``warning`` (NVRx's straggler warning)."""

_LISTS = ("minmax", "ranklist", "warning")
_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_RANK = r"^\d{1,9}$"
_HEADER = r"\bGPU (relative|individual) performance:\s*$"
_LINE = ["_file", "line_no"]


def with_block(frame: pl.DataFrame, *, score_kind: int) -> pl.DataFrame:
    """Give every line ``nvrx_block``: the nearest NVRx score header at or before it in its file.

    ``relative`` or ``individual`` (null before any header, and on every line of a frame
    that holds no score line: the headers are looked for only when one is there).
    """
    if not frame.select((pl.col("kind") == score_kind).any()).item():
        return frame.with_columns(pl.lit(None, pl.String).alias("nvrx_block"))
    header = pl.col("line").str.extract(_HEADER, 1)
    file = pl.col("_file")
    block = pl.when(header.is_not_null()).then(header).forward_fill()
    block_file = pl.when(header.is_not_null()).then(file).forward_fill()
    return frame.with_columns(pl.when(block_file == file).then(block).alias("nvrx_block"))


def expand(checked: pl.DataFrame) -> pl.DataFrame:
    """Give the straggler lines of ``checked`` their ``metric``, ``value`` and ``rank`` rows.

    ``checked`` holds a file's (or several files') in-scope lines in order, one row each, with
    ``_file``, ``line_no``, ``line``, ``role``, ``reason``, ``rank`` (text), ``score_value`` and
    ``nvrx_block``. Each good list line (:data:`_LISTS`) becomes one row per figure or rank,
    or, when one of them is bad, its first row with that reason (one reject). Other lines keep
    their one row (``metric`` and ``value`` null but for NVRx score lines). The order stays
    that of the files and lines.
    """
    role = pl.col("role")
    out = checked.with_columns(
        pl.when(role == "score")
        .then(pl.concat_str(pl.lit("nvrx_"), pl.col("nvrx_block")))
        .otherwise(pl.lit(None, pl.String))
        .alias("metric"),
        pl.when(role == "score").then(pl.col("score_value")).alias("value"),
    )
    is_list = role.is_in(_LISTS) & pl.col("reason").is_null()
    lists = out.filter(is_list)
    if lists.height == 0:
        return out
    items = (
        lists.with_columns(_items().alias("item"))
        .explode("item", empty_as_null=True)
        .with_columns(pl.col("item").str.strip_chars())
    )
    items = _read_items(items)
    first_of_line = pl.int_range(pl.len()).over(_LINE) == 0
    items = items.with_columns(
        pl.col("item_reason").drop_nulls().first().over(_LINE).alias("reason")
    ).filter(pl.col("reason").is_null() | first_of_line)
    items = items.select(out.columns)
    return pl.concat([out.filter(~is_list), items]).sort(_LINE, maintain_order=True)


def _items() -> pl.Expr:
    """Return a list line's figures (``MnRtt/Rnk: 3453.08ms/8``) or ranks, as a list of text."""
    line, role = pl.col("line"), pl.col("role")

    def split(text: pl.Expr) -> pl.Expr:
        return text.str.split(",").list.eval(
            pl.element().filter(pl.element().str.strip_chars() != "")
        )

    return (
        pl.when(role == "minmax")
        .then(line.str.extract_all(r"\bM[nx][A-Za-z]+/Rnk:[^|]*"))
        .when(role == "ranklist")
        .then(split(line.str.extract(r"Etpt\(TF\):(.*)$", 1)))
        .when(role == "warning")
        .then(split(line.str.extract(r"Affected ranks:\s*\[([^\]]*)\]", 1)))
    )


def _read_items(items: pl.DataFrame) -> pl.DataFrame:
    """Read each item's metric, value and rank (text), and the reason it is bad (else null)."""
    role, item = pl.col("role"), pl.col("item")
    pair = item.str.extract_groups(r"^(Mn|Mx)([A-Za-z]+)/Rnk:\s*(\S*?)/(\S*)$")
    printed = pair.struct.field("3")
    number = printed.str.extract_groups(f"^({_NUMBER})(.*)$")
    listed = item.str.extract_groups(r"^(\S*?)/(\S*)$")
    names = list(MINMAX_FIGURES)
    figure = {
        key: pair.struct.field("2").replace_strict(
            names, [f[k] for f in MINMAX_FIGURES.values()], default=None, return_dtype=dtype
        )
        for key, k, dtype in (
            ("stem", 0, pl.String),
            ("metric_unit", 1, pl.String),
            ("printed_unit", 2, pl.String),
            ("divisor", 3, pl.Float64),
        )
    }
    frame = items.with_columns(
        pair.struct.field("1").alias("_side"),
        pair.struct.field("2").alias("_name"),
        number.struct.field("1").cast(pl.Float64, strict=False).alias("_minmax_value"),
        number.struct.field("2").alias("_got_unit"),
        listed.struct.field("1").alias("_listed_value"),
        *[expr.alias(f"_{key}") for key, expr in figure.items()],
        pl.when(role == "minmax")
        .then(pair.struct.field("4"))
        .when(role == "ranklist")
        .then(listed.struct.field("2"))
        .otherwise(item)
        .alias("_rank"),
    )
    listed_value = pl.col("_listed_value").cast(pl.Float64, strict=False)
    side = pl.when(pl.col("_side") == "Mn").then(pl.lit("min")).otherwise(pl.lit("max"))
    bottom = pl.col("line").str.contains(r"\^\^\^\^\s*Bottom\b")
    frame = frame.with_columns(
        pl.when(role == "minmax")
        .then(pl.concat_str(pl.col("_stem"), side, pl.col("_metric_unit"), separator="_"))
        .when(role == "ranklist")
        .then(pl.when(bottom).then(pl.lit("etpt_bottom_tf")).otherwise(pl.lit("etpt_top_tf")))
        .otherwise(pl.lit("nvrx_warning"))
        .alias("metric"),
        pl.when(role == "minmax")
        .then(pl.col("_minmax_value") / pl.col("_divisor"))
        .when(role == "ranklist")
        .then(listed_value)
        .otherwise(pl.lit(None, pl.Float64))
        .alias("value"),
        pl.col("_rank").alias("rank"),
        _item_reason(listed_value).alias("item_reason"),
    )
    return frame


def _item_reason(listed_value: pl.Expr) -> pl.Expr:
    """Return the first thing wrong with an item, in words (null when it is good)."""
    role, item, rank = pl.col("role"), pl.col("item"), pl.col("_rank")
    minmax, listed = role == "minmax", role.is_in(["ranklist", "warning"])
    return (
        pl.when(item.is_null() & minmax)
        .then(pl.lit("no 'Mn<figure>/Rnk: <value>/<rank>' figures"))
        .when(item.is_null())
        .then(pl.lit("no rank listed"))
        .when(minmax & pl.col("_name").is_null())
        .then(pl.format("malformed StragglerDetector figure '{}'", item))
        .when(minmax & pl.col("_stem").is_null())
        .then(pl.format("unknown StragglerDetector figure '{}{}/Rnk'", "_side", "_name"))
        .when(minmax & pl.col("_minmax_value").is_null())
        .then(pl.format("non-numeric value in '{}'", item))
        .when(minmax & (pl.col("_got_unit") != pl.col("_printed_unit")))
        .then(
            pl.format(
                "unexpected unit '{}' in '{}' (expected '{}')", "_got_unit", item, "_printed_unit"
            )
        )
        .when((role == "ranklist") & listed_value.is_null())
        .then(pl.format("malformed '<value>/<rank>' entry '{}'", item))
        .when(~rank.str.contains(_RANK).fill_null(value=False))
        .then(pl.format("non-numeric rank '{}' in '{}'", rank, item))
        .when(listed & rank.is_duplicated().over(_LINE))
        .then(pl.format("rank {} listed twice", rank))
    )
