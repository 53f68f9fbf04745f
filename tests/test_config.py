"""Bad input is refused before anything is built: one error naming the field, the value, what is allowed.

Nothing here compiles or builds an environment, so every rule gets its own cheap case.
"""

import dataclasses
import math

import pytest

from mz_jax.config.search import SearchConfig
from mz_jax.config.stochastic import StochasticConfig
from mz_jax.config.train import NetworkConfig, TrainConfig


def test_defaults_are_valid():
    config = TrainConfig()
    config.check_devices(1)
    assert config.replace(num_envs=8).num_envs == 8


# (make, field named in the message, text of the value, text of what is allowed)
_INVALID = {
    "K below one": (
        lambda: TrainConfig(num_unroll_steps=0),
        "num_unroll_steps",
        "0",
        "integer >= 1",
    ),
    "K not an integer": (
        lambda: TrainConfig(num_unroll_steps=2.0),
        "num_unroll_steps",
        "2.0",
        "integer >= 1",
    ),
    "lr decay neither a count nor 'run'": (
        lambda: TrainConfig(lr_decay_updates="all"),
        "lr_decay_updates",
        "'all'",
        "None, 'run' or an integer >= 1",
    ),
    "lr decay zero": (
        lambda: TrainConfig(lr_decay_updates=0),
        "lr_decay_updates",
        "0",
        "None, 'run' or an integer >= 1",
    ),
    "discount zero": (lambda: TrainConfig(discount=0.0), "discount", "0.0", "(0.0, 1.0]"),
    "discount above one": (lambda: TrainConfig(discount=1.01), "discount", "1.01", "(0.0, 1.0]"),
    "discount negative": (lambda: TrainConfig(discount=-0.5), "discount", "-0.5", "(0.0, 1.0]"),
    "discount nan": (lambda: TrainConfig(discount=math.nan), "discount", "nan", "(0.0, 1.0]"),
    "value support zero": (
        lambda: NetworkConfig(value_support_size=0),
        "network.value_support_size",
        "0",
        "integer >= 1",
    ),
    "reward support negative": (
        lambda: NetworkConfig(reward_support_size=-3),
        "network.reward_support_size",
        "-3",
        "integer >= 1",
    ),
    "replay smaller than one sequence": (
        # 4 streams x (K + td + 1 = 5 + 10 + 1 = 16) slots = 64 transitions at least
        lambda: TrainConfig(num_envs=4, td_steps=10, replay_capacity=63),
        "replay_capacity",
        "63",
        "at least num_envs * max(num_unroll_steps + td_steps + 1, rollout_length) = 4 * 16 = 64",
    ),
    "replay smaller than one rollout": (
        lambda: TrainConfig(num_envs=4, rollout_length=20, replay_capacity=79),
        "replay_capacity",
        "79",
        "= 4 * 20 = 80",
    ),
    "min_replay_steps never reached": (
        lambda: TrainConfig(num_envs=4, replay_capacity=64, min_replay_steps=17),
        "min_replay_steps",
        "17",
        "at most replay_capacity // num_envs = 16",
    ),
    "no environments": (lambda: TrainConfig(num_envs=0), "num_envs", "0", "integer >= 1"),
    "empty batch": (lambda: TrainConfig(batch_size=0), "batch_size", "0", "integer >= 1"),
    "td_steps zero": (lambda: TrainConfig(td_steps=0), "td_steps", "0", "integer >= 1"),
    "negative updates": (
        lambda: TrainConfig(updates_per_iteration=-1),
        "updates_per_iteration",
        "-1",
        ">= 0",
    ),
    "environment without backend": (
        lambda: TrainConfig(env="CartPole-v1"),
        "env",
        "'CartPole-v1'",
        "'gymnax:",
    ),
    "seed negative": (lambda: TrainConfig(seed=-1), "seed", "-1", "[0, 2147483647]"),
    "seed past 31 bits": (lambda: TrainConfig(seed=2**31), "seed", "2147483648", "[0, 2147483647]"),
    "learning rate zero": (
        lambda: TrainConfig(learning_rate=0.0),
        "learning_rate",
        "0.0",
        "(0.0, 10.0]",
    ),
    "learning rate inf": (
        lambda: TrainConfig(learning_rate=math.inf),
        "learning_rate",
        "inf",
        "(0.0, 10.0]",
    ),
    "grad norm zero": (
        lambda: TrainConfig(max_grad_norm=0.0),
        "max_grad_norm",
        "0.0",
        "(0.0, inf)",
    ),
    "unknown optimizer": (
        lambda: TrainConfig(optimizer="lamb"),
        "optimizer",
        "'lamb'",
        "'adam' or 'sgd'",
    ),
    "momentum one": (lambda: TrainConfig(momentum=1.0), "momentum", "1.0", "[0.0, 1.0)"),
    "beta above one": (
        lambda: TrainConfig(priority_beta=(0.4, 1.5)),
        "priority_beta",
        "(0.4, 1.5)",
        "a pair (a, b), each a number in [0.0, 1.0]",
    ),
    "beta not a pair": (lambda: TrainConfig(priority_beta=0.4), "priority_beta", "0.4", "a pair"),
    "alpha negative": (
        lambda: TrainConfig(priority_alpha=-1.0),
        "priority_alpha",
        "-1.0",
        "[0.0, 10.0]",
    ),
    "no consecutive nonfinite allowed": (
        lambda: TrainConfig(max_consecutive_nonfinite=0),
        "max_consecutive_nonfinite",
        "0",
        "integer >= 1",
    ),
    "keep no checkpoints": (
        lambda: TrainConfig(keep_checkpoints=0),
        "keep_checkpoints",
        "0",
        "integer >= 1",
    ),
    "keep every zero": (
        lambda: TrainConfig(keep_checkpoint_every=0),
        "keep_checkpoint_every",
        "0",
        ">= 1",
    ),
    "checkpoint interval negative": (
        lambda: TrainConfig(checkpoint_every_seconds=-1.0),
        "checkpoint_every_seconds",
        "-1.0",
        "[0.0, inf)",
    ),
    "temperature schedule ends early": (
        lambda: TrainConfig(temperature_schedule=((0.5, 1.0),)),
        "temperature_schedule",
        "((0.5, 1.0),)",
        "last one >= 1.0",
    ),
    "temperature fraction nan": (
        lambda: TrainConfig(temperature_schedule=((math.nan, 1.0), (1.0, 0.5))),
        "temperature_schedule",
        "((nan, 1.0), (1.0, 0.5))",
        "fractions each a number in [0.0, inf)",
    ),
    "temperature zero": (
        lambda: TrainConfig(temperature_schedule=((1.0, 0.0),)),
        "temperature_schedule",
        "((1.0, 0.0),)",
        "temperatures each a number in (0.0, 100.0]",
    ),
    "network kind": (lambda: NetworkConfig(kind="rnn"), "network.kind", "'rnn'", "'mlp'"),
    "hidden sizes empty": (
        lambda: NetworkConfig(hidden_sizes=()),
        "network.hidden_sizes",
        "()",
        "non-empty tuple",
    ),
    "downsample not bool": (
        lambda: NetworkConfig(downsample="yes"),
        "network.downsample",
        "'yes'",
        "True or False",
    ),
    "reanalyse_values not bool": (
        lambda: TrainConfig(reanalyse_values=1),
        "reanalyse_values",
        "1",
        "True or False",
    ),
    "random_action_probability above 1": (
        lambda: TrainConfig(random_action_probability=1.5),
        "random_action_probability",
        "1.5",
        "[0.0, 1.0]",
    ),
    "exploration_repeat_exponent at 1": (
        lambda: TrainConfig(random_action_probability=0.1, exploration_repeat_exponent=1.0),
        "exploration_repeat_exponent",
        "1.0",
        "(1.0, 100.0]",
    ),
    "exploration_repeat_exponent without exploration": (
        lambda: TrainConfig(exploration_repeat_exponent=2.0),
        "exploration_repeat_exponent",
        "2.0",
        "random_action_probability is 0",
    ),
    "random_action_anneal over no fraction of the run": (
        lambda: TrainConfig(random_action_probability=0.3, random_action_anneal=(0.05, 0.0)),
        "random_action_anneal",
        "(0.05, 0.0)",
        "second in (0, 1]",
    ),
    "random_action_anneal to above 1": (
        lambda: TrainConfig(random_action_probability=0.3, random_action_anneal=(1.5, 0.5)),
        "random_action_anneal",
        "(1.5, 0.5)",
        "first a number in [0, 1]",
    ),
    "a negative HL-Gauss spread": (
        lambda: TrainConfig(value_target_sigma=-0.5),
        "value_target_sigma",
        "-0.5",
        "[0.0, 100.0]",
    ),
    "target_ema_decay of 1 (a target that never moves)": (
        lambda: TrainConfig(target_ema_decay=1.0),
        "target_ema_decay",
        "1.0",
        "[0.0, 1.0)",
    ),
    "target_ema_decay without target parameters": (
        lambda: TrainConfig(reanalyse_values=False, target_ema_decay=0.99),
        "target_ema_decay",
        "0.99",
        "neither reanalyse_values nor reanalyse_policy_fraction > 0",
    ),
    "consistency_target_params without the consistency loss": (
        lambda: TrainConfig(consistency_target_params=True),
        "consistency_target_params",
        "True",
        "consistency_loss_weight > 0",
    ),
    "reanalyse_values_by_search without reanalysed values": (
        lambda: TrainConfig(reanalyse_values=False, reanalyse_values_by_search=True),
        "reanalyse_values_by_search",
        "True",
        "reanalyse_values is False",
    ),
    "random_action_anneal without exploration": (
        lambda: TrainConfig(random_action_anneal=(0.05, 0.5)),
        "random_action_anneal",
        "(0.05, 0.5)",
        "random_action_probability is 0",
    ),
    "random_action_anneal without a run length": (
        lambda: TrainConfig(
            random_action_probability=0.3, random_action_anneal=(0.05, 0.5), total_env_steps=None
        ),
        "random_action_anneal",
        "(0.05, 0.5)",
        "total_env_steps is None",
    ),
    "num_seeds zero": (lambda: TrainConfig(num_seeds=0), "num_seeds", "0", "[1, 2147483648]"),
    "reward_loss_weight negative": (
        lambda: TrainConfig(reward_loss_weight=-1.0),
        "reward_loss_weight",
        "-1.0",
        "[0.0, 100.0]",
    ),
    "chance_straight_through unknown": (
        lambda: TrainConfig(stochastic=StochasticConfig(chance_straight_through="sigmoid")),
        "stochastic.chance_straight_through",
        "'sigmoid'",
        "'logits' or 'softmax'",
    ),
    "chance_codes unknown": (
        lambda: TrainConfig(stochastic=StochasticConfig(chance_codes="true")),
        "stochastic.chance_codes",
        "'true'",
        "'environment' or 'learned'",
    ),
    "search not a SearchConfig": (
        lambda: TrainConfig(search={"num_simulations": 8}),
        "search",
        "{'num_simulations': 8}",
        "SearchConfig",
    ),
}


