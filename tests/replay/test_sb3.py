"""fastatari.replay.ReplayBuffer against Stable-Baselines3's own ReplayBuffer: under one NumPy
seed, the same samples byte for byte; in DQN, the same training."""

from __future__ import annotations

import numpy as np
import pytest

from .streams import frame_stacks

pytestmark = pytest.mark.rl
pytest.importorskip("stable_baselines3")

import torch  # noqa: E402
from gymnasium import spaces  # noqa: E402
from stable_baselines3.common import buffers  # noqa: E402

from fastatari.replay import ReplayBuffer  # noqa: E402

SPACE = spaces.Box(0, 255, (4, 6, 5), np.uint8)


class Feeder:
    """Steps of ``n_envs`` streams, fed the same into several buffers (SB3's ``add``)."""

    def __init__(self, n_envs: int, seed: int, **stream) -> None:
        self.streams = [frame_stacks(np.random.default_rng(seed + e), 10**6, **stream)
                        for e in range(n_envs)]
        self.rng = np.random.default_rng(seed)
        self.steps: list = []  # (obs, next_obs) of every step fed

    def feed(self, buffers_: list, steps: int) -> None:
        n_envs = len(self.streams)
        for _ in range(steps):
            items = [next(s) for s in self.streams]
            obs, next_obs = np.stack([i[0] for i in items]), np.stack([i[1] for i in items])
            truncated = np.array([i[3] for i in items])
            done = np.array([i[2] for i in items]) | truncated
            action = self.rng.integers(0, 6, n_envs)
            reward = self.rng.normal(size=n_envs).astype(np.float32)
            infos = [{"TimeLimit.truncated": bool(t)} for t in truncated]
            for buffer in buffers_:
                buffer.add(obs, next_obs, action, reward, done, infos)
            self.steps.append((obs, next_obs))


@pytest.mark.parametrize("n_envs", [1, 3])
@pytest.mark.parametrize("size", [12, 3000])  # wrapping many times, and never
@pytest.mark.parametrize("padding", ["zero", "reset"])
def test_samples_equal_sb3s_byte_for_byte(n_envs, size, padding):
    kw = dict(device="cpu", n_envs=n_envs, handle_timeout_termination=True)
    ours = ReplayBuffer(size, SPACE, spaces.Discrete(6), **kw)
    theirs = buffers.ReplayBuffer(size, SPACE, spaces.Discrete(6), **kw)
    feeder = Feeder(n_envs, 0, padding=padding, episode=20, life_every=7)
    for round_ in range(4):
        feeder.feed([ours, theirs], 250)
        assert (ours.pos, ours.full, ours.size()) == (theirs.pos, theirs.full, theirs.size())
        for batch in (1, 32, 256):
            np.random.seed(round_ + batch)
            a = ours.sample(batch)
            np.random.seed(round_ + batch)
            b = theirs.sample(batch)
            for name in a._fields:
                x, y = getattr(a, name), getattr(b, name)
                if y is None:
                    assert x is None
                    continue
                assert x.dtype == y.dtype and x.shape == y.shape, name
                assert torch.equal(x, y), name


