"""``benchmarks/ablation.py`` and ``benchmarks/investigations/sample_efficiency.py``: every variant
they build from a preset is a valid configuration that changes what its name says."""

import dataclasses
import sys
from pathlib import Path

import pytest

from mz_jax.config.overrides import config_differences, config_to_dict
from mz_jax.config.presets import list_presets, load_preset

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import ablation
from investigations import sample_efficiency

DETERMINISTIC = [
    name for name in list_presets() if load_preset(name).network.num_chance_outcomes is None
]


def changed_fields(a, b):
    """The sorted dotted names of the fields where two configurations differ."""
    differences = config_differences(config_to_dict(a), config_to_dict(b))
    return [difference.split(":")[0] for difference in differences]


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
        "consistency_target_params",
        "target_ema_decay",
    ]
    # Without reanalysed values no target parameters are kept: nothing is left to average.
    assert changed_fields(preset, arms["reanalysed values off"]) == [
        "consistency_target_params",
        "reanalyse_values",
        "target_ema_decay",
    ]
    # Values by search are values reanalysed a way: off with them.
    by_search = dataclasses.replace(preset, reanalyse_values_by_search=True)
    by_search_arms = dict(ablation.ablations(by_search))
    assert changed_fields(by_search, by_search_arms["values by search off"]) == [
        "reanalyse_values_by_search"
    ]
    assert changed_fields(by_search, by_search_arms["reanalysed values off"]) == [
        "consistency_target_params",
        "reanalyse_values",
        "reanalyse_values_by_search",
        "target_ema_decay",
    ]
    assert changed_fields(preset, arms["+ values by search"]) == ["reanalyse_values_by_search"]
    # Windows past the newest step, on and off, change that field alone.
    newest = dataclasses.replace(preset, sample_newest_steps=not preset.sample_newest_steps)
    for config, other in ((preset, newest), (newest, preset)):
        name = "newest steps off" if config.sample_newest_steps else "+ newest steps"
        assert changed_fields(config, dict(ablation.ablations(config))[name]) == [
            "sample_newest_steps"
        ]
        assert dict(ablation.ablations(other)).get(name) is None
    # HL-Gauss value targets, on and off, change that field alone.
    assert changed_fields(preset, arms["+ HL-Gauss value targets (0.75)"]) == ["value_target_sigma"]
    gauss = dataclasses.replace(preset, value_target_sigma=0.75)
    gauss_arms = dict(ablation.ablations(gauss))
    assert "+ HL-Gauss value targets (0.75)" not in gauss_arms
    assert changed_fields(gauss, gauss_arms["HL-Gauss value targets off"]) == ["value_target_sigma"]


def test_the_cost_benchmark_switches_each_term_on_alone():
    preset = load_preset("cartpole_sample_efficient")
    variants = dict(sample_efficiency.variants(preset))
    muzero = variants.pop("MuZero (all off)")
    assert muzero.consistency_loss_weight == 0 and not muzero.reanalyse_values
    assert not muzero.augment_reflection and muzero.network.value_prefix_horizon is None
    assert variants.pop("the preset (cartpole_sample_efficient)") == preset
    for name, config in variants.items():
        assert changed_fields(muzero, config), name
