"""``benchmarks/ablation.py`` and ``benchmarks/sample_efficiency.py``: every variant they build from
a preset is a valid configuration that changes what its name says."""

import dataclasses
import sys
from pathlib import Path

import pytest

from mz_jax.presets import load_preset

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
ablation = pytest.importorskip("ablation")
sample_efficiency = pytest.importorskip("sample_efficiency")

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
DETERMINISTIC = [
    path.stem
    for path in sorted(CONFIGS.glob("*.py"))
    if load_preset(str(path)).network.num_chance_outcomes is None
]


def changed_fields(a, b):
    """The dotted names of the fields where two configurations differ."""
    changed = []
    for field in dataclasses.fields(a):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if dataclasses.is_dataclass(x):
            changed += [f"{field.name}.{name}" for name in changed_fields(x, y)]
        elif x != y:
            changed.append(field.name)
    return changed


@pytest.mark.parametrize("name", DETERMINISTIC)
def test_every_ablation_of_a_preset_is_valid_and_changes_something(name):
    preset = load_preset(name)
    arms = dict(ablation.ablations(preset))  # each built, so each passed validation
    assert arms.pop("preset") == preset
    for arm, config in arms.items():
        assert changed_fields(preset, config), arm


def test_switching_off_a_term_switches_off_what_depends_on_it():
    preset = load_preset("cartpole_sample_efficient")
    assert preset.consistency_target_params and preset.target_ema_decay > 0  # what is tested
    arms = dict(ablation.ablations(preset))
    assert changed_fields(preset, arms["consistency loss off"]) == [
        "consistency_loss_weight",
        "consistency_target_params",
    ]
    assert changed_fields(preset, arms["momentum encoder off"]) == [
        "target_ema_decay",
        "consistency_target_params",
    ]
    # Without reanalysed values no target parameters are kept: nothing is left to average.
    assert sorted(changed_fields(preset, arms["reanalysed values off"])) == [
        "consistency_target_params",
        "reanalyse_values",
        "target_ema_decay",
    ]


def test_the_cost_benchmark_switches_each_term_on_alone():
    preset = load_preset("cartpole_sample_efficient")
    variants = dict(sample_efficiency.variants(preset))
    muzero = variants.pop("MuZero (all off)")
    assert muzero.consistency_loss_weight == 0 and not muzero.reanalyse_values
    assert not muzero.augment_reflection and muzero.network.value_prefix_horizon is None
    assert variants.pop("the preset (cartpole_sample_efficient)") == preset
    for name, config in variants.items():
        assert changed_fields(muzero, config), name