@pytest.mark.parametrize("size", [12, 3000])
def test_optimize_memory_usage_follows_sb3s_index_rule_with_true_last_observations(size):
    """SB3's optimised mode draws the same indices (never the slot at pos) and returns the same
    samples, except the next observation of a transition that ended an episode: SB3 returns
    the next episode's first observation there, fastatari the true last one."""
    kw = dict(device="cpu", n_envs=2, optimize_memory_usage=True,
              handle_timeout_termination=False)
    ours = ReplayBuffer(size, SPACE, spaces.Discrete(6), **kw)
    theirs = buffers.ReplayBuffer(size, SPACE, spaces.Discrete(6), **kw)
    feeder = Feeder(2, 0, episode=6)
    differed = 0
    for round_ in range(4):
        feeder.feed([ours, theirs], 250)
        np.random.seed(round_)
        a = ours.sample(512)
        np.random.seed(round_)
        b = theirs.sample(512)
        for name in ("observations", "actions", "dones", "rewards"):
            assert torch.equal(getattr(a, name), getattr(b, name)), name
        same = (a.next_observations == b.next_observations).flatten(1).all(1)
        assert bool(same[a.dones[:, 0] == 0].all())  # differs only where an episode ended
        differed += int((~same).sum())
        # and ours is the true next observation: SB3's draws again, mapped to the steps fed
        np.random.seed(round_)
        per_env, fed = ours.buffer_size, len(feeder.steps)
        if ours.full:
            slots = (np.random.randint(1, per_env, size=512) + ours.pos) % per_env
        else:
            slots = np.random.randint(0, ours.pos, size=512)
        envs = np.random.randint(0, 2, size=512)
        for i, (slot, env) in enumerate(zip(slots, envs, strict=True)):
            step = fed - 1 - (fed - 1 - slot) % per_env  # the last step written to the slot
            np.testing.assert_array_equal(a.next_observations[i].numpy(),
                                          feeder.steps[step][1][env])
    assert differed > 0  # the streams do end episodes in the sampled transitions


def test_the_flags_sb3_refuses_together_work_and_memory_is_saved():
    buffer = ReplayBuffer(1000, spaces.Box(0, 255, (4, 84, 84), np.uint8), spaces.Discrete(6),
                          device="cpu", optimize_memory_usage=True,
                          handle_timeout_termination=True)
    feed_big = frame_stacks(np.random.default_rng(0), 1000, frame=(84, 84), episode=200)
    for obs, next_obs, terminated, truncated in feed_big:
        buffer.add(obs[None], next_obs[None], np.array([1]), np.array([0.5]),
                   np.array([terminated or truncated]), [{"TimeLimit.truncated": truncated}])
    sb3_optimised = 1000 * 4 * 84 * 84
    assert buffer.frames.nbytes < sb3_optimised / 3


def test_bad_input_names_the_problem_and_changes_nothing():
    buffer = ReplayBuffer(10, SPACE, spaces.Discrete(6), device="cpu", n_envs=2)
    with pytest.raises(ValueError, match="empty"):
        buffer.sample(4)
    Feeder(2, 0).feed([buffer], 3)
    obs = np.zeros((2, 4, 6, 5), np.uint8)
    for args, error in (((obs[:1], obs), ValueError), ((obs.astype(np.float32), obs), TypeError),
                        ((obs, obs[..., :2]), ValueError)):
        with pytest.raises(error):
            buffer.add(*args, np.zeros(2, int), np.zeros(2), np.zeros(2), [{}, {}])
    with pytest.raises(ValueError, match="infos"):
        buffer.add(obs, obs, np.zeros(2, int), np.zeros(2), np.zeros(2), [{}])
    with pytest.raises(ValueError):
        buffer.add(obs, obs, np.zeros(3, int), np.zeros(2), np.zeros(2), [{}, {}])
    assert buffer.pos == 3 and buffer.frames.pos == 3
    with pytest.raises(TypeError, match="uint8 image stacks"):
        ReplayBuffer(10, spaces.Box(-1, 1, (4,), np.float32), spaces.Discrete(2))


def test_dqn_trains_identically_with_either_buffer():
    """SB3's DQN with replay_buffer_class=fastatari.replay.ReplayBuffer: the same seed gives
    the same weights as with SB3's own buffer (the same samples, the same updates)."""
    from stable_baselines3 import DQN

    from fastatari.sb3 import make_vec_env

    weights = []
    for buffer_class in (buffers.ReplayBuffer, ReplayBuffer):
        env = make_vec_env("pong", 2, seed=0)
        try:
            model = DQN("CnnPolicy", env, buffer_size=500, learning_starts=64, batch_size=16,
                        train_freq=4, target_update_interval=50, seed=0, device="cpu",
                        replay_buffer_class=buffer_class,
                        policy_kwargs=dict(net_arch=[16], normalize_images=True))
            model.learn(240)
            weights.append([p.detach().clone() for p in model.policy.parameters()])
        finally:
            env.close()
    assert all(torch.equal(a, b) for a, b in zip(*weights, strict=True))


