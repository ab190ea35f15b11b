"""fastatari.puffer: PufferLib's native env contract, its Serial and Multiprocessing backends,
and PufferLib's GymnasiumPufferEnv over fastatari.AtariEnv, each against make_vec."""
from __future__ import annotations

import time

import numpy as np
import pytest

# before the marker: without PufferLib the module skips even where the marker is not declared
pytest.importorskip("pufferlib")
pytestmark = pytest.mark.puffer

import psutil  # noqa: E402  (a PufferLib dependency)
import pufferlib  # noqa: E402
import pufferlib.emulation  # noqa: E402
import pufferlib.vector  # noqa: E402

import fastatari  # noqa: E402
import fastatari.puffer  # noqa: E402
from fastatari.puffer import AtariPufferEnv  # noqa: E402

from ._processes import alive, linux_only  # noqa: E402

# Short games (400 frames = at most 100 agent steps), no sticky actions: episodes end, and
# autoresets happen, within a test.
SHORT = dict(repeat_action_probability=0.0, max_num_frames_per_episode=400)
STEPS = 150


def gymnasium_env(game: str, buf=None, seed=0, **options):
    """A PufferLib env creator: PufferLib's Gymnasium emulation over one fastatari.AtariEnv."""
    return pufferlib.emulation.GymnasiumPufferEnv(
        env_creator=fastatari.AtariEnv, env_kwargs=dict(game=game, **options), buf=buf, seed=seed)


def assert_same_run(vecenv, ref, seed, ref_seed, num_actions, steps=STEPS):
    """Reset both with their seeds, then step both with the same random actions: observations,
    rewards (as float32), terminals and truncations equal at every step. Returns the infos
    of both: ``vecenv``'s lists, and ``ref``'s info of each step."""
    obs, _ = vecenv.reset(seed=seed)
    ref_obs, _ = ref.reset(seed=ref_seed)
    np.testing.assert_array_equal(obs, ref_obs)
    rng = np.random.default_rng(seed)
    puffer_infos, ref_infos, ended = [], [], 0
    for t in range(steps):
        actions = rng.integers(0, num_actions, ref.num_envs).astype(np.int32)
        obs, rewards, terminals, truncations, infos = vecenv.step(actions)
        ref_obs, ref_rewards, ref_term, ref_trunc, ref_info = ref.step(actions)
        assert np.array_equal(obs, ref_obs), f"observations differ at step {t}"
        assert rewards.dtype == np.float32
        np.testing.assert_array_equal(rewards, ref_rewards.astype(np.float32))
        np.testing.assert_array_equal(terminals, ref_term)
        np.testing.assert_array_equal(truncations, ref_trunc)
        ended += int((ref_term | ref_trunc).sum())
        puffer_infos.append(infos)
        ref_infos.append(ref_info)
    assert ended >= ref.num_envs, "the run should cross episode ends"
    return puffer_infos, ref_infos


def expected_episode_infos(ref_info, games=None):
    """The infos AtariPufferEnv gives for a step whose make_vec info is ``ref_info``."""
    if "game" not in ref_info:
        return []
    out = []
    for i in np.flatnonzero(ref_info["_game"]):
        stats = {"episode_return": float(ref_info["game"]["r"][i]),
                 "episode_length": int(ref_info["game"]["l"][i])}
        if games is not None:
            stats[games[i]] = dict(stats)
        out.append(stats)
    return out


def multiprocessing_pids(vecenv):
    """PufferLib's worker processes of ``vecenv`` and everything they started (fastatari's
    workers), and the fastatari workers of its driver env, if it has any."""
    pids = set()
    for process in vecenv.processes:
        pids.add(process.pid)
        pids.update(p.pid for p in psutil.Process(process.pid).children(recursive=True))
    driver = vecenv.driver_env
    if isinstance(driver, AtariPufferEnv):
        pids.update(driver.vec.worker_pids)
    return pids


