"""Lifetime families of the synthetic generator: laws, draws, the unchanged default, the CLI."""

from __future__ import annotations

import hashlib
import json
import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from pipelines.cli import app
from synth import FAMILIES, ClassSpec, SynthConfig, default_classes, synthesize
from synth.lifetimes import lifetimes_h

if TYPE_CHECKING:
    from pathlib import Path

runner = CliRunner()
Z_999 = 3.29  # two-sided 99.9 % normal quantile
N_DRAWS = 400_000


def _scipy_law(spec: ClassSpec) -> Any:
    """The same law as a frozen scipy distribution, to check the spec's own formulas."""
    if spec.family == "weibull":
        return stats.weibull_min(spec.shape, scale=spec.scale_h)
    if spec.family == "exponential":
        return stats.expon(scale=spec.scale_h)
    if spec.family == "lognormal":
        return stats.lognorm(spec.shape, scale=spec.scale_h)
    return stats.fisk(spec.shape, scale=spec.scale_h)


@pytest.mark.parametrize("family", FAMILIES)
def test_class_spec_mean_median_and_params_match_the_law(family: str) -> None:
    for name, base in default_classes().items():
        spec = base.as_family(family)
        law = _scipy_law(spec)
        assert spec.mtbf_h == pytest.approx(law.mean(), rel=1e-9), name
        assert spec.median_h == pytest.approx(law.median(), rel=1e-9), name
        # same mean always; same median except for the exponential, which has only a mean
        assert spec.mtbf_h == pytest.approx(base.mtbf_h, rel=1e-9), name
        if family != "exponential":
            assert spec.median_h == pytest.approx(base.median_h, rel=1e-9), name
    params = default_classes()["nic"].as_family(family).params()
    expected = {
        "weibull": {"lambda_", "rho_"},
        "exponential": {"lambda_"},
        "lognormal": {"mu_", "sigma_"},
        "loglogistic": {"alpha_", "beta_"},
    }
    assert set(params) == expected[family]


def test_as_family_uses_the_documented_formulas() -> None:
    base = default_classes()["gpu"]  # Weibull k = 1.2, lambda = 75,000 h
    mean, median = base.mtbf_h, base.median_h
    lognormal = base.as_family("lognormal").params()
    assert lognormal["mu_"] == pytest.approx(math.log(median))
    assert lognormal["sigma_"] == pytest.approx(math.sqrt(2 * math.log(mean / median)))
    loglogistic = base.as_family("loglogistic").params()
    b = loglogistic["beta_"]
    assert loglogistic["alpha_"] == pytest.approx(median)
    assert b > 1
    assert (math.pi / b) / math.sin(math.pi / b) == pytest.approx(mean / median, rel=1e-12)
    assert base.as_family("exponential").params() == {"lambda_": pytest.approx(mean)}
    back = base.as_family("loglogistic").as_family("weibull")
    assert (back.shape, back.scale_h) == pytest.approx((1.2, 75_000.0), rel=1e-9)


def test_class_spec_refuses_laws_without_a_finite_mean_or_family() -> None:
    with pytest.raises(ValueError, match=r"no finite mean .*shape above 1"):
        ClassSpec("gpu", 1.0, 1e5, 24.0, family="loglogistic")
    with pytest.raises(ValueError, match="unknown lifetime family 'gamma'"):
        ClassSpec("gpu", 1.0, 1e5, 24.0, family="gamma")
    with pytest.raises(ValueError, match=r"pass shape=1\.0"):
        ClassSpec("gpu", 0.7, 1e5, 24.0, family="exponential")
    # a Weibull with shape above ~3.44 has its mean below its median: no log-normal matches it
    with pytest.raises(ValueError, match="not above its median"):
        ClassSpec("gpu", 5.0, 1e5, 24.0).as_family("lognormal")