@pytest.mark.parametrize("make, field, value, allowed", _INVALID.values(), ids=_INVALID.keys())
def test_invalid_field_is_refused_with_one_message(make, field, value, allowed):
    with pytest.raises(ValueError) as error:
        make()
    message = str(error.value)
    assert f"'{field}'" in message
    assert f"= {value} is invalid" in message
    assert allowed in message


def test_replace_validates_again():
    with pytest.raises(ValueError, match=r"'discount' = 2\.0"):
        TrainConfig().replace(discount=2.0)


def test_boundaries_are_allowed():
    config = TrainConfig(
        discount=1.0,
        num_unroll_steps=1,
        td_steps=1,
        num_envs=4,
        rollout_length=3,
        replay_capacity=12,  # exactly 4 streams x max(K + td + 1 = 3, rollout 3)
        min_replay_steps=3,  # exactly the 3 slots of a stream
        seed=2**31 - 1,
        network=NetworkConfig(value_support_size=1, reward_support_size=1),
    )
    assert config.replay_capacity == 12


@pytest.mark.parametrize(
    "search_changes, field",
    [(dict(num_simulations=0), "num_simulations"), (dict(policy="alphazero"), "policy")],
)
def test_search_config_validates_itself(search_changes, field):
    with pytest.raises(ValueError, match=field) as error:
        TrainConfig(search=SearchConfig(**search_changes))
    assert repr(next(iter(search_changes.values()))) in str(error.value)