def descendants():
    return {p.pid for p in psutil.Process().children(recursive=True)}


def wait_gone(pids, seconds=5.0):
    """The processes of ``pids`` that are still alive after up to ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        left = [pid for pid in pids if alive(pid)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


# -- the native env ------------------------------------------------------------------------------
def test_native_backend_writes_puffers_buffers_in_place():
    vecenv = pufferlib.vector.make(fastatari.puffer.make, backend=pufferlib.PufferEnv,
                                   env_kwargs=dict(game="breakout", num_envs=4, num_workers=2))
    try:
        assert isinstance(vecenv, AtariPufferEnv) and isinstance(vecenv, pufferlib.PufferEnv)
        assert vecenv.num_agents == 4
        assert vecenv.single_observation_space.shape == (4, 84, 84)
        assert vecenv.single_observation_space.dtype == np.uint8
        assert vecenv.single_action_space.n == 4
        assert vecenv.observation_space.shape == (4, 4, 84, 84)
        assert not vecenv.emulated and not vecenv.done
        obs, infos = vecenv.reset(seed=0)
        assert obs is vecenv.observations and infos == []
        assert vecenv.masks.all()
        out = vecenv.step(np.zeros(4, np.int32))
        assert out[0] is vecenv.observations and out[1] is vecenv.rewards
        assert out[2] is vecenv.terminals and out[3] is vecenv.truncations
        assert vecenv.rewards.dtype == np.float32 and isinstance(out[4], list)
        # pufferl's loop: async_reset, then recv/send
        vecenv.async_reset(1)
        o, r, d, t, teacher, infos, agent_ids, masks = vecenv.recv()
        np.testing.assert_array_equal(agent_ids, np.arange(4))
        assert o is vecenv.observations and masks.all() and infos == []
        vecenv.send(np.ones(4, np.int64))
        assert vecenv.recv()[0].shape == (4, 4, 84, 84)
    finally:
        vecenv.close()


def test_native_env_matches_make_vec_byte_for_byte_with_episode_infos():
    # reset(seed=s) seeds game j with s * num_envs + j: PufferLib's rule for native envs
    env = fastatari.puffer.make("breakout", 4, num_workers=2, **SHORT)
    ref = fastatari.make_vec("breakout", 4, num_workers=2, autoreset_mode="same_step", **SHORT)
    try:
        infos, ref_infos = assert_same_run(env, ref, seed=3, ref_seed=12, num_actions=4)
        for got, ref_info in zip(infos, ref_infos, strict=True):
            assert got == expected_episode_infos(ref_info)
        assert sum(map(len, infos)) >= 4
    finally:
        env.close()
        ref.close()


def test_episode_infos_count_games_not_lives():
    env = fastatari.puffer.make("breakout", 2, num_workers=1, episodic_life=True, **SHORT)
    try:
        env.reset(seed=0)
        lives_lost = games = 0
        for _ in range(STEPS):
            _, _, terminals, _, infos = env.step(np.ones(2, np.int32))
            lives_lost += int(terminals.sum())
            games += len(infos)
        assert games >= 1 and lives_lost > games
    finally:
        env.close()


def test_unseeded_reset_uses_the_constructor_seed_once():
    env = fastatari.puffer.make("breakout", 2, seed=5, num_workers=1)
    ref = fastatari.make_vec("breakout", 2, num_workers=1, autoreset_mode="same_step")
    try:
        np.testing.assert_array_equal(env.reset()[0], ref.reset(seed=10)[0])
        for _ in range(20):  # the generators continue: a second reset is another game
            np.testing.assert_array_equal(env.step(np.ones(2, np.int32))[0],
                                          ref.step(np.ones(2, np.int32))[0])
        np.testing.assert_array_equal(env.reset()[0], ref.reset()[0])
    finally:
        env.close()
        ref.close()


def test_multi_game_env_matches_make_vec_and_reports_each_game():
    games = ["pong", "breakout"] * 2
    options = dict(full_action_space=True, num_workers=2, **SHORT)
    env = fastatari.puffer.make(games, 4, **options)
    ref = fastatari.make_vec(games, 4, autoreset_mode="same_step", **options)
    try:
        assert env.num_agents == 4 and env.single_action_space.n == 18
        infos, ref_infos = assert_same_run(env, ref, seed=1, ref_seed=4, num_actions=18)
        for got, ref_info in zip(infos, ref_infos, strict=True):
            assert got == expected_episode_infos(ref_info, env.vec.games)
        logged = {key for step in infos for info in step
                  for key, _ in pufferlib.unroll_nested_dict(info)}
        assert {"pong/episode_return", "breakout/episode_length"} <= logged
    finally:
        env.close()
        ref.close()


def test_render_gives_the_first_games_screen():
    env = fastatari.puffer.make("breakout", 2, num_workers=1, render_mode="rgb_array")
    try:
        env.reset(seed=0)
        assert env.render_mode == "rgb_array"
        frame = env.render()
        assert frame.shape == (210, 160, 3) and frame.dtype == np.uint8
        np.testing.assert_array_equal(frame, env.vec.render()[0])
    finally:
        env.close()


# -- PufferLib's Serial and Multiprocessing backends ---------------------------------------------
def test_serial_backend_of_native_envs_matches_one_make_vec():
    # Serial seeds its env k with s + k: games (s + k) * 2 + j, i.e. make_vec's seed 2 * s
    vecenv = pufferlib.vector.make(fastatari.puffer.make, backend=pufferlib.vector.Serial,
                                   num_envs=2, env_kwargs=dict(game="breakout", num_envs=2,
                                                               num_workers=1, **SHORT))
    ref = fastatari.make_vec("breakout", 4, num_workers=2, autoreset_mode="same_step", **SHORT)
    try:
        assert vecenv.num_agents == 4
        assert_same_run(vecenv, ref, seed=7, ref_seed=14, num_actions=4)
    finally:
        vecenv.close()
        ref.close()


@linux_only
def test_multiprocessing_backend_of_native_envs_matches_one_make_vec_and_leaves_nothing():
    # worker i resets its env with s + i: games (s + i) * 4 + j, i.e. make_vec's seed 4 * s
    vecenv = pufferlib.vector.make(fastatari.puffer.make,
                                   backend=pufferlib.vector.Multiprocessing, num_envs=2,
                                   num_workers=2, overwork=True,
                                   env_kwargs=dict(game="breakout", num_envs=4, num_workers=1,
                                                   **SHORT))
    ref = fastatari.make_vec("breakout", 8, num_workers=2, autoreset_mode="same_step", **SHORT)
    try:
        assert vecenv.num_agents == 8
        infos, ref_infos = assert_same_run(vecenv, ref, seed=3, ref_seed=12, num_actions=4)
        # each worker's infos arrive in worker order
        for got, ref_info in zip(infos, ref_infos, strict=True):
            assert got == expected_episode_infos(ref_info)
        started = multiprocessing_pids(vecenv)
        # PufferLib's two workers, their fastatari workers, the driver env's fastatari worker
        assert len(started) == 5
    finally:
        vecenv.close()
        ref.close()
    assert wait_gone(started) == []


@linux_only
def test_multiprocessing_async_batches_follow_each_workers_games():
    # batch_size=1: recv returns whichever PufferLib worker is ready (pufferl's async loop);
    # each worker's games depend only on the actions sent to it
    def actions_for(worker, t):
        return np.random.default_rng([worker, t]).integers(0, 4, 4).astype(np.int32)

    steps = 60
    vecenv = pufferlib.vector.make(fastatari.puffer.make,
                                   backend=pufferlib.vector.Multiprocessing, num_envs=2,
                                   num_workers=2, batch_size=1, overwork=True,
                                   env_kwargs=dict(game="breakout", num_envs=4, num_workers=1,
                                                   **SHORT))
    seen = {0: [], 1: []}  # per PufferLib worker: its observations, reset first
    try:
        vecenv.async_reset(3)
        while min(map(len, seen.values())) <= steps:
            obs, _, _, _, _, infos, agent_ids, masks = vecenv.recv()
            assert obs.shape == (4, 4, 84, 84) and masks.all()
            worker = int(agent_ids[0]) // 4
            np.testing.assert_array_equal(agent_ids, np.arange(4) + 4 * worker)
            seen[worker].append(obs.copy())
            vecenv.send(actions_for(worker, len(seen[worker]) - 1))
    finally:
        vecenv.close()
    ref = fastatari.make_vec("breakout", 8, num_workers=2, autoreset_mode="same_step", **SHORT)
    try:
        ref_obs, _ = ref.reset(seed=12)
        for t in range(steps + 1):
            for worker in (0, 1):
                np.testing.assert_array_equal(seen[worker][t], ref_obs[4 * worker:4 * worker + 4])
            ref_obs = ref.step(np.concatenate([actions_for(0, t), actions_for(1, t)]))[0]
    finally:
        ref.close()


def test_gymnasium_puffer_env_serial_matches_make_vec():
    # PufferLib's emulation: next-step autoreset (Serial resets a done env on the next send)
    vecenv = pufferlib.vector.make(gymnasium_env, backend=pufferlib.vector.Serial, num_envs=3,
                                   env_kwargs=dict(game="breakout", **SHORT))
    ref = fastatari.make_vec("breakout", 3, num_workers=1, **SHORT)
    try:
        assert vecenv.num_agents == 3
        assert_same_run(vecenv, ref, seed=2, ref_seed=2, num_actions=4)
    finally:
        vecenv.close()
        ref.close()


@linux_only
def test_gymnasium_puffer_env_multiprocessing_matches_make_vec():
    # one env per PufferLib worker: worker i's env gets the seed s + i
    vecenv = pufferlib.vector.make(gymnasium_env, backend=pufferlib.vector.Multiprocessing,
                                   num_envs=2, num_workers=2, overwork=True,
                                   env_kwargs=dict(game="breakout", **SHORT))
    ref = fastatari.make_vec("breakout", 2, num_workers=1, **SHORT)
    try:
        assert_same_run(vecenv, ref, seed=4, ref_seed=4, num_actions=4)
        started = multiprocessing_pids(vecenv)
        assert len(started) == 2  # the games run in PufferLib's workers
    finally:
        vecenv.close()
        ref.close()
    assert wait_gone(started) == []


# -- bad input, close ----------------------------------------------------------------------------
def puffer_buffers(num_agents=4, obs_shape=(4, 84, 84)):
    """The buffers PufferLib's set_buffers allocates."""
    return dict(observations=np.zeros((num_agents, *obs_shape), np.uint8),
                rewards=np.zeros(num_agents, np.float32),
                terminals=np.zeros(num_agents, bool), truncations=np.zeros(num_agents, bool),
                masks=np.ones(num_agents, bool), actions=np.zeros(num_agents, np.int32),
                teacher_actions=np.zeros(num_agents, np.int32))


