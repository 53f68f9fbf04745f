"""Watching and drawing a trained agent: frames, animations, recorded episodes and search trees,
and the ``watch``, ``tree`` and ``play`` commands on a tiny tic-tac-toe run."""

import io
import math
import re
from types import SimpleNamespace

import jax
import numpy as np
import pytest
from test_agent import tiny_tic_tac_toe

from mz_jax import NetworkConfig, SearchConfig, TrainConfig
from mz_jax.cli.main import main
from mz_jax.run.agent import Agent
from mz_jax.run.loop import run_training
from mz_jax.show import animation, frames, watch
from mz_jax.show.episode import Step, position_after, record_episode
from mz_jax.show.tree import tree_nodes, tree_svg
from mz_jax.training.build import build

SIMULATIONS = 8


def cartpole_agent(policy: str) -> Agent:
    config = TrainConfig(
        env="gymnax:CartPole-v1",
        search=SearchConfig(policy=policy, num_simulations=SIMULATIONS),
        network=NetworkConfig(kind="mlp", hidden_sizes=(16,), latent_size=16),
    )
    return Agent(config, build(config).init_params(jax.random.key(0)))


@pytest.fixture(scope="module")
def agent():
    """An untrained CartPole agent with the muzero policy: its greedy action is the most visited."""
    return cartpole_agent("muzero")


# --------------------------------------------------------------------------------------------------
# Animations.


def visible_frame(values: str, key_times: str, t: float) -> str:
    """The value of a discrete SMIL animation at loop fraction ``t``: the last key at or before."""
    keys = [float(k) for k in key_times.split(";")]
    return values.split(";")[max(i for i, k in enumerate(keys) if k <= t)]


@pytest.mark.parametrize("count", [2, 3, 7])
def test_animated_svg_shows_exactly_one_frame_at_each_moment(count):
    drawn = [frames.grid(np.eye(2)) for _ in range(count)]
    svg = animation.animated_svg(drawn, [f"caption <{i}>" for i in range(count)])
    animations = re.findall(r'<animate [^>]*values="([^"]+)" keyTimes="([^"]+)"', svg)
    assert len(animations) == count
    for t in np.linspace(0.0, 0.999, 97):
        shown = [i for i, (v, k) in enumerate(animations) if visible_frame(v, k, t) == "visible"]
        assert shown == [math.floor(t * count)], t
    assert f'dur="{count * 0.5:g}s"' in svg
    assert f"caption &lt;{count - 1}&gt;" in svg  # escaped


def test_animated_svg_is_as_large_as_its_largest_frame_and_a_caption():
    small, large = frames.grid(np.zeros((2, 3))), frames.grid(np.zeros((4, 2)))
    svg = animation.animated_svg([small, large], ["a", "b"])
    # grid cells are 16 px: 3 columns by 4 rows at most, then a caption line and a margin of 4
    assert animation.svg_size(svg) == (48, 64 + animation.CAPTION_LINE_HEIGHT + 4)
    assert animation.svg_size('<svg width="12.5px" height="3">') == (12.5, 3.0)


def test_captions_wrap_at_their_separators():
    caption = "episode 1 · step 3 · action 0 (a1) · reward 0"
    assert animation.wrap_caption(caption, 40) == ["episode 1 · step 3 · action 0 (a1)", "reward 0"]
    assert animation.wrap_caption(caption, 8) == [
        "episode 1",
        "step 3",
        "action 0 (a1)",
        "reward 0",
    ]
    assert animation.wrap_caption(caption, 100) == [caption]
    wide = frames.grid(np.zeros((2, 40)))  # 640 px: one line
    # 32 px: lines of 24 characters, the least: "episode 1 · step 3" (18), then
    # "action 0 (a1) · reward 0" (24)
    narrow = frames.grid(np.zeros((2, 2)))
    line = animation.CAPTION_LINE_HEIGHT
    assert animation.svg_size(animation.animated_svg([wide], [caption]))[1] == 32 + line + 4
    assert animation.svg_size(animation.animated_svg([narrow], [caption]))[1] == 32 + 2 * line + 4


