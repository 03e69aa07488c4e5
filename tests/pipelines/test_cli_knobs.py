"""``relia project``'s knob options and the knob table (``models.KNOBS``) stay in step.

The options are written out as the command's parameters (Typer reads them from its signature);
the knob dict it builds, the sweep YAML's keys and their parsing come from the table. These tests
fail when the two drift apart: an option added, renamed or dropped on one side only, a default or
a kind that differs, or a help text's "default N" that no longer is the Scenario default.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from types import NoneType, UnionType
from typing import Any, get_args, get_origin

import pytest
import typer

from models import KNOBS, Knob, Scenario
from pipelines.analysis import knobs as knob_text
from pipelines.cli import app

#: Options of ``relia project`` that are not knobs of the scenario.
NOT_KNOBS = {
    "--repair-from-warehouse",
    "--repair-from-fits",
    "--from-fits",
    "--process",
    "--default-rates-if-none",
    "--simulate",
    "--samples",
    "--seed",
    "--db",
    "--json",
    "--format",
    # one log-normal GPU law of slow_laws (a knob with no option of its own): cli_knobs joins them
    "--slow-rate-per-gpu-h",
    "--slow-duration-median-s",
    "--slow-duration-sigma",
    "--slow-excess-median",
    "--slow-excess-sigma",
}
#: The option's annotation (None left out) for each kind of knob with an option.
OPTION_TYPES: dict[str, object] = {
    "int": int,
    "float": float,
    "optional_float": float,
    "text": str,
    "fleet_age": str,
    "weibull_shape": list[str],
    "node_groups": list[str],
}


def _project_options() -> dict[str, Any]:
    """The click options of ``relia project`` that are knobs, by option name."""
    importlib.import_module("pipelines.cli.project")  # the group lists commands lazily
    project = typer.main.get_group(app).commands["project"]
    return {
        p.opts[0]: p
        for p in project.params
        if p.param_type_name == "option" and p.opts[0] not in NOT_KNOBS
    }


def test_knob_table_is_the_scenario_fields_in_order() -> None:
    fields = dataclasses.fields(Scenario)
    assert [k.name for k in KNOBS] == [f.name for f in fields]
    assert [k.default for k in KNOBS] == [f.default for f in fields]
    annotations = {
        "int": "int",
        "float": "float",
        "optional_float": "float | None",
        "text": "str",
    }
    for knob, f in zip(KNOBS, fields, strict=True):
        if knob.kind in annotations:
            assert f.type == annotations[knob.kind], knob.name


def test_project_options_are_the_knob_table() -> None:
    options = _project_options()
    table = {k.option for k in KNOBS if k.option is not None}
    assert set(options) == table | {"--restart-s"}


@pytest.mark.parametrize("knob", [k for k in KNOBS if k.option is not None], ids=lambda k: k.name)
def test_project_option_matches_its_knob(knob: Knob) -> None:
    option = _project_options()[knob.option or ""]
    assert option.name == knob.parameter
    annotation = option.type_descriptor.annotation
    if get_origin(annotation) is UnionType:
        (annotation,) = (a for a in get_args(annotation) if a is not NoneType)
    assert annotation == OPTION_TYPES[knob.kind]
    assert option.multiple == (knob.kind in ("weibull_shape", "node_groups"))
    # None: not given, so the Scenario default (or a measured value) holds
    if option.default is not None and not option.multiple:
        assert option.default == knob.default
    # a help text that states the default states the Scenario's
    stated = re.search(r"\bdefault (\d[\d.]*)", option.help or "")
    if stated:
        assert float(stated.group(1)) == knob.default


def test_cli_knobs_takes_every_knob_option_and_leaves_out_the_unset() -> None:
    options = _project_options()
    params = {o.name: o.default for o in options.values()}
    knobs = knob_text.cli_knobs(params)
    assert knobs == {
        "n_gpus": 16_384,
        "gpus_per_node": 8,
        "failure_domain_gpus": 8,
        "checkpoint_s": 60.0,
        "strategy": "restart",
        "hot_spares": 0,
        "repair_h": 24.0,
        "job_days": 30.0,
        "fleet_age": "steady_state",
        "drain_recall": 0.0,
        "drain_precision": 1.0,
        "drain_migration_s": 300.0,
    }
    given = params | {
        "gpus_per_node": 4,
        "restart_s": 900.0,
        "node_group": ["0.1:3", "0.05:10"],
        "weibull_shape": ["gpu=0.7"],
    }
    knobs = knob_text.cli_knobs(given)
    assert knobs["failure_domain_gpus"] == 4
    assert knobs["restart_s"] == 900.0
    assert knobs["node_groups"] == "0.1:3,0.05:10"
    assert knobs["weibull_shape"] == "gpu=0.7"


def test_sweep_keys_are_the_knob_table() -> None:
    assert knob_text.scenario_fields() == {k.name for k in KNOBS}
    assert knob_text.ALIASES == {"gpus": "n_gpus", "node_group": "node_groups"}
    assert knob_text.knob_name("gpu-power-w") == "gpu_power_w"
    with pytest.raises(ValueError, match="unknown knob 'gpu_power'"):
        knob_text.knob_name("gpu_power")


def test_slow_options_give_one_gpu_law_as_the_yaml_form_does() -> None:
    from models import LogNormalLaw, SlowLaws

    options = _project_options()
    params = {o.name: o.default for o in options.values()} | {
        "slow_rate_per_gpu_h": 1e-5,
        "slow_duration_median_s": 1800.0,
        "slow_duration_sigma": 1.0,
        "slow_excess_median": 0.3,
        "straggler_detect_s": 600.0,
    }
    knobs = knob_text.cli_knobs(params)
    assert knobs["straggler_detect_s"] == 600.0
    law = SlowLaws(1e-5, LogNormalLaw(1800.0, 1.0), LogNormalLaw(0.3, 0.0))
    assert knob_text.knobs(knobs, where="cli")["slow_laws"] == (law,)
    yaml_form = {
        "unit": "gpu",
        "rate_per_unit_h": 1e-5,
        "duration": {"median_s": 1800, "sigma": 1},
        "excess": {"median": 0.3},
    }
    assert knob_text.knob_value("slow_laws", yaml_form) == (law,)
    node = dict(yaml_form, unit="node")
    assert [x.unit for x in knob_text.knob_value("slow_laws", [yaml_form, node])] == [
        "gpu",
        "node",
    ]
    assert knob_text.knob_value("slow_laws", "none") == ()
    assert "slow_laws" not in knob_text.cli_knobs({o.name: o.default for o in options.values()})


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ({"rate_per_unit_h": 1e-5, "duration": 600}, r"duration is \{median_s"),
        ({"rate": 1e-5}, "keys among"),
        (
            {"rate_per_unit_h": -1, "duration": {"median_s": 60}, "excess": {"median": 0.2}},
            "rate_per_unit_h must be 0 or more",
        ),
        (
            {
                "rate_per_unit_h": 1,
                "duration": {"median_s": 60},
                "excess": {"median": 0.2},
                "unit": "rack",
            },
            "unit must be 'gpu' or 'node'",
        ),
        (3, "a mapping or a list"),
    ],
)
def test_bad_slow_laws_are_one_line(value: object, match: str) -> None:
    with pytest.raises(ValueError, match=match) as caught:
        knob_text.knob_value("slow_laws", value, where="sweep.yaml base")
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith("sweep.yaml base: slow_laws")


def test_slow_options_need_their_medians() -> None:
    with pytest.raises(ValueError, match="--slow-duration-median-s, --slow-excess-median"):
        knob_text.slow_option_laws({"slow_rate_per_gpu_h": 1e-5})