def test_supplied_buffers_are_used_as_they_are():
    buf = puffer_buffers()
    env = fastatari.puffer.make("breakout", 4, buf=buf, num_workers=1)
    try:
        obs, _ = env.reset(seed=0)
        assert obs is buf["observations"] and obs.any()
        env.step(np.zeros(4, np.int32))
        assert env.rewards is buf["rewards"] and env.terminals is buf["terminals"]
    finally:
        env.close()


def _read_only(buf):
    buf["rewards"].flags.writeable = False
    return buf


@pytest.mark.parametrize("change, error, match", [
    (lambda b: dict(b, observations=np.zeros((3, 4, 84, 84), np.uint8)), ValueError,
     r"buf\['observations'\] has shape \(3, 4, 84, 84\), expected \(4, 4, 84, 84\)"),
    (lambda b: dict(b, observations=np.zeros((4, 84, 84, 4), np.uint8)), ValueError,
     r"buf\['observations'\] has shape \(4, 84, 84, 4\), expected \(4, 4, 84, 84\)"),
    (lambda b: dict(b, rewards=np.zeros(8, np.float32)), ValueError,
     r"buf\['rewards'\] has shape \(8,\), expected \(4,\) \(4 games, one agent each\)"),
    (lambda b: dict(b, observations=np.zeros((4, 4, 84, 84), np.float32)), ValueError,
     r"buf\['observations'\] has dtype float32, expected uint8"),
    (lambda b: dict(b, terminals=np.zeros(4, np.uint8)), ValueError,
     r"buf\['terminals'\] has dtype uint8, expected bool"),
    (lambda b: {k: v for k, v in b.items() if k != "masks"}, ValueError,
     r"buf lacks \['masks'\]"),
    (_read_only, ValueError, r"buf\['rewards'\] is read-only"),
    (lambda b: dict(b, rewards=[0.0] * 4), TypeError, r"buf\['rewards'\] must be a numpy array"),
    (lambda b: [b["observations"]], TypeError, r"buf must be a mapping of arrays"),
])
def test_bad_buffers_raise_clear_errors_and_leave_no_process(change, error, match):
    before = descendants()
    with pytest.raises(error, match=match) as raised:
        fastatari.puffer.make("breakout", 4, buf=change(puffer_buffers()), num_workers=1)
    # closed before the error left make(), not when the traceback holding it is freed
    assert [pid for pid in descendants() - before if alive(pid)] == []
    del raised