def test_html_page_has_every_frame_and_caption_and_no_outside_resource():
    drawn = [frames.cartpole(np.array([x, 0, 0, 0])) for x in (-1.0, 0.0, 1.0)]
    page = animation.html_page(drawn, ["one", "two", "three & more"], title="t")
    assert page.count('<figure class="frame"') == 3
    assert page.count(" hidden>") == 2  # all but the first start hidden
    assert "three &amp; more" in page
    assert "http" not in page.replace("http://www.w3.org/2000/svg", "")


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: animation.animated_svg([], []), "frames is empty"),
        (lambda: animation.html_page(["<svg/>"], [], title=""), "0 captions for 1 frames"),
        (
            lambda: animation.animated_svg([frames.grid(np.eye(2))], ["a"], seconds_per_frame=0),
            "seconds_per_frame 0 is invalid",
        ),
        (lambda: animation.svg_size("<svg>"), "no numeric width"),
    ],
)
def test_animation_refuses_bad_input_in_one_line(call, message):
    with pytest.raises(ValueError, match=message) as error:
        call()
    assert "\n" not in str(error.value)


# --------------------------------------------------------------------------------------------------
# Frames.


def numbers(svg: str, tag: str, names: tuple[str, ...]) -> list[tuple[float, ...]]:
    pattern = "".join(rf'[^>]*\b{name}="([-0-9.]+)"' for name in names)
    return [tuple(map(float, m.groups())) for m in re.finditer(rf"<{tag}{pattern}", svg)]


def test_cartpole_pole_is_upright_at_zero_and_leans_with_the_angle():
    # the pole is the second line: x1, y1 at the cart, x2, y2 at its end
    names = ("x1", "y1", "x2", "y2")
    upright = numbers(frames.cartpole(np.zeros(4)), "line", names)[1]
    assert upright[0] == upright[2] and upright[3] < upright[1]
    x1, y1, x2, y2 = numbers(
        frames.cartpole(np.array([0.0, 0.0, math.pi / 2, 0.0])), "line", names
    )[1]
    assert y2 == pytest.approx(y1, abs=0.1) and x2 > x1  # flat, to the right
    # the cart moves right with x: 320 px for 6 units of track
    cart = numbers(frames.cartpole(np.array([1.2, 0, 0, 0])), "rect", ("x",))[0][0]
    centre = numbers(frames.cartpole(np.zeros(4)), "rect", ("x",))[0][0]
    assert cart - centre == pytest.approx(1.2 * 320 / 6, abs=0.1)


def test_acrobot_hangs_down_at_rest_and_reaches_the_goal_line_inverted():
    def points(theta1, theta2):
        observation = [math.cos(theta1), math.sin(theta1), math.cos(theta2), math.sin(theta2), 0, 0]
        svg = frames.acrobot(np.array(observation))
        polyline = re.search(r'<polyline points="([^"]+)"', svg).group(1)
        goal = float(re.search(r'<line x1="0" y1="([-0-9.]+)"', svg).group(1))
        return [tuple(map(float, p.split(","))) for p in polyline.split()], goal

    (pivot, elbow, tip), goal = points(0.0, 0.0)
    assert pivot[0] == elbow[0] == tip[0] and pivot[1] < elbow[1] < tip[1]  # straight down
    (pivot, elbow, tip), goal = points(math.pi, 0.0)
    unit = 220 / 5
    assert elbow[1] == pytest.approx(goal, abs=0.1)  # one link above the pivot: on the line
    assert tip[1] == pytest.approx(pivot[1] - 2 * unit, abs=0.1)


def test_grid_colours_each_cell_by_its_first_non_zero_channel():
    image = np.zeros((2, 3, 2), np.float32)
    image[0, 0, 0] = 1.0  # channel 0
    image[1, 2, 1] = 0.5  # channel 1, half opacity
    image[0, 1, :] = 1.0  # both: the first wins
    cells = re.findall(
        r'<rect x="(\d+)" y="(\d+)" width="16" height="16" fill="(#\w+)" '
        r'fill-opacity="([0-9.]+)"',
        frames.grid(image),
    )
    red, blue = frames.CHANNEL_COLOURS[1], frames.CHANNEL_COLOURS[0]
    assert sorted(cells) == sorted(
        [("0", "0", blue, "1.00"), ("16", "0", blue, "1.00"), ("32", "16", red, "0.50")]
    )


def test_bars_are_scaled_and_signed():
    svg = frames.bars(np.array([1.0, -0.5]), scale=np.array([2.0, 1.0]))
    (x0, _, w0), (x1, _, w1) = numbers(svg, "rect", ("x", "y", "width"))
    centre, half = 320 / 2 + 30, 320 / 2 - 40
    assert (x0, w0) == (pytest.approx(centre), pytest.approx(half / 2))  # right, half length
    assert (x1, w1) == (pytest.approx(centre - half / 2), pytest.approx(half / 2))  # left


