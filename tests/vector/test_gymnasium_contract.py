"""make_vec against gymnasium's own vector envs and wrappers: what code written for gymnasium
relies on (autoreset modes and their names, batched final_info, np_random_seed, the padding
option, misuse errors, info dtypes, RecordEpisodeStatistics on top)."""
from __future__ import annotations

import os
import time

import ale_py
import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ResetNeeded
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation
from gymnasium.wrappers.vector import RecordEpisodeStatistics

from fastatari import make_vec

gym.register_envs(ale_py)

KW = dict(repeat_action_probability=0.0, max_num_frames_per_episode=400)


def reference(n: int, mode=AutoresetMode.NEXT_STEP, padding_type="reset", **kw):
    def make():
        base = gym.make("ALE/Breakout-v5", frameskip=1, repeat_action_probability=0.0,
                        max_num_frames_per_episode=400)
        return FrameStackObservation(AtariPreprocessing(base, **kw), 4,
                                     padding_type=padding_type)

    return SyncVectorEnv([make for _ in range(n)], autoreset_mode=mode)


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, "NextStep", "next_step",
                                  AutoresetMode.SAME_STEP, "SameStep", AutoresetMode.DISABLED,
                                  "Disabled", "disabled"])
def test_autoreset_mode_accepts_gymnasiums_enum_and_its_values(mode):
    with make_vec("breakout", 1, **KW, autoreset_mode=mode) as envs:
        assert envs.metadata["autoreset_mode"] == AutoresetMode(
            mode if not isinstance(mode, str) or mode[0].isupper()
            else {"next_step": "NextStep", "disabled": "Disabled"}[mode])
        # the attribute too, as gymnasium's Sync/AsyncVectorEnv (TorchRL's GymWrapper reads it)
        assert envs.autoreset_mode is envs.metadata["autoreset_mode"]


def test_disabled_autoreset_matches_gymnasium_with_reset_masks():
    n = 2
    rng = np.random.default_rng(3)
    with make_vec("breakout", n, num_workers=2, autoreset_mode="disabled", **KW) as ours:
        ref = reference(n, AutoresetMode.DISABLED)
        assert np.array_equal(ours.reset(seed=4)[0], ref.reset(seed=4)[0])
        resets = 0
        for t in range(260):
            a = rng.integers(0, 4, n)
            obs, rew, term, trunc, info = ours.step(a)
            r_obs, r_rew, r_term, r_trunc, r_info = ref.step(a)
            assert np.array_equal(obs, r_obs) and np.array_equal(rew, r_rew), t
            assert np.array_equal(term, r_term) and np.array_equal(trunc, r_trunc), t
            ended = term | trunc
            if ended.any():
                with pytest.raises(ResetNeeded, match="DISABLED"):
                    ours.step(a)  # an ended env must be reset first: nothing changes
                obs, _ = ours.reset(options={"reset_mask": ended})
                r_obs, _ = ref.reset(options={"reset_mask": ended})
                assert np.array_equal(obs, r_obs)
                resets += 1
        assert resets >= 2
        ref.close()


def test_np_random_seed_is_per_env_like_gymnasiums():
    with make_vec("breakout", 3, num_workers=1, **KW) as envs:
        ref = gym.make_vec("ALE/Breakout-v5", 3, vectorization_mode="sync")
        for seed in (5, None, [1, None, 3]):
            envs.reset(seed=seed)
            ref.reset(seed=seed)
            assert envs.np_random_seed == ref.np_random_seed == tuple(
                envs.np_random_seed)
        ref.close()
        assert envs.np_random_seed == (1, 6, 3)


def test_random_seeds_set_at_retrieval_like_gymnasiums():
    """gymnasium's envs never seeded draw distinct seeds from entropy when first asked, keep
    them, and an unseeded reset uses them (gymnasium's test_random_seeds_set_at_retrieval;
    fastatari reported -1)."""
    ref = gym.make_vec("ALE/Breakout-v5", 3, vectorization_mode="sync")
    with make_vec("breakout", 3, num_workers=1, **KW) as envs, \
            make_vec("breakout", 3, num_workers=1, **KW) as again:
        first = {}
        for name, vec in (("ours", envs), ("gymnasium", ref)):
            seeds = vec.np_random_seed
            assert len(set(seeds)) == 3 and all(isinstance(s, int) and s >= 0 for s in seeds)
            assert vec.np_random_seed == seeds  # drawn once
            first[name] = vec.reset()[0]
            assert vec.np_random_seed == seeds  # the first reset used them
        # so that unseeded first reset is replayed by seeding another env with those seeds
        np.testing.assert_array_equal(again.reset(seed=list(envs.np_random_seed))[0],
                                      first["ours"])
    ref.close()
    with make_vec("breakout", 2, num_workers=1, **KW) as envs:  # reset first, then asked
        envs.reset()
        assert len(set(envs.np_random_seed)) == 2 and min(envs.np_random_seed) >= 0