@pytest.mark.parametrize("keyword", ["autoreset_mode", "copy"])
def test_keywords_the_env_sets_itself_are_refused(keyword):
    with pytest.raises(TypeError, match="sets autoreset_mode='same_step' and copy=False"):
        fastatari.puffer.make("breakout", 2, **{keyword: "next_step"})


def test_a_vector_env_in_another_mode_is_refused():
    vec = fastatari.make_vec("breakout", 2, num_workers=1)
    try:
        with pytest.raises(ValueError, match="autoreset_mode='same_step' and copy=False"):
            AtariPufferEnv(vec)
    finally:
        vec.close()


def test_seeds_that_are_not_ints_are_refused_not_truncated():
    before = descendants()
    for bad in (1.7, "1", -1):
        with pytest.raises((TypeError, ValueError), match="seed must be a non-negative int"):
            fastatari.puffer.make("breakout", 2, seed=bad, num_workers=1)
    assert [pid for pid in descendants() - before if alive(pid)] == []  # none started
    env = fastatari.puffer.make("breakout", 2, num_workers=1)
    try:
        obs = env.reset(seed=2)[0].copy()
        with pytest.raises(TypeError, match="seed must be a non-negative int"):
            env.reset(seed=2.5)
        env.step(np.zeros(2, np.int32))
        np.testing.assert_array_equal(env.reset(seed=2)[0], obs)
    finally:
        env.close()


def test_bad_actions_and_games_raise_fastatari_errors():
    with pytest.raises(ValueError, match="unknown Atari game .no_such_game."):
        fastatari.puffer.make("no_such_game", 2)
    env = fastatari.puffer.make("breakout", 2, num_workers=1)
    try:
        env.reset(seed=0)
        with pytest.raises(ValueError, match=r"actions must be in \[0, 4\)"):
            env.step(np.array([0, 9], np.int32))
        with pytest.raises(ValueError, match=r"actions must have shape \(2,\)"):
            env.step(np.zeros(3, np.int32))
    finally:
        env.close()


@linux_only
def test_close_stops_the_workers_and_is_idempotent():
    env = fastatari.puffer.make("breakout", 4, num_workers=2)
    pids = env.vec.worker_pids
    env.reset(seed=0)
    env.close()
    env.close()
    assert env.vec.closed
    assert wait_gone(pids) == []