@pytest.mark.parametrize(
    "field, value, devices", [("batch_size", 6, 4), ("num_envs", 10, 4), ("batch_size", 9, 2)]
)
def test_sizes_must_divide_by_the_devices(field, value, devices):
    config = TrainConfig(**{field: value}, replay_capacity=10_000)
    with pytest.raises(ValueError) as error:
        config.check_devices(devices)
    message = str(error.value)
    assert f"'{field}' = {value}" in message
    assert f"a multiple of the number of devices ({devices})" in message


def test_sizes_that_divide_pass():
    TrainConfig(num_envs=8, batch_size=12).check_devices(4)


def test_lr_decay_over_the_run_counts_the_updates_after_warm_up():
    # 1,000 env steps at 8 x 4 per iteration: 32 iterations (the last one partly past the end), 3
    # updates each, 96 in all, of which the first 10 warm up: the decay spans the other 86.
    config = TrainConfig(
        total_env_steps=1_000,
        num_envs=8,
        rollout_length=4,
        updates_per_iteration=3,
        warmup_updates=10,
        lr_decay_updates="run",
    )
    assert config.decay_updates == 86
    # A run shorter than its warm-up still decays over one update; a count is taken as given; a
    # run without an end, or None, keeps the rate constant.
    assert config.replace(warmup_updates=500).decay_updates == 1
    assert config.replace(lr_decay_updates=40).decay_updates == 40
    assert config.replace(total_env_steps=None).decay_updates is None
    assert config.replace(lr_decay_updates=None).decay_updates is None