def _law_sd(spec: ClassSpec) -> float:
    """Standard deviation of the lifetime (finite for every law tested on its mean)."""
    return float(_scipy_law(spec).std())


def _check_draws(draws: np.ndarray, specs: list[ClassSpec]) -> None:
    """Sample mean within a 99.9 % z bound of its standard error; median by a binomial bound."""
    n = draws.shape[0]
    for j, spec in enumerate(specs):
        column = draws[:, j]
        # the share of draws below the true median is Binomial(n, 1/2) / n whatever the law
        below = float(np.mean(column < spec.median_h))
        assert abs(below - 0.5) <= Z_999 * 0.5 / math.sqrt(n), (spec, below)
        heavy = spec.family == "loglogistic" and spec.shape <= 2  # infinite variance
        if not heavy:
            bound = Z_999 * _law_sd(spec) / math.sqrt(n)
            assert abs(column.mean() - spec.mtbf_h) <= bound, (spec, column.mean(), bound)


@pytest.mark.parametrize("family", FAMILIES)
def test_drawn_lifetimes_match_each_family_mean_and_median(family: str) -> None:
    config = SynthConfig().with_families({"all": family})
    specs = list(config.classes.values())
    assert all(s.family == family for s in specs)
    draws = lifetimes_h(
        np.random.default_rng(11),
        [s.family for s in specs],
        np.array([s.shape for s in specs]),
        np.array([s.scale_h for s in specs]),
        N_DRAWS,
    )
    assert draws.shape == (N_DRAWS, len(specs))
    _check_draws(draws, specs)


def test_drawn_lifetimes_of_mixed_families_match_per_column() -> None:
    classes = default_classes()
    specs = [
        classes["gpu"],
        classes["gpu_memory"].as_family("lognormal"),
        classes["nvlink"].as_family("loglogistic"),
        classes["pcie"].as_family("exponential"),
        classes["gpu_memory"].as_family("loglogistic"),  # beta 1.6: median only
    ]
    draws = lifetimes_h(
        np.random.default_rng(12),
        [s.family for s in specs],
        np.array([s.shape for s in specs]),
        np.array([s.scale_h for s in specs]),
        N_DRAWS,
    )
    _check_draws(draws, specs)


# sha256 of every landing file but ground_truth.json, and of the ground truth restricted to the
# keys it had before families existed, computed on main's code (2a2b13b) before the change.
BEFORE = {
    (16, 14, 0): (
        "81cab2a2e38ee2809697858534796cf81bd79e8eeb13744d35909e866d1b21bf",
        "ea49e1754a0a70a947abc9453d10eaffb78281ec5187581730eb9c00325640d0",
    ),
    (24, 30, 5): (
        "68305de41d2cfc971b06fcf3c40d8ca6941fd5ea888fd0f856a13efa215c5d7c",
        "aeeb68c6e645a44274438b3750e64c4112284ec44c9db62e41c2d8751b850258",
    ),
}
OLD_CLASS_KEYS = ("level", "weibull_shape", "weibull_scale_h", "mtbf_h", "repair_median_h")
# what the failure process (fix kinds, bad units, non-hardware interruptions, node events on by
# default) added to the ground truth
NEW_TRUTH_KEYS = ("failure_process", "failures_by_fix", "non_hardware")
NEW_PARAMS = (
    "fix_repair_median_h",
    "bad_unit_share",
    "bad_unit_factor",
    "non_hardware",
    "installed_in_window_share",
)
NEW_FAILURE_KEYS = ("fix", "bad_unit", "ticket", "forced")


