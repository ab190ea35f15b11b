"""PrioritizedReplayBuffer: n-step transitions exactly as defined, sampling in proportion to
priority, CleanRL's weights, and bad priorities refused."""

from __future__ import annotations

import numpy as np
import pytest

from fastatari.replay import PrioritizedReplayBuffer

from .streams import frame_stacks

SHAPE = (4, 6, 5)


def run(buffer: PrioritizedReplayBuffer, steps: int, seed: int = 0) -> list:
    """Feed ``steps`` steps of each env; each env's steps ``(obs, action, reward, next_obs,
    terminated, truncated)``."""
    n = buffer.n_envs
    streams = [frame_stacks(np.random.default_rng(seed + e), steps, episode=7)
               for e in range(n)]
    rng = np.random.default_rng(seed)
    fed: list = [[] for _ in range(n)]
    for _ in range(steps):
        items = [next(s) for s in streams]
        obs, next_obs = np.stack([i[0] for i in items]), np.stack([i[1] for i in items])
        terminated = np.array([i[2] for i in items])
        truncated = np.array([i[3] for i in items])
        action, reward = rng.integers(0, 6, n), rng.normal(size=n)
        buffer.add(obs, action, reward, next_obs, terminated, truncated=truncated)
        for e in range(n):
            fed[e].append((obs[e], action[e], reward[e], next_obs[e], terminated[e],
                           truncated[e]))
    return fed


def expected(steps: list, n: int, gamma: float) -> list:
    """The n-step transitions of one env's steps, from the definition."""
    out = []
    for t in range(len(steps)):
        window = []
        for step in steps[t:t + n]:
            window.append(step)
            if step[4] or step[5]:
                break
        if len(window) < n and not (window[-1][4] or window[-1][5]):
            continue  # still pending at the end of the feed
        ret = sum(gamma ** i * s[2] for i, s in enumerate(window))
        out.append((steps[t][0], steps[t][1], ret, window[-1][3], window[-1][4],
                    gamma ** len(window)))
    return out


@pytest.mark.parametrize("n_step,n_envs", [(1, 1), (3, 1), (3, 2), (5, 3)])
def test_n_step_transitions_are_as_defined(n_step, n_envs):
    buffer = PrioritizedReplayBuffer(3000, SHAPE, None, n_step, 0.9, n_envs=n_envs)
    fed = run(buffer, 120)
    for e in range(n_envs):
        want = expected(fed[e], n_step, 0.9)
        store = buffer.stores[e]
        assert store.size == len(want)
        obs, next_obs = store.gather(np.arange(store.size), np.zeros(store.size, int))
        index = e * buffer.per_env + np.arange(store.size)
        for i, (o, a, r, no, d, g) in enumerate(want):
            np.testing.assert_array_equal(obs[i], o)
            np.testing.assert_array_equal(next_obs[i], no)
            assert buffer.actions[index[i]] == a and buffer.dones[index[i]] == d
            assert buffer.rewards[index[i]] == pytest.approx(r, rel=1e-6)
            assert buffer.discounts[index[i]] == pytest.approx(g, rel=1e-6)


def test_samples_follow_priorities_with_cleanrls_weights():
    buffer = PrioritizedReplayBuffer(64, SHAPE, None, 1, 0.99, alpha=0.5, beta=0.4)
    run(buffer, 64)
    priorities = np.arange(64, dtype=np.float64)
    buffer.update_priorities(np.arange(64), priorities)
    np.random.seed(0)
    counts = np.zeros(64)
    for _ in range(400):
        batch = buffer.sample(32)
        counts += np.bincount(batch.indices, minlength=64)
        p = (priorities[batch.indices] + buffer.eps) ** 0.5
        p /= ((priorities + buffer.eps) ** 0.5).sum()
        want = (64 * p) ** -0.4
        np.testing.assert_allclose(batch.weights[:, 0], want / want.max(), rtol=1e-5)
    share = (priorities + 1e-6) ** 0.5 / ((priorities + 1e-6) ** 0.5).sum()
    np.testing.assert_allclose(counts / counts.sum(), share, atol=0.004)
    assert counts[0] == 0  # priority ~0 is (almost) never drawn