def test_samples_through_vec_normalize_equal_sb3s():
    """With a VecNormalize-like env (its normalize_obs and normalize_reward), the samples
    still equal SB3's: the observations go through it as SB3's do."""

    class Normalizer:
        @staticmethod
        def normalize_obs(obs):
            return obs.astype(np.float32) / 255.0

        @staticmethod
        def normalize_reward(reward):
            return reward * 2.0

    kw = dict(device="cpu", n_envs=2)
    ours = ReplayBuffer(40, SPACE, spaces.Discrete(6), **kw)
    theirs = buffers.ReplayBuffer(40, SPACE, spaces.Discrete(6), **kw)
    Feeder(2, 0).feed([ours, theirs], 30)
    np.random.seed(0)
    a = ours.sample(16, env=Normalizer())
    np.random.seed(0)
    b = theirs.sample(16, env=Normalizer())
    for name in ("observations", "actions", "next_observations", "dones", "rewards"):
        assert torch.equal(getattr(a, name), getattr(b, name)), name


def twin_buffers(steps: int = 3) -> tuple:
    made = [ReplayBuffer(10, SPACE, spaces.Discrete(6), device="cpu", n_envs=2)
            for _ in range(2)]
    Feeder(2, 0).feed(made, steps)
    return tuple(made)


OBS2 = np.zeros((2, 4, 6, 5), np.uint8)
GOOD = (np.zeros(2, int), np.zeros(2, np.float32), np.zeros(2, bool), [{}, {}])


@pytest.mark.parametrize("i, bad, error, name", [
    (0, np.array([None, None]), TypeError, "action"),  # a phantom transition before
    (0, np.array([1.5, 2.7]), ValueError, "action"),  # stored as 1 and 2 before
    (0, np.array(["1", "2"]), TypeError, "action"),
    (1, np.array([1e300, 0.0]), ValueError, "reward"),  # stored as inf before
    (2, np.array(["no", "no"]), TypeError, "done"),
    (2, np.array([0.5, 0.0]), ValueError, "done"),
    (3, [None, None], TypeError, "infos"),  # AttributeError before
    (3, [{"TimeLimit.truncated": "no"}, {}], TypeError, "TimeLimit.truncated"),
])
def test_a_refused_add_stores_nothing(i, bad, error, name):
    """Issue #45: every argument is checked and converted before anything is written; the
    buffer stays equal to its twin (np.array([None]) used to leave rb.pos 1, frames.pos 2)."""
    from .twins import assert_same

    buffer, twin = twin_buffers()
    args = list(GOOD)
    args[i] = bad
    with pytest.raises(error, match=name):
        buffer.add(OBS2, OBS2, *args)
    assert_same(buffer, twin)
    buffer.add(OBS2, OBS2, *GOOD)
    twin.add(OBS2, OBS2, *GOOD)
    assert buffer.size() == twin.size() == 4
    assert_same(buffer, twin)


def test_a_checkpoint_round_trips_the_sb3_buffer(tmp_path):
    """fastatari.checkpoint saves the SB3 drop-in (its state_dict: the frames once, SB3's
    columns, pos and full) and loads it into a new one: the same samples, and it goes on
    the same."""
    from fastatari import checkpoint

    kw = dict(device="cpu", n_envs=2, handle_timeout_termination=True)
    ours, twin = (ReplayBuffer(500, SPACE, spaces.Discrete(6), **kw) for _ in range(2))
    feeder = Feeder(2, 0, episode=20)
    feeder.feed([ours, twin], 400)
    checkpoint.save(tmp_path, memory=ours)
    loaded = ReplayBuffer(500, SPACE, spaces.Discrete(6), **kw)
    checkpoint.load(tmp_path, memory=loaded)
    assert (loaded.pos, loaded.full) == (ours.pos, ours.full)
    feeder.feed([loaded, twin], 30)
    samples = []
    for buffer in (loaded, twin):
        np.random.seed(3)
        samples.append(buffer.sample(64))
    for a, b in zip(*samples, strict=True):
        assert (a is None and b is None) or torch.equal(a, b)