def test_a_board_game_draws_itself_and_names_moves_by_coordinates():
    env = SimpleNamespace(name="pgx:tic_tac_toe", num_actions=9)
    backend = position_after(env, jax.random.key(0), [4])[2]
    svg = frames.draw("pgx:tic_tac_toe", np.zeros((3, 3, 2)), backend)
    assert svg.startswith("<svg") and animation.svg_size(svg)[0] > 0
    assert frames.action_name("pgx:tic_tac_toe", 4) == "4 (b2)"
    assert frames.action_name("gymnax:CartPole-v1", 1) == "1 (right)"
    assert frames.action_name("gymnax:Breakout-MinAtar", 2) == "2"


# --------------------------------------------------------------------------------------------------
# Recorded episodes.


def test_a_recorded_episode_replays_in_the_environment(agent):
    steps = record_episode(agent, jax.random.key(3), max_steps=30)
    *decisions, last = steps
    assert last.action is None and last.visit_counts is None
    # the environment stepped with the recorded actions reaches the recorded observations
    env = agent.env
    reset_key, key = jax.random.split(jax.random.key(3))
    state, timestep = env.reset(reset_key)
    for step in decisions:
        np.testing.assert_allclose(step.observation, timestep.observation, rtol=1e-6)
        _, step_key, key = jax.random.split(key, 3)
        state, timestep = env.step(step_key, state, step.action)
        assert step.reward == 1.0  # CartPole pays 1 a step
    # greedy muzero: the action is the most visited, every simulation visits one root child
    for step in decisions:
        assert step.visit_counts.sum() == SIMULATIONS
        assert step.action == int(np.argmax(step.visit_counts))
    ended = bool(timestep.terminated | timestep.truncated)
    assert last.done == ended and len(decisions) == (len(decisions) if ended else 30)
    final = timestep.final_observation if ended else timestep.observation
    np.testing.assert_allclose(last.observation, final, rtol=1e-6)


def test_record_episode_refuses_a_bad_length(agent):
    with pytest.raises(ValueError, match="max_steps 0 is invalid: allowed an integer >= 1"):
        record_episode(agent, jax.random.key(0), max_steps=0)


def test_position_after_refuses_illegal_moves_in_one_line():
    env = SimpleNamespace(name="pgx:tic_tac_toe", num_actions=9)
    for moves, message in [
        ([9], "is not an action of pgx:tic_tac_toe: allowed 0 to 8"),
        ([4, 4], "move 2 of \\[4, 4\\], 4, is illegal there: legal \\[0, 1, 2, 3, 5, 6, 7, 8\\]"),
        ([0, 3, 1, 4, 2], "ends the episode"),
    ]:
        with pytest.raises(ValueError, match=message) as error:
            position_after(env, jax.random.key(0), moves)
        assert "\n" not in str(error.value)


# --------------------------------------------------------------------------------------------------
# Search trees.


def hand_made_tree():
    """Root (node 0, 4 visits) with children on action 0 (node 1, 2 visits) and action 2 (node 2,
    1 visit); node 1 has a child on action 1 (node 3, 1 visit). Three actions, batch of one."""
    unvisited = -1
    children_index = np.full((4, 3), unvisited)
    children_index[0, 0], children_index[0, 2], children_index[1, 1] = 1, 2, 3
    children_visits = np.zeros((4, 3), int)
    children_visits[0, 0], children_visits[0, 2], children_visits[1, 1] = 2, 1, 1
    logits = np.zeros((4, 3))
    logits[0] = [math.log(2), 0.0, 0.0]  # prior 1/2, 1/4, 1/4
    rewards = np.zeros((4, 3))
    rewards[0, 0] = 1.0
    discounts = np.full((4, 3), -1.0)  # two players: the child's value is the opponent's
    values = np.zeros((4, 3))
    values[0, 0], values[0, 2], values[1, 1] = 0.25, -0.5, 0.75
    rows = dict(
        node_visits=[4, 2, 1, 1],
        node_values=[0.1, 0.25, -0.5, 0.75],
        children_index=children_index,
        children_prior_logits=logits,
        children_visits=children_visits,
        children_rewards=rewards,
        children_discounts=discounts,
        children_values=values,
    )
    return SimpleNamespace(**{name: np.asarray(value)[None] for name, value in rows.items()})