def test_len_is_num_envs():
    with make_vec("breakout", 3, num_workers=1, **KW) as envs:
        assert len(envs) == 3


def test_zero_padding_matches_frame_stack_observation():
    n = 2
    rng = np.random.default_rng(1)
    with make_vec("breakout", n, num_workers=2, padding_type="zero", **KW) as ours:
        ref = reference(n, padding_type="zero")
        obs, _ = ours.reset(seed=2)
        assert np.array_equal(obs, ref.reset(seed=2)[0])
        assert not obs[:, :3].any() and obs[:, 3].any()
        for t in range(200):  # through episode ends and autoresets
            a = rng.integers(0, 4, n)
            assert np.array_equal(ours.step(a)[0], ref.step(a)[0]), t
        ref.close()
    with pytest.raises(ValueError, match="padding_type must be 'reset' or 'zero'"):
        make_vec("breakout", 1, padding_type="same")


def test_record_episode_statistics_wraps_make_vec():
    """gymnasium's own wrapper runs on make_vec (fastatari's game statistics are under "game",
    not "episode"); without life loss both count the same episodes."""
    envs = RecordEpisodeStatistics(make_vec("breakout", 2, num_workers=2, **KW))
    envs.reset(seed=0)
    seen = 0
    for _ in range(230):
        _, _, _, _, info = envs.step(np.ones(2, np.int64))
        if "episode" in info:
            assert np.array_equal(info["_episode"], info["_game"])
            for i in np.flatnonzero(info["_episode"]):
                assert info["episode"]["r"][i] == info["game"]["r"][i]
                assert info["episode"]["l"][i] == info["game"]["l"][i]
                seen += 1
    envs.close()
    assert seen >= 2


def test_misuse_raises_gymnasiums_exception_types_and_info_dtypes_match():
    with make_vec("breakout", 2, num_workers=1, **KW) as ours:
        ref = reference(2)
        _, info = ours.reset(seed=0)
        _, r_info = ref.reset(seed=0)
        for key in ("lives", "episode_frame_number", "frame_number"):
            assert info[key].dtype == r_info[key].dtype, key
        for env in (ours, ref):
            with pytest.raises(TypeError):
                env.reset(options={"reset_mask": np.array([1, 0])})
            with pytest.raises(ValueError):
                env.reset(options={"reset_mask": np.array([True])})
        with pytest.raises(TypeError, match="actions must be an array"):
            ours.step(0)
        ref.close()


def test_record_episode_statistics_wraps_the_single_env():
    import fastatari

    env = gym.wrappers.RecordEpisodeStatistics(fastatari.AtariEnv("breakout", **KW))
    env.reset(seed=0)
    for _ in range(200):
        _, _, term, trunc, info = env.step(1)
        if term or trunc:
            assert info["episode"]["l"] == info["game"]["l"]
            assert info["episode"]["r"] == info["game"]["r"]
            break
    else:
        raise AssertionError("no episode ended")
    env.close()


def test_ram_info_is_batched_like_the_other_info_keys():
    # ram_info (EnvPool's info["ram"]): one (n, 128) uint8 array, and in same-step mode the
    # ended episode's last RAM in final_info, each row equal to the env's own ALE RAM.
    import fastatari

    n = 2
    singles = [fastatari.AtariEnv("breakout", ram_info=True, **KW) for _ in range(n)]
    with make_vec("breakout", n, autoreset_mode="same_step", ram_info=True, **KW) as envs:
        _, info = envs.reset(seed=4)
        assert info["ram"].shape == (n, 128) and info["ram"].dtype == np.uint8
        assert info["_ram"].tolist() == [True] * n
        for i, env in enumerate(singles):
            np.testing.assert_array_equal(info["ram"][i], env.reset(seed=4 + i)[1]["ram"])
        ends = 0
        for _ in range(150):
            _, _, term, trunc, info = envs.step(np.ones(n, int))
            for i, env in enumerate(singles):
                _, _, t, tr, single_info = env.step(1)
                if t or tr:
                    ends += 1
                    np.testing.assert_array_equal(info["final_info"]["ram"][i],
                                                  single_info["ram"])
                    single_info = env.reset()[1]
                np.testing.assert_array_equal(info["ram"][i], single_info["ram"])
    for env in singles:
        env.close()
    assert ends >= n  # the frame limit (400 frames) ended every env's episode