def test_save_replay_buffer_writes_frames_once_and_loads_exactly_refusing_other_files(tmp_path):
    """SB3's model.save_replay_buffer pickles the drop-in compactly (each frame once, not
    SB3's observations and next_observations whole); model.load_replay_buffer and
    fastatari.sb3.load_replay_buffer take it back exactly; the latter refuses, before anything
    changes, SB3's own buffer and any other pickle."""
    import pickle

    from stable_baselines3 import DQN

    from fastatari.sb3 import load_replay_buffer, make_vec_env

    env = make_vec_env("pong", 2, seed=0)
    try:
        kw = dict(buffer_size=400, learning_starts=1000, seed=0, device="cpu",
                  policy_kwargs=dict(net_arch=[16]))
        model = DQN("CnnPolicy", env, replay_buffer_class=ReplayBuffer, **kw)
        model.learn(300)
        model.save_replay_buffer(tmp_path / "ours.pkl")
        theirs = DQN("CnnPolicy", env, **kw)
        theirs.learn(300)
        theirs.save_replay_buffer(tmp_path / "theirs.pkl")
        # 400 transitions held (the ring wrapped): about one new 84x84 frame each where SB3
        # pickles two stacks of four
        ours_size, theirs_size = ((tmp_path / f"{name}.pkl").stat().st_size
                                  for name in ("ours", "theirs"))
        assert ours_size / 400 < 7_200 and theirs_size / ours_size > 7

        for load in (DQN.load_replay_buffer, load_replay_buffer):
            fresh = DQN("CnnPolicy", env, replay_buffer_class=ReplayBuffer, **kw)
            load(fresh, tmp_path / "ours.pkl")
            assert isinstance(fresh.replay_buffer, ReplayBuffer)
            samples = []
            for buffer in (fresh.replay_buffer, model.replay_buffer):
                np.random.seed(5)
                samples.append(buffer.sample(32))
            for a, b in zip(*samples, strict=True):
                assert (a is None and b is None) or torch.equal(a, b)

        fresh = DQN("CnnPolicy", env, replay_buffer_class=ReplayBuffer, **kw)
        before = fresh.replay_buffer
        with pytest.raises(ValueError, match="begins with stable_baselines3"):
            load_replay_buffer(fresh, tmp_path / "theirs.pkl")
        (tmp_path / "other.pkl").write_bytes(pickle.dumps({"x": 1}))
        with pytest.raises(ValueError, match="holds a dict, not a ReplayBuffer"):
            load_replay_buffer(fresh, tmp_path / "other.pkl")
        (tmp_path / "code.pkl").write_bytes(pickle.dumps(_RunsCode()))
        with pytest.raises(ValueError, match="begins with builtins.print"):
            load_replay_buffer(fresh, tmp_path / "code.pkl")  # (nothing printed: not run)
        newer = (tmp_path / "ours.pkl").read_bytes().replace(b"fastatari.sb3.ReplayBuffer",
                                                             b"fastatari.sb3.ReplayBuffex")
        (tmp_path / "newer.pkl").write_bytes(newer)
        with pytest.raises(ValueError, match="not a pickled fastatari ReplayBuffer of version"):
            load_replay_buffer(fresh, tmp_path / "newer.pkl")
        assert fresh.replay_buffer is before
    finally:
        env.close()


class _RunsCode:
    def __reduce__(self):
        return (print, ("a pickle that runs code when loaded",))