@pytest.mark.parametrize(("nodes", "days", "seed"), list(BEFORE))
def test_default_config_writes_what_it_wrote_before_families(
    tmp_path: Path, nodes: int, days: int, seed: int
) -> None:
    """With the later features off, the old default fleet's bytes and truth, unchanged.

    Since the failure process (issue 25) the default fleet differs on purpose (fixes other than
    a replacement, bad units, non-hardware interruptions, node events); switched off, it is
    byte for byte what the generator wrote before families existed.
    """
    out = tmp_path / "landing"
    config = SynthConfig(
        nodes=nodes, days=days, seed=seed, node_events=False, bad_unit_share=0.0, non_hardware={}
    ).with_fixes({"all": {"replace": 1.0}})
    truth = synthesize(out, config)
    files = hashlib.sha256()
    for path in sorted(out.rglob("*")):
        if path.is_file() and path.name != "ground_truth.json":
            files.update(str(path.relative_to(out)).encode())
            files.update(path.read_bytes())
    classes = truth["classes"]
    assert all(v["family"] == "weibull" for v in classes.values())
    assert all(set(v["params"]) == {"lambda_", "rho_"} for v in classes.values())
    truth["classes"] = {k: {f: v[f] for f in OLD_CLASS_KEYS} for k, v in classes.items()}
    for key in NEW_TRUTH_KEYS:
        truth.pop(key)
    for key in NEW_PARAMS:
        truth["params"].pop(key)
    for law in truth["params"]["classes"].values():
        assert law.pop("fixes") == {"replace": 1.0}
    for row in truth["failures"]:
        assert row["fix"] == "replace"
        assert row["ticket"]
        for key in NEW_FAILURE_KEYS:
            row.pop(key)
    for row in truth["interruptions"]:
        row.pop("true_class")
    old_truth = hashlib.sha256(json.dumps(truth, sort_keys=True).encode()).hexdigest()
    assert (files.hexdigest(), old_truth) == BEFORE[(nodes, days, seed)]


def test_with_families_converts_named_classes_only() -> None:
    config = SynthConfig().with_families({"all": "lognormal", "nic": "exponential"})
    assert config.classes["nic"].family == "exponential"
    assert {s.family for n, s in config.classes.items() if n != "nic"} == {"lognormal"}
    one = SynthConfig().with_families({"gpu": "loglogistic"})
    assert [n for n, s in one.classes.items() if s.family != "weibull"] == ["gpu"]
    with pytest.raises(ValueError, match="unknown class 'gpux'; use one of gpu, gpu_memory"):
        SynthConfig().with_families({"gpux": "lognormal"})


def test_synth_cli_family_writes_the_law_to_the_ground_truth(tmp_path: Path) -> None:
    out = tmp_path / "landing"
    args = ["synth", "--out", str(out), "--nodes", "8", "--days", "10", "--json"]
    result = runner.invoke(app, [*args, "--family", "all=lognormal", "--family", "nic=loglogistic"])
    assert result.exit_code == 0, result.output
    truth = json.loads((out / "ground_truth.json").read_text())
    gpu, nic = truth["classes"]["gpu"], truth["classes"]["nic"]
    base = default_classes()
    assert gpu["family"] == "lognormal"
    assert gpu["weibull_shape"] is None
    assert gpu["weibull_scale_h"] is None
    assert gpu["params"]["mu_"] == pytest.approx(math.log(base["gpu"].median_h))
    assert gpu["mtbf_h"] == pytest.approx(base["gpu"].mtbf_h)
    assert nic["family"] == "loglogistic"
    assert nic["params"]["alpha_"] == pytest.approx(base["nic"].median_h)
    assert truth["params"]["classes"]["nic"]["family"] == "loglogistic"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("gpux=lognormal", "unknown class 'gpux'; use one of gpu, gpu_memory, nvlink"),
        ("gpu=gamma", "unknown lifetime family 'gamma'; use one of weibull, exponential"),
        ("gpu", "--family takes CLASS=FAMILY"),
    ],
)
def test_synth_cli_family_errors_are_one_line(tmp_path: Path, value: str, message: str) -> None:
    out = tmp_path / "landing"
    result = runner.invoke(app, ["synth", "--out", str(out), "--nodes", "4", "--family", value])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (out / "ground_truth.json").exists()
