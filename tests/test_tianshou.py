"""Tianshou 2.0.1 on fastatari, as a Tianshou user writes it: its Atari env factory with
``fastatari.envpool`` in place of ``envpool``, and its ``Collector`` over
``fastatari.envpool.make(...)`` and over ``fastatari.make_vec(...)``.

Random policies, a few hundred steps. The collected buffers are compared with the same run over
the real EnvPool where it is installed, and with the env stepped by hand."""
from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

pytestmark = pytest.mark.tianshou
pytest.importorskip("tianshou")

from tianshou.algorithm.algorithm_base import RandomActionPolicy  # noqa: E402
from tianshou.data import Collector, CollectStats, VectorReplayBuffer  # noqa: E402

import fastatari  # noqa: E402
from fastatari import envpool as fa_envpool  # noqa: E402

from ._python import run_code  # noqa: E402

try:
    import envpool
except ImportError:
    envpool = None

NUM_ENVS, STEPS = 4, 400  # 100 steps per env
# Breakout with episodic life: random play loses lives (ends episodes) within 100 steps.
BREAKOUT = dict(num_envs=NUM_ENVS, seed=5, episodic_life=True, reward_clip=True)
INFO_KEYS = ("env_id", "lives", "reward", "terminated", "elapsed_step", "ram")


def collect(envs, steps=STEPS, random=False):
    """Tianshou's Collector with a random policy over ``envs``; its buffer and stats."""
    np.random.seed(0)  # RandomActionPolicy draws from numpy's global generator
    # one env's action space: EnvPool's single_action_space, a Tianshou vector env's first
    space = getattr(envs, "single_action_space", None) or envs.action_space[0]
    policy = RandomActionPolicy(space)
    collector = Collector[CollectStats](policy, envs, VectorReplayBuffer(2 * steps, len(envs)))
    collector.reset()
    stats = collector.collect(n_step=steps, random=random)
    return collector.buffer, stats