# -- one caller at a time ----------------------------------------------------------------------
@pytest.mark.parametrize("actions", [np.ones(2, np.int64), [1, 1]], ids=["compiled", "checked"])
def test_a_call_from_a_second_thread_is_refused_and_the_env_is_intact(actions):
    """gymnasium's vector envs are not thread-safe; fastatari's says so: a call while another
    thread's call runs raises ConcurrentCallError at once (no mixed results, no hang), and
    the running call finishes as if alone; in the compiled step and in its lane for the
    front's checks. The first caller is held inside its step by its workers, stopped."""
    import signal
    import threading

    from fastatari.vector.calls import ConcurrentCallError

    with make_vec("breakout", 2, num_workers=2, **KW) as envs, \
            make_vec("breakout", 2, num_workers=2, **KW) as twin:
        envs.reset(seed=1)
        twin.reset(seed=1)
        for pid in envs.worker_pids:
            os.kill(pid, signal.SIGSTOP)
        got = {}
        first = threading.Thread(target=lambda: got.update(step=envs.step(actions)))
        try:
            first.start()
            for _ in range(300):  # until the first caller is inside
                if envs._caller.call == "step":
                    break
                time.sleep(0.01)
            for call in (lambda: envs.step(np.ones(2, int)), lambda: envs.reset(seed=0),
                         lambda: envs.send(np.ones(2, int)), envs.recv, envs.render,
                         envs.close):
                with pytest.raises(ConcurrentCallError, match=r"\(\) called while another "
                                                              r"thread's step\(\) is running"):
                    call()
        finally:
            for pid in envs.worker_pids:
                os.kill(pid, signal.SIGCONT)
            first.join(30)
        assert not envs.closed
        want = twin.step(np.ones(2, int))
        for a, b in zip(got["step"][:4], want[:4], strict=True):
            np.testing.assert_array_equal(a, b)
        for _ in range(5):  # and on, as if nothing happened
            np.testing.assert_array_equal(envs.step(np.ones(2, int))[0],
                                          twin.step(np.ones(2, int))[0])


def test_two_threads_stepping_get_only_the_clear_error():
    import threading

    from fastatari.vector.calls import ConcurrentCallError

    errors = []
    with make_vec("breakout", 2, num_workers=2, timeout=20, **KW) as envs:
        envs.reset(seed=0)

        def hammer():
            for _ in range(150):
                try:
                    envs.step(np.ones(2, int))
                except ConcurrentCallError:
                    pass
                except Exception as error:  # noqa: BLE001 - anything else is the failure
                    errors.append(error)

        threads = [threading.Thread(target=hammer) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not any(thread.is_alive() for thread in threads)
        assert errors == []
        assert envs.step(np.ones(2, int))[0].shape == (2, 4, 84, 84)


# -- memory at large num_envs --------------------------------------------------------------------
def test_the_batched_observation_space_is_gymnasiums_without_its_arrays():
    """gymnasium's batch_space materialises four (num_envs, 4, 84, 84) arrays (113 KB per env,
    11 GB at 100,000 envs); fastatari's space is equal to it and holds one env's."""
    import copy
    import pickle
    import tracemalloc

    from gymnasium import spaces
    from gymnasium.vector.utils import batch_space

    from fastatari.vector.spaces import BatchedBox

    single = spaces.Box(0, 255, (4, 84, 84), np.uint8)
    ours, theirs = BatchedBox(single, 3), batch_space(single, 3)
    assert ours == theirs and theirs == ours and ours.shape == theirs.shape == (3, 4, 84, 84)
    assert isinstance(ours, spaces.Box) and ours.dtype == theirs.dtype
    assert ours.contains(theirs.sample()) and theirs.contains(ours.sample())
    assert not ours.contains(np.zeros((2, 4, 84, 84), np.uint8))
    for again in (pickle.loads(pickle.dumps(ours)), copy.deepcopy(ours)):
        assert again.__dict__["_low"].strides[0] == 0  # no memory until the bounds are read
        assert again == theirs
    # read, the bounds are full writable arrays, as batch_space's (torch.as_tensor of a
    # read-only array warns: TorchRL converts them)
    assert ours.low.flags.writeable and ours.high.flags.writeable
    np.testing.assert_array_equal(ours.low, theirs.low)
    assert ours.low.shape == theirs.high.shape == (3, 4, 84, 84)
    tracemalloc.start()
    try:
        BatchedBox(single, 100_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2_000_000  # bytes: one env's bounds, not 11 GB
    with make_vec("breakout", 2, num_workers=1, **KW) as envs:
        assert envs.observation_space.__dict__["_low"].strides[0] == 0
        assert envs.observation_space == batch_space(envs.single_observation_space, 2)


def test_num_envs_past_the_machines_memory_is_refused_before_anything_starts():
    from fastatari.core.validate import physical_memory

    if (physical_memory() or 0) > 529 * 2**30:
        pytest.skip("this machine could hold the shared memory of 10,000,000 envs")
    with pytest.raises(MemoryError, match=r"num_envs=10000000 envs with observations of shape "
                                          r"\(4, 84, 84\) .*need 529 GiB, more than this "
                                          r"machine's memory"):
        make_vec("breakout", 10_000_000, num_workers=1)


def test_close_with_steps_in_flight_warns_as_gymnasium_does():
    envs = make_vec("breakout", 2, num_workers=1, **KW)
    envs.reset(seed=0)
    envs.send(np.zeros(2, np.int64))
    with pytest.warns(UserWarning, match="Calling `close` while waiting for a pending call"):
        envs.close()
    assert envs.closed