def test_a_sample_gathers_the_stored_stacks():
    buffer = PrioritizedReplayBuffer(100, SHAPE, None, 3, 0.99, n_envs=2)
    run(buffer, 80)
    np.random.seed(1)
    batch = buffer.sample(64)
    envs, slots = np.divmod(batch.indices, buffer.per_env)
    for i, (e, s) in enumerate(zip(envs, slots, strict=True)):
        obs, next_obs = buffer.stores[e].gather([s], [0])
        np.testing.assert_array_equal(batch.observations[i], obs[0])
        np.testing.assert_array_equal(batch.next_observations[i], next_obs[0])


def test_bad_priorities_and_input_are_refused_and_nothing_changes():
    buffer = PrioritizedReplayBuffer(16, SHAPE, None, 2, 0.99)
    with pytest.raises(ValueError, match="empty"):
        buffer.sample(4)
    run(buffer, 10)
    before = buffer.tree.get(np.arange(16)).copy()
    for priorities, error in (([np.nan, 1.0], ValueError), ([-0.5, 1.0], ValueError),
                              ([1.0], ValueError)):
        with pytest.raises(error):
            buffer.update_priorities(np.array([0, 1]), priorities)
    with pytest.raises(IndexError):
        buffer.update_priorities(np.array([15]), [1.0])  # never stored
    np.testing.assert_array_equal(buffer.tree.get(np.arange(16)), before)
    size = buffer.size
    obs = np.zeros((1, *SHAPE), np.uint8)
    with pytest.raises(TypeError):
        buffer.add(obs.astype(np.float32), [0], [0.0], obs, [False])
    with pytest.raises(ValueError):
        buffer.add(obs, [0, 1], [0.0], obs, [False])
    assert buffer.size == size and len(buffer.windows[0]) == 1
    for bad in (dict(n_step=0), dict(gamma=-1.0), dict(alpha=float("nan"))):
        with pytest.raises(ValueError):
            PrioritizedReplayBuffer(16, SHAPE, None, **bad)


@pytest.mark.rl
def test_cleanrl_rainbows_calls_with_torch_tensors():
    """The calls rainbow_atari.py makes (one env, batched arrays, beta annealed by the caller,
    losses as priorities): torch tensors of CleanRL's dtypes and shapes."""
    torch = pytest.importorskip("torch")
    rb = PrioritizedReplayBuffer(1000, SHAPE, torch.device("cpu"), 3, 0.99, 0.5, 0.4, 1e-6)
    run(rb, 50)
    rb.beta = 0.7
    data = rb.sample(32)
    assert data.observations.dtype == torch.uint8 and data.observations.shape == (32, *SHAPE)
    assert data.actions.shape == (32, 1) and data.actions.dtype == torch.int64
    assert data.rewards.shape == (32, 1) and data.rewards.dtype == torch.float32
    assert data.dones.dtype == torch.bool and data.weights.dtype == torch.float32
    rb.update_priorities(data.indices, torch.rand(32).numpy())
    assert data.observations.device.type == "cpu"
    # off the CPU the tensors are moved (torch's meta device: shapes, no memory)
    rb.device = "meta"
    moved = rb.sample(32)
    assert all(t.device.type == "meta" for t in (moved.observations, moved.actions,
                                                  moved.weights, moved.discounts))
    assert moved.actions.shape == (32, 1) and moved.observations.dtype == torch.uint8


def same_samples(a: PrioritizedReplayBuffer, b: PrioritizedReplayBuffer) -> None:
    np.random.seed(3)
    x = a.sample(64)
    np.random.seed(3)
    y = b.sample(64)
    for u, v in zip(x, y, strict=True):
        np.testing.assert_array_equal(u, v)