def test_sample_newest_steps_must_be_a_bool():
    with pytest.raises(ValueError, match=r"'sample_newest_steps' = 'yes'.*True or False"):
        TrainConfig(sample_newest_steps="yes")


class _Unacceptable:
    """A value no field accepts: not a number, bool, string, tuple or None."""

    def __repr__(self) -> str:
        return "<unacceptable>"


# The fields TrainConfig checks by hand rather than by a rule of mz_jax.core.validation.
_CHECKED_BY_HAND = {"env", "env_options", "search", "network", "temperature_schedule"}


@pytest.mark.parametrize(
    "cls, prefix",
    [(TrainConfig, ""), (NetworkConfig, "network."), (SearchConfig, "search.")],
    ids=["TrainConfig", "NetworkConfig", "SearchConfig"],
)
def test_every_field_refuses_a_value_of_the_wrong_kind(cls, prefix):
    # A field added without a rule would be let through silently; here each one, alone, is given
    # a value no rule accepts, and the error must name it.
    unchecked = []
    for field in dataclasses.fields(cls):
        try:
            cls(**{field.name: _Unacceptable()})
        except ValueError as error:
            assert f"'{prefix}{field.name}' = <unacceptable> is invalid" in str(error), field.name
        else:
            unchecked.append(field.name)
    assert unchecked == []
    if cls is TrainConfig:
        assert _CHECKED_BY_HAND <= {field.name for field in dataclasses.fields(cls)}