def test_tree_nodes_read_the_tree_depth_first_by_visits():
    nodes = tree_nodes(hand_made_tree())
    assert [(n.node, n.parent, n.edge, n.depth, n.visits) for n in nodes] == [
        (0, None, None, 0, 4),
        (1, 0, 0, 1, 2),
        (3, 1, 1, 2, 1),
        (2, 0, 2, 1, 1),
    ]
    _, first, grandchild, second = nodes
    assert (first.prior, second.prior) == (pytest.approx(0.5), pytest.approx(0.25))
    assert first.q == pytest.approx(1.0 - 0.25) and second.q == pytest.approx(0.0 + 0.5)
    assert grandchild.prior == pytest.approx(1 / 3)  # node 1's logits are all 0
    # leaves at 0 and 1, each parent centred over its children
    assert [n.x for n in nodes] == [0.5, 0.0, 0.0, 1.0]
    assert [n.node for n in tree_nodes(hand_made_tree(), max_depth=1)] == [0, 1, 2]
    assert [n.node for n in tree_nodes(hand_made_tree(), max_children=1)] == [0, 1, 3]


def test_tree_nodes_refuse_bad_limits():
    with pytest.raises(ValueError, match="max_depth -1 is invalid"):
        tree_nodes(hand_made_tree(), max_depth=-1)
    with pytest.raises(ValueError, match="max_children 0 is invalid"):
        tree_nodes(hand_made_tree(), max_children=0)


@pytest.mark.parametrize("policy", ["muzero", "gumbel"])
def test_a_drawn_search_shows_the_searchs_visit_counts(policy):
    agent = cartpole_agent(policy)
    observation = np.array([[0.01, 0.0, 0.02, 0.0]], np.float32)
    output, tree = agent.search_with_tree(jax.random.key(0), observation)
    nodes = tree_nodes(tree, max_depth=1)
    root, *children = nodes
    assert root.visits == SIMULATIONS + 1
    visits = np.zeros(2)
    for child in children:
        visits[child.edge] = child.visits
    assert visits.sum() == SIMULATIONS
    if policy == "muzero":  # the policy of a muzero search is its root visit distribution
        np.testing.assert_allclose(visits / SIMULATIONS, output.policy[0], rtol=1e-6)
    assert output.action[0] == agent.act(jax.random.key(0), observation)[0]
    svg = tree_svg(nodes, chosen_action=int(output.action[0]), title="t")
    drawn = sorted(int(n) for n in re.findall(r">N (\d+) ", svg))
    assert drawn == sorted([SIMULATIONS + 1] + [int(v) for v in visits if v > 0])
    assert svg.count('stroke="#cc3311" stroke-width="3"') == 1  # the chosen edge


# --------------------------------------------------------------------------------------------------
# The commands, on a tiny tic-tac-toe run.


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    config = tiny_tic_tac_toe().replace(
        total_env_steps=64, search=SearchConfig(policy="muzero", num_simulations=SIMULATIONS)
    )
    workdir = tmp_path_factory.mktemp("show") / "ttt"
    run_training(config, workdir)
    return workdir


def test_watch_writes_a_frame_for_each_position(workdir, capsys):
    out = workdir.parent / "game.svg"
    assert main(["watch", "--workdir", str(workdir), "--out", str(out)]) == 0
    svg = out.read_text()
    frames_of_svg = svg.split('<g visibility="')[1:]
    captions = [
        " · ".join(re.findall(r'font-family="monospace">([^<]*)</text>', frame))
        for frame in frames_of_svg
    ]
    assert all(caption.startswith("episode 1 · step ") for caption in captions)
    moves = [c for c in captions if " · action " in c]
    assert len(captions) == len(moves) + 1
    assert 5 <= len(moves) <= 9  # a game of tic-tac-toe
    assert "end" in captions[-1]
    for caption in moves:
        visits = [int(v) for v in re.search(r"visits ([\d/]+)", caption).group(1).split("/")]
        assert len(visits) == 9 and sum(visits) == SIMULATIONS
    assert svg.count("<svg") == len(captions) + 1  # pgx's board in each frame, in one animation
    assert f"wrote {out}" in capsys.readouterr().out


def test_tree_command_draws_the_search_from_the_position_of_the_moves(workdir, capsys):
    out = workdir.parent / "tree.html"
    assert main(["tree", "--workdir", str(workdir), "--moves", "4,0", "--out", str(out)]) == 0
    page = out.read_text()
    assert page.count("<svg") == 2  # the position and the tree
    root_visits = re.search(r">root</text><text [^>]*>N (\d+) ", page).group(1)
    assert int(root_visits) == SIMULATIONS + 1
    # the root's children (the boxes one depth down) are the moves still legal after b2 and a1
    depth_one = 24 + 44 + 40
    labels = re.findall(rf'y="{depth_one:.1f}"[^>]*/><text[^>]*>a (\d) \(\w\d\)</text>', page)
    assert labels and {int(a) for a in labels} <= {1, 2, 3, 5, 6, 7, 8}
    assert "action " in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["watch", "--out", "x.gif"], "--out 'x.gif' is invalid: allowed a file name ending in"),
        (["watch", "--episodes", "0"], "--episodes 0 is invalid"),
        (["tree", "--moves", "4,x"], "argument --moves: '4,x' is invalid: allowed action"),
        (["tree", "--moves", "4,4"], "--moves: move 2 of \\[4, 4\\], 4, is illegal there"),
        (["tree", "--max-depth", "-1"], "--max-depth -1 is invalid"),
    ],
)
def test_commands_refuse_bad_input_in_one_line(workdir, capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        main([argv[0], "--workdir", str(workdir), *argv[1:]])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]  # after argparse's usage, if any
    assert re.search(message, error)