def test_a_pickled_buffer_continues_exactly():
    """Pickled (a checkpoint), with its pending n-step windows: the copy samples and goes on
    as the original does."""
    import pickle

    buffer = PrioritizedReplayBuffer(200, SHAPE, None, 3, 0.9, n_envs=2)
    run(buffer, 50)
    buffer.update_priorities(np.arange(10), np.linspace(0, 2, 10))
    copy = pickle.loads(pickle.dumps(buffer))
    for b in (buffer, copy):
        run(b, 30, seed=5)
    same_samples(buffer, copy)


def test_state_dict_resumes_exactly_and_a_bad_one_changes_nothing():
    """A state_dict (a checkpoint with the vector env's snapshots) loaded into a new buffer:
    the two go on identically, pending n-step windows, priorities and beta included; a state
    of another shape, or with a bad store or priorities, is refused with the buffer as it
    was."""
    buffer = PrioritizedReplayBuffer(200, SHAPE, None, 3, 0.9, n_envs=2)
    run(buffer, 50)
    buffer.update_priorities(np.arange(10), np.linspace(0, 2, 10))
    buffer.beta = 0.7
    state = buffer.state_dict()
    assert any(len(w["action"]) for w in state["windows"])  # windows pending
    resumed = PrioritizedReplayBuffer(200, SHAPE, None, 3, 0.9, n_envs=2)
    run(resumed, 20, seed=9)  # anything before: replaced whole
    before = resumed.state_dict()
    bad_store = dict(state, stores=[state["stores"][0], dict(state["stores"][1],
                                                             first_serial=10**9)])
    for bad in (dict(state, priorities=np.full(200, np.nan)), bad_store,
                dict(state, actions=np.zeros(5, np.int64)), dict(state, stores=state["stores"][:1]),
                dict(state, windows=[dict(w, obs=w["obs"][:, :1]) for w in state["windows"]])):
        with pytest.raises(ValueError):
            resumed.load_state_dict(bad)
        after = resumed.state_dict()
        np.testing.assert_array_equal(after["priorities"], before["priorities"])
        np.testing.assert_array_equal(after["stores"][1]["frames"], before["stores"][1]["frames"])
        assert [len(w["action"]) for w in after["windows"]] == \
            [len(w["action"]) for w in before["windows"]]
    resumed.load_state_dict(state)
    assert resumed.beta == 0.7 and resumed.size == buffer.size
    same_samples(buffer, resumed)
    for b in (buffer, resumed):
        run(b, 30, seed=5)
    same_samples(buffer, resumed)


@pytest.mark.parametrize("n_step", [1, 3, 5, 20])
def test_each_frame_is_stored_once_whatever_n(n_step):
    """Past the stack size an n-step observation no longer overlaps the last transition, but
    it is the next observation of the transition n back: as many frames stored as for 1-step
    transitions of the same steps, but for fewer than n at each episode's start (where no
    transition n back exists yet), and the stacks come back as fed."""
    buffers = [PrioritizedReplayBuffer(3000, SHAPE, None, n) for n in (1, n_step)]
    fed = []
    for obs, next_obs, terminated, truncated in frame_stacks(np.random.default_rng(4), 2000,
                                                             episode=100):
        fed.append((obs, 0, 0.0, next_obs, terminated, truncated))
        for buffer in buffers:
            buffer.add(obs[None], [0], [0.0], next_obs[None], [terminated],
                       truncated=[truncated])
    episodes = sum(step[4] or step[5] for step in fed) + 1
    one_step, buffer = (b.stores[0].frames_stored for b in buffers)
    assert buffer <= one_step + max(n_step - 2, 0) * episodes
    transitions = expected(fed, n_step, buffers[1].gamma)
    obs, next_obs = buffers[1]._stacks(np.arange(len(transitions)))
    for j, (o, _, _, n, *_) in enumerate(transitions):
        np.testing.assert_array_equal(obs[j], o)
        np.testing.assert_array_equal(next_obs[j], n)