def columns(buffer):
    """The buffer's columns as (env, step) arrays: obs, obs_next, act, rew, terminated,
    truncated and ``info.KEY`` for EnvPool's info keys."""
    size = len(buffer.act) // NUM_ENVS  # each env's slot in the VectorReplayBuffer
    arrays = {key: getattr(buffer, key)
              for key in ("obs", "obs_next", "act", "rew", "terminated", "truncated")}
    arrays.update({f"info.{key}": buffer.info[key] for key in INFO_KEYS})
    return {key: np.stack([value[i * size:i * size + STEPS // NUM_ENVS] for i in range(NUM_ENVS)])
            for key, value in arrays.items()}


def replay(envs, actions):
    """Step ``envs`` by hand with the actions a Collector sent (per env and step), resetting
    finished envs by id as the Collector does; the columns it should have recorded."""
    obs, _ = envs.reset()
    rows = []
    for t in range(actions.shape[1]):
        obs_next, rew, terminated, truncated, info = envs.step(actions[:, t].astype(np.int64))
        rows.append(dict(obs=obs, obs_next=obs_next, rew=rew, terminated=terminated,
                         truncated=truncated, **{f"info.{k}": info[k] for k in INFO_KEYS}))
        obs = obs_next.copy()
        done = np.flatnonzero(terminated | truncated)
        if done.size:
            obs[done] = envs.reset(done)[0]
    return {key: np.stack([row[key] for row in rows], axis=1) for key in rows[0]}


# -- the Collector over fastatari.envpool.make -------------------------------------------------
def test_collector_over_fastatari_envpool_records_what_the_env_gives():
    envs = fa_envpool.make("Breakout-v5", **BREAKOUT)
    try:
        buffer, stats = collect(envs)
    finally:
        envs.close()
    assert stats.n_collected_steps == STEPS and stats.n_collected_episodes >= NUM_ENVS
    got = columns(buffer)
    assert got["obs"].shape == (NUM_ENVS, STEPS // NUM_ENVS, 4, 84, 84)
    assert got["obs"].dtype == np.uint8
    assert got["info.env_id"].tolist() == [[i] * (STEPS // NUM_ENVS) for i in range(NUM_ENVS)]
    assert set(np.unique(got["rew"])) <= {0.0, 1.0}  # reward_clip
    # the same actions, stepped by hand: Tianshou recorded exactly the env's results
    envs = fa_envpool.make("Breakout-v5", **BREAKOUT)
    try:
        expected = replay(envs, got["act"])
    finally:
        envs.close()
    for key, value in expected.items():
        np.testing.assert_array_equal(got[key], value, err_msg=key)


@pytest.mark.skipif(envpool is None, reason="envpool is not installed")
@pytest.mark.parametrize("episodic_life", [
    False,
    pytest.param(True, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
        "the Collector resets a finished env explicitly (reset(env_id)); after a life loss "
        "EnvPool 1.2.5 (sail-sg/envpool#344) then starts a new game, fastatari.envpool "
        "continues the game, as EnvPool's automatic reset does"))),
])
def test_collector_over_fastatari_envpool_matches_real_envpool(episodic_life):
    # EnvPool's noop_max=1 is fastatari's 0 on a game with FIRE (no random no-ops): the same
    # games, and the same buffers but for the observation of a step on which the game ends
    # (the README's table of differences). A 30-step limit ends episodes without episodic life.
    kw = dict(BREAKOUT, episodic_life=episodic_life, max_episode_steps=30)
    runs = []
    for make, noop_max in ((envpool.make_gymnasium, 1), (fa_envpool.make_gymnasium, 0)):
        envs = make("Breakout-v5", noop_max=noop_max, **kw)
        try:
            runs.append(collect(envs))
        finally:
            envs.close()
    (their_buffer, their_stats), (our_buffer, our_stats) = runs
    assert our_stats.n_collected_episodes == their_stats.n_collected_episodes
    np.testing.assert_array_equal(our_stats.returns, their_stats.returns)
    np.testing.assert_array_equal(our_stats.lens, their_stats.lens)
    theirs, ours = columns(their_buffer), columns(our_buffer)
    game_over = ours["info.terminated"].astype(bool)
    for key, value in theirs.items():
        if key == "obs_next":
            np.testing.assert_array_equal(ours[key][~game_over], value[~game_over])
        else:
            np.testing.assert_array_equal(ours[key], value, err_msg=key)


# -- Tianshou's Atari env factory, with fastatari.envpool as envpool ---------------------------
# A Tianshou user's script: fastatari.envpool stands in for envpool before Tianshou imports it.
FACTORY_SCRIPT = """
import json, sys
import numpy as np
from fastatari import envpool
sys.modules["envpool"] = envpool  # Tianshou imports envpool by name
from tianshou.algorithm.algorithm_base import RandomActionPolicy
from tianshou.data import Collector, CollectStats, VectorReplayBuffer
from tianshou.env.atari.atari_wrapper import AtariEnvFactory, make_atari_env
from tianshou.highlevel.env import EnvMode

if sys.argv[1] == "make_atari_env":
    _, training_envs, test_envs = make_atari_env("BreakoutNoFrameskip-v4", seed=0,
                                                 num_training_envs=4, num_test_envs=2)
else:
    factory = AtariEnvFactory("BreakoutNoFrameskip-v4", frame_stack=4)
    training_envs = factory.create_venv(4, EnvMode.TRAINING, seed=0)
    test_envs = factory.create_venv(2, EnvMode.TEST, seed=1)
out = {}
for name, envs in (("training", training_envs), ("test", test_envs)):
    np.random.seed(0)
    collector = Collector[CollectStats](RandomActionPolicy(envs.action_space), envs,
                                        VectorReplayBuffer(800, len(envs)))
    collector.reset()
    stats = collector.collect(n_step=400)
    config = envs.spec.config
    out[name] = dict(type=type(envs).__module__, num_envs=len(envs), task=config.task,
                     episodic_life=config.episodic_life, reward_clip=config.reward_clip,
                     stack_num=config.stack_num, steps=stats.n_collected_steps,
                     episodes=stats.n_collected_episodes,
                     obs=list(collector.buffer.obs.shape), dtype=str(collector.buffer.obs.dtype))
    envs.close()
print(json.dumps(out))
"""


def run_factory_script(entry: str) -> dict:
    done = run_code(textwrap.dedent(FACTORY_SCRIPT), entry, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def check_factory_envs(out: dict) -> None:
    for name, num_envs, is_training in (("training", 4, True), ("test", 2, False)):
        envs = out[name]
        assert envs["type"] == "fastatari.envpool.gymnasium_api", envs
        assert envs["num_envs"] == num_envs and envs["task"] == "breakout"
        # Tianshou's EnvPool settings: episodic life and clipped rewards for training only
        assert envs["episodic_life"] is is_training and envs["reward_clip"] is is_training
        assert envs["stack_num"] == 4 and envs["steps"] == 400
        assert envs["obs"] == [800, 4, 84, 84] and envs["dtype"] == "uint8"
    assert out["training"]["episodes"] >= 4  # lives lost: episodes ended, envs were reset


def test_tianshou_atari_env_factory_makes_fastatari_envpool_envs():
    check_factory_envs(run_factory_script("factory"))


@pytest.mark.skipif(np.lib.NumpyVersion(np.__version__) >= "2.0.0",
                    reason="Tianshou 2.0.1's make_atari_env first builds a gymnasium env whose "
                    "WarpFrame calls np.dtype(np.integer), which NumPy 2 refuses (before any "
                    "envpool call)")
def test_tianshou_make_atari_env_with_fastatari_envpool():
    check_factory_envs(run_factory_script("make_atari_env"))


# -- the Collector over Tianshou's own vector envs of AtariEnv ----------------------------------
# Tianshou's Collector takes its BaseVectorEnv (or EnvPool's API), not a gymnasium VectorEnv
# (gymnasium's own SyncVectorEnv fails too: no len, no step(actions, env_ids)). A Tianshou user
# with gymnasium envs writes DummyVectorEnv/SubprocVectorEnv([lambda: env, ...]): AtariEnv there
# fills the same buffer as gymnasium's pipeline.
def gymnasium_pipeline():
    import ale_py
    import gymnasium
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation
    gymnasium.register_envs(ale_py)
    env = gymnasium.make("ALE/Breakout-v5", frameskip=1)
    return FrameStackObservation(AtariPreprocessing(env, noop_max=30, frame_skip=4), 4)


@pytest.mark.parametrize("vector_env", ["DummyVectorEnv", "SubprocVectorEnv"])
def test_collector_over_tianshou_vector_envs_of_atari_env(vector_env):
    import tianshou.env
    make_vector = getattr(tianshou.env, vector_env)
    runs = []
    for make_env in (gymnasium_pipeline, lambda: fastatari.AtariEnv("breakout")):
        envs = make_vector([make_env] * NUM_ENVS)
        try:
            envs.seed(list(range(7, 7 + NUM_ENVS)))
            runs.append(collect(envs, steps=200, random=True))  # sampled: ints
        finally:
            envs.close()
    (their_buffer, their_stats), (our_buffer, our_stats) = runs
    assert our_stats.n_collected_steps == their_stats.n_collected_steps == 200
    np.testing.assert_array_equal(our_stats.returns, their_stats.returns)
    assert our_buffer.obs.shape == (400, 4, 84, 84) and our_buffer.obs.dtype == np.uint8
    for key in ("obs", "obs_next", "act", "rew", "terminated", "truncated"):
        np.testing.assert_array_equal(getattr(our_buffer, key), getattr(their_buffer, key),
                                      err_msg=key)