def test_play_command_reads_moves_from_standard_input(workdir, capsys, monkeypatch):
    cells = "a1 b1 c1 a2 b2 c2 a3 b3 c3".split()
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(["nonsense", *cells * 2]) + "\n"))
    assert main(["play", "--workdir", str(workdir)]) == 0
    out = capsys.readouterr().out
    assert "'nonsense' is not a move" in out
    assert re.search(r"^(You win\.|Draw\.|The agent wins\.)$", out, re.M)


def test_play_command_refuses_a_game_it_cannot_draw(tmp_path, capsys):
    (tmp_path / "config.json").write_text('{"env": "gymnax:CartPole-v1"}')
    with pytest.raises(SystemExit) as exit_info:
        main(["play", "--workdir", str(tmp_path)])
    assert exit_info.value.code == 2
    assert "'gymnax:CartPole-v1' cannot be played in the terminal" in capsys.readouterr().err


def test_captions_name_the_step_action_reward_value_and_visits():
    step = Step(
        index=3,
        observation=np.zeros(4),
        backend=None,
        player=0,
        legal_action_mask=np.ones(2, bool),
        action=1,
        reward=1.0,
        root_value=96.4321,
        visit_counts=np.array([3, 13]),
        done=False,
    )
    assert watch.caption("gymnax:CartPole-v1", step, episode=2, episode_return=3.0) == (
        "episode 2 · step 3 · action 1 (right) · reward 1 · value 96.43 · visits 3/13 · return 3"
    )
    last = step._replace(index=9, action=None, reward=0.0, root_value=None, visit_counts=None)
    assert watch.caption("gymnax:CartPole-v1", last._replace(done=True), episode=1,
                         episode_return=9.0) == "episode 1 · step 9 · end · return 9"  # fmt: skip
    assert watch.caption("gymnax:CartPole-v1", last, episode=1, episode_return=9.0) == (
        "episode 1 · step 9 · stopped (max steps) · return 9"
    )
    board = step._replace(player=1, action=4, visit_counts=np.array([0, 0, 0, 0, 8]))
    assert watch.caption(
        "pgx:tic_tac_toe", board, episode=1, episode_return=0.0, two_player=True
    ) == (
        "episode 1 · step 3 · player 1 · action 4 (b2) · reward 1 · value 96.43 · "
        "visits 0/0/0/0/8 · return 0"
    )


class ScriptedAgent:
    """Stands in for an Agent on CartPole: always pushes right, with made-up search outputs."""

    def __init__(self, env):
        self.env = env

    def search_with_tree(self, key, observation, legal_action_mask):
        output = SimpleNamespace(action=np.array([1]), root_value=np.array([0.5]))
        tree = SimpleNamespace(children_visits=np.array([[[2, 6]]]))
        return output, tree


def test_watch_frames_draw_each_position_of_a_scripted_episode():
    env = cartpole_agent("muzero").env
    drawn, captions, returns = watch.watch_frames(
        ScriptedAgent(env), jax.random.key(0), episodes=2, max_steps=5
    )
    # pushing right 5 times keeps CartPole alive: 5 decisions and the position reached, twice
    assert len(drawn) == len(captions) == 2 * 6 and returns == [5.0, 5.0]
    assert captions[0] == (
        "episode 1 · step 0 · action 1 (right) · reward 1 · value 0.50 · visits 2/6 · return 0"
    )
    assert captions[5] == "episode 1 · step 5 · stopped (max steps) · return 5"
    assert captions[6].startswith("episode 2 · step 0 ·")
    # the cart moves right: its rectangle's x grows over the episode
    carts = [float(re.search(r'<rect x="([-0-9.]+)"', frame).group(1)) for frame in drawn[:6]]
    assert carts == sorted(carts) and carts[-1] > carts[0]
