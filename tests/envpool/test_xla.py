"""env.xla(): EnvPool's (handle, recv, send, step) on jax.experimental.io_callback (needs jax;
the cleanrl extra)."""
from __future__ import annotations

import numpy as np
import pytest

from fastatari import envpool as fa_envpool

pytestmark = pytest.mark.cleanrl
jax = pytest.importorskip("jax")
jnp = jax.numpy


def make(**kw):
    return fa_envpool.make("Breakout-v5", env_type="gymnasium", num_envs=3, episodic_life=True,
                           reward_clip=True, seed=3, max_episode_steps=25, **kw)


def plain_run(actions, **kw):
    """The same steps through step(): the reference."""
    envs = make(**kw)
    try:
        envs.reset()
        return [envs.step(a) for a in actions]
    finally:
        envs.close()


def assert_same(result, expected):
    got = jax.tree_util.tree_leaves(result)
    want = jax.tree_util.tree_leaves(expected)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        g = np.asarray(g)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def test_xla_step_in_a_jitted_loop_matches_step():
    actions = np.random.default_rng(0).integers(4, size=(40, 3)).astype(np.int32)
    expected = plain_run(actions)
    envs = make()
    try:
        handle, recv, send, step = envs.xla()
        assert isinstance(handle, np.ndarray) and handle.dtype == np.uint8

        @jax.jit
        def rollout(handle, actions):  # a Python loop unrolled under jit, as CleanRL's script
            results = []
            for t in range(actions.shape[0]):
                handle, result = step(handle, actions[t])
                results.append(result)
            return handle, results

        envs.reset()
        handle, results = rollout(handle, jnp.asarray(actions[:20]))
        handle, more = rollout(handle, jnp.asarray(actions[20:]))  # the handle carries on
        for result, want in zip(results + more, expected, strict=True):
            assert_same(result, want)
        assert any(np.asarray(r[3]).any() for r in results + more)  # a 25-step truncation
    finally:
        envs.close()


def test_xla_in_scan_with_send_and_recv_apart():
    actions = np.random.default_rng(1).integers(4, size=(30, 3)).astype(np.int32)
    expected = plain_run(actions)
    envs = make()
    try:
        handle, recv, send, _ = envs.xla()

        def body(handle, action):
            handle = send(handle, action)
            handle, (obs, reward, terminated, truncated, info) = recv(handle)
            return handle, (obs, reward, terminated, truncated, info)

        envs.reset()
        handle, stacked = jax.jit(lambda h, a: jax.lax.scan(body, h, a))(handle, actions)
        for t, want in enumerate(expected):
            assert_same(jax.tree_util.tree_map(lambda x, t=t: x[t], stacked), want)
    finally:
        envs.close()


def test_xla_async_batches_with_env_ids():
    envs = fa_envpool.make("Pong-v5", num_envs=4, batch_size=2, num_threads=2)
    try:
        handle, recv, send, _ = envs.xla()
        recv_jit, send_jit = jax.jit(recv), jax.jit(send)
        envs.async_reset()
        counts = np.zeros(4, int)
        for _ in range(10):
            handle, (obs, reward, terminated, truncated, info) = recv_jit(handle)
            ids = np.asarray(info["env_id"])
            assert obs.shape == (2, 4, 84, 84) and ids.shape == (2,) and len(set(ids)) == 2
            np.testing.assert_array_equal(np.asarray(info["elapsed_step"]), counts[ids])
            counts[ids] += 1
            handle = send_jit(handle, jnp.zeros(2, jnp.int32), jnp.asarray(ids, jnp.int32))
        assert counts.sum() == 20
    finally:
        envs.close()


def test_xla_recv_with_nothing_in_flight_fails_clearly():
    envs = fa_envpool.make("Pong-v5", num_envs=2)
    try:
        handle, recv, _, _ = envs.xla()
        envs.reset()
        with pytest.raises(Exception, match="xla recv needs batch_size=2 envs in flight"):
            jax.block_until_ready(jax.jit(recv)(handle))
    finally:
        envs.close()
