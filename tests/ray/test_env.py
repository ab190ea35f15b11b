"""fastatari.ray on a simulated two-node Ray cluster: parity with the local vector env (sync and
async), faults (actor killed, actor process SIGKILLed, node removed), bad input, close, rollout,
and RLlib's vector_entry_point route.

One cluster for the module (head with no CPU, two 1-CPU nodes: each takes one actor); the
node-removal test adds a spare node first and runs last. Ray's traffic stays on 127.0.0.1.
"""
from __future__ import annotations

import os
import signal
import sys
import time

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # before ray is imported
os.environ["RAY_AUTH_MODE"] = "disabled"

import numpy as np  # noqa: E402
import pytest  # noqa: E402

ray = pytest.importorskip("ray")
from gymnasium.error import (  # noqa: E402
    AlreadyPendingCallError,
    ClosedEnvironmentError,
    NoAsyncCallError,
    ResetNeeded,
)
from ray.cluster_utils import Cluster  # noqa: E402

import fastatari  # noqa: E402
from fastatari import ray as fa_ray  # noqa: E402
from fastatari.vector.infos import take  # noqa: E402

from .._processes import alive, linux_only  # noqa: E402

pytestmark = pytest.mark.ray

GAME = "breakout"
# Short episodes, life loss ends them: every mode's end-of-episode path runs within ~60 steps.
OPTIONS = dict(max_num_frames_per_episode=160, terminal_on_life_loss=True)
NUM_ENVS = 6


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    # Ray's processes take the driver's working directory onto their path: started from a
    # checkout, they would import its fastatari (no compiled module) instead of the installed
    # one the tests import. A neutral directory, as a user's training script would have.
    previous = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("ray-cwd"))
    cluster = Cluster(initialize_head=True,
                      head_node_args={"num_cpus": 0, "include_dashboard": False})
    try:
        # loopback only: these variables must be set before ray is first imported
        assert cluster.address.startswith("127.0.0.1:"), cluster.address
        for _ in range(2):
            cluster.add_node(num_cpus=1)
        ray.init(address=cluster.address, log_to_driver=False)
        # the policies below travel by value: the actors cannot import this test module
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()
        os.chdir(previous)


def ray_env(**kwargs):
    kwargs = dict(OPTIONS, num_workers=1, **kwargs)
    return fa_ray.make_vec(GAME, kwargs.pop("num_envs", NUM_ENVS), **kwargs)


def local_env(**kwargs):
    kwargs = dict(OPTIONS, num_workers=2, **kwargs)
    return fastatari.make_vec(GAME, kwargs.pop("num_envs", NUM_ENVS), **kwargs)


def actions_at(t: int, ids) -> np.ndarray:
    """A fixed action per env and step, FIRE included (Breakout's ball needs it)."""
    return (np.asarray(ids) * 7 + t * 3 + (t * t) % 5) % 4


def same_info(a: dict, b: dict, rows=slice(None)) -> None:
    """Equal batched infos over ``rows``; a finished game's wall-clock seconds excepted. A key
    only one of them has must have no entry in ``rows`` (its ``_key`` mask False there)."""
    for key in a.keys() ^ b.keys():
        one = a if key in a else b
        mask = one[key] if key.startswith("_") else one["_" + key]
        assert not mask[rows].any(), key
    for key in a.keys() & b.keys():
        if isinstance(a[key], dict):
            same_info(a[key], b[key], rows)
        elif key == "t":
            continue
        elif a[key].dtype == object:
            for x, y in zip(a[key][rows], b[key][rows], strict=True):
                assert (x is None and y is None) or np.array_equal(x, y), key
        else:
            np.testing.assert_array_equal(a[key][rows], b[key][rows], err_msg=key)


def same_step(got, want, rows=slice(None)) -> None:
    for x, y in zip(got[:4], want[:4], strict=True):
        np.testing.assert_array_equal(x[rows], y[rows])
    same_info(got[4], want[4], rows)


# -- parity ------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_sync_parity_with_local(cluster, mode):
    envs, local = ray_env(autoreset_mode=mode), local_env(autoreset_mode=mode)
    try:
        assert envs.num_actors == 2 and len(set(envs.nodes)) == 2  # one actor per node
        assert [len(b) for b in envs.blocks] == [3, 3]
        got, want = envs.reset(seed=5), local.reset(seed=5)
        np.testing.assert_array_equal(got[0], want[0])
        same_info(got[1], want[1])
        assert envs.np_random_seed == local.np_random_seed == tuple(range(5, 5 + NUM_ENVS))
        ended = 0
        for t in range(70):
            a = actions_at(t, range(NUM_ENVS))
            got, want = envs.step(a), local.step(a)
            same_step(got, want)
            ended += int((got[2] | got[3]).sum())
        assert ended >= NUM_ENVS  # autoreset ran, game statistics were merged
        # a masked reset touches only the masked envs, on both actors
        mask = np.array([True, False, False, False, True, False])
        seeds = [9, None, None, None, 3, None]
        got = envs.reset(seed=seeds, options={"reset_mask": mask})
        want = local.reset(seed=seeds, options={"reset_mask": mask})
        np.testing.assert_array_equal(got[0], want[0])
        same_info(got[1], want[1])
        same_step(envs.step(actions_at(0, range(6))), local.step(actions_at(0, range(6))))
    finally:
        envs.close()
        local.close()


def test_several_games_parity_with_local(cluster):
    """One game per env, blocks of different games per actor: the same envs, and
    info["game_index"] into the env's game_names, not an actor's."""
    games = ["pong", "breakout", "pong", "seaquest", "pong", "seaquest"]  # actor 1: no breakout
    kwargs = dict(full_action_space=True, mode={"breakout": 4})
    envs = fa_ray.make_vec(games, NUM_ENVS, num_workers=1, **OPTIONS, **kwargs)
    local = fastatari.make_vec(games, NUM_ENVS, num_workers=2, **OPTIONS, **kwargs)
    try:
        assert envs.game_names == local.game_names and envs.games == local.games
        assert envs.get_action_meanings() == local.get_action_meanings()
        got, want = envs.reset(seed=4), local.reset(seed=4)
        np.testing.assert_array_equal(got[0], want[0])
        same_info(got[1], want[1])
        for t in range(30):
            a = (np.arange(NUM_ENVS) * 5 + t) % 18
            same_step(envs.step(a), local.step(a))
    finally:
        envs.close()
        local.close()


def test_async_parity_with_local(cluster):
    """Each env's trajectory under async batches across actors equals the local env's."""
    steps = 30
    local = local_env()
    try:
        local.reset(seed=1)
        want = [[] for _ in range(NUM_ENVS)]
        for t in range(steps):
            obs, reward, term, trunc, _ = local.step(actions_at(t, range(NUM_ENVS)))
            for i in range(NUM_ENVS):
                want[i].append((obs[i], reward[i], term[i], trunc[i]))
    finally:
        local.close()
    envs = ray_env(batch_size=2)
    try:
        envs.reset(seed=1)
        count = np.zeros(NUM_ENVS, int)
        got = [[] for _ in range(NUM_ENVS)]
        for ids in ([0, 3], [1, 4], [2, 5]):
            envs.send(actions_at(0, ids), ids)
        with pytest.raises(AlreadyPendingCallError):
            envs.step(actions_at(0, range(NUM_ENVS)))
        pending = NUM_ENVS
        while count.min() < steps:
            obs, reward, term, trunc, info = envs.recv()
            ids = info["env_id"]
            assert ids.size == min(2, pending) and set(info) >= {"lives", "_lives", "env_id"}
            pending -= ids.size
            for j, i in enumerate(ids):
                got[i].append((obs[j], reward[j], term[j], trunc[j]))
            count[ids] += 1
            again = ids[count[ids] < steps]
            if again.size:
                envs.send(np.array([actions_at(count[i], [i])[0] for i in again]), again)
                pending += again.size
        for i in range(NUM_ENVS):
            assert len(got[i]) == steps
            for (o, r, te, tr), (o2, r2, te2, tr2) in zip(got[i], want[i], strict=True):
                np.testing.assert_array_equal(o, o2)
                assert (r, te, tr) == (r2, te2, tr2)
    finally:
        envs.close()


# -- input checks ------------------------------------------------------------------------------
def _error(call, env):
    try:
        call(env)
    except Exception as error:  # noqa: BLE001 - compared below
        return type(error), str(error)
    return None


def test_bad_input_same_errors_as_local_nothing_sent(cluster):
    envs, local = ray_env(autoreset_mode="disabled"), local_env(autoreset_mode="disabled")
    try:
        bad = [
            lambda e: e.step(np.zeros(NUM_ENVS, int)),  # before reset
            lambda e: e.reset(seed=-1),
            lambda e: e.reset(seed=[0, 1]),
            lambda e: e.reset(options={"reset_mask": np.ones(NUM_ENVS, bool)[:2]}),
            lambda e: e.reset(seed=0, options={"reset_mask": np.eye(NUM_ENVS, dtype=bool)[0]}),
        ]
        for call in bad:
            assert _error(call, envs) == _error(call, local) is not None
        envs.reset(seed=2), local.reset(seed=2)
        bad = [
            lambda e: e.step(0),
            lambda e: e.step(np.zeros(NUM_ENVS, float)),
            lambda e: e.step(np.zeros(NUM_ENVS + 1, int)),
            lambda e: e.step(np.full(NUM_ENVS, 4)),
            lambda e: e.step([0, 1, [2]]),
            lambda e: e.send(np.zeros(2, int), [0, 0]),
            lambda e: e.send(np.zeros(1, int), [NUM_ENVS]),
            lambda e: e.send(np.zeros(0, int), []),
            lambda e: e.send(np.zeros(2, int), [1]),
            lambda e: e.recv(),
        ]
        for call in bad:
            assert _error(call, envs) == _error(call, local) is not None
        assert not envs.executor.busy()  # nothing reached an actor
        envs.send(np.zeros(2, int), [0, 4])
        with pytest.raises(AlreadyPendingCallError):
            envs.send(np.zeros(1, int), [4])
        with pytest.raises(AlreadyPendingCallError):
            envs.reset()
        while True:  # the env still works after all that
            envs.recv()
            if not envs.book.in_flight():
                break
        local.send(np.zeros(2, int), [0, 4])  # the same steps on the local env
        local.recv()
        with pytest.raises(NoAsyncCallError):
            envs.recv()
        # disabled autoreset: an ended env must be reset first, refused on the driver
        for t in range(80):
            a = actions_at(t, range(NUM_ENVS))
            got, want = envs.step(a), local.step(a)
            same_step(got, want)
            if (got[2] | got[3]).any():
                break
        ended = np.flatnonzero(got[2] | got[3])
        assert ended.size
        step = lambda env: env.step(a)  # noqa: E731
        assert _error(step, envs) == _error(step, local)
        assert _error(step, envs)[0] is ResetNeeded
        with pytest.raises(ValueError, match="needs autoreset"):
            envs.rollout(lambda obs: np.zeros(len(obs), int), 2)
        mask = np.zeros(NUM_ENVS, bool)
        mask[ended] = True
        got, want = envs.reset(options={"reset_mask": mask}), local.reset(
            options={"reset_mask": mask})
        np.testing.assert_array_equal(got[0], want[0])
        same_step(envs.step(a), local.step(a))
    finally:
        envs.close()
        local.close()
    with pytest.raises(ClosedEnvironmentError):
        envs.step(np.zeros(NUM_ENVS, int))


def test_bad_options_refused_before_any_actor(cluster):
    with pytest.raises(ValueError, match="frame_skip"):
        fa_ray.make_vec(GAME, 4, frame_skip=0)
    with pytest.raises(ValueError, match="num_actors"):
        fa_ray.make_vec(GAME, 2, num_actors=3)
    with pytest.raises(ValueError, match="max_task_retries"):
        fa_ray.make_vec(GAME, 2, actor_options={"max_task_retries": 1})
    with pytest.raises(ValueError, match="autoreset_mode"):
        fa_ray.make_vec(GAME, 2, autoreset_mode="sometimes")


def cpus_free(want: float, within: float = 20.0) -> bool:
    """Whether the cluster's free CPUs come back to ``want`` (killed actors free theirs
    asynchronously)."""
    deadline = time.monotonic() + within
    while ray.available_resources().get("CPU", 0) != want and time.monotonic() < deadline:
        time.sleep(0.1)
    return ray.available_resources().get("CPU", 0) == want


def test_a_failed_start_raises_and_leaves_no_actor(cluster):
    free = ray.cluster_resources()["CPU"]
    assert cpus_free(free)  # the actors of the tests before are gone
    # a local-worker setting is checked on each actor (its block: 1 env), raised as itself
    with pytest.raises(ValueError, match="num_workers must be an int in"):
        fa_ray.make_vec(GAME, 2, num_actors=2, num_workers=2)
    assert cpus_free(free)
    # an actor that cannot be placed: the error after actor_timeout, not a wait for its
    # answer to close (it never started)
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="did not start within actor_timeout=2"):
        fa_ray.make_vec(GAME, 2, actor_options={"resources": {"absent": 1}}, actor_timeout=2)
    assert time.monotonic() - started < 15
    assert cpus_free(free)


# -- faults ------------------------------------------------------------------------------------
def restart_seeds(seeds, restarts):
    return [int(np.random.SeedSequence([s, restarts]).generate_state(1)[0]) for s in seeds]


def check_recovered(envs, local, results, lost, restarts):
    """``results``: what the env returned from the step the fault hit onward, ``local``'s
    steps alongside. The lost block is flagged exactly once, truncated, re-seeded from its
    last seeds and the restart count; the other block is byte-identical to the local env."""
    kept = np.setdiff1d(np.arange(NUM_ENVS), lost)
    first, want = results[0]
    obs, reward, term, trunc, info = first
    assert info["worker_restarted"][lost].all() and not info["worker_restarted"][kept].any()
    assert info["_worker_restarted"][lost].all()
    assert trunc[lost].all() and not term[lost].any() and (reward[lost] == 0).all()
    # the report's observation is a fresh game with the derived seeds
    fresh = fastatari.make_vec(GAME, lost.size, num_workers=1, **OPTIONS)
    try:
        seeds = restart_seeds([envs.np_random_seed[i] for i in lost], restarts)
        np.testing.assert_array_equal(obs[lost], fresh.reset(seed=seeds)[0])
    finally:
        fresh.close()
    for got, want in results:
        same_step(got, want, kept)
    for got, _ in results[1:]:  # flagged once
        assert "worker_restarted" not in got[4] or not got[4]["worker_restarted"].any()
    assert envs.restarts == restarts


@linux_only
def test_actor_killed_recovered_others_unchanged(cluster):
    envs, local = ray_env(), local_env()
    try:
        envs.reset(seed=11), local.reset(seed=11)
        for t in range(5):
            same_step(envs.step(actions_at(t, range(6))), local.step(actions_at(t, range(6))))
        pid = envs.actor_info()[1]["pid"]
        ray.kill(envs.actors[1], no_restart=False)
        deadline = time.monotonic() + 30  # ray.kill is asynchronous: the next step must find
        while alive(pid) and time.monotonic() < deadline:  # the actor gone, not race it
            time.sleep(0.01)
        results = []
        for t in range(5, 25):
            a = actions_at(t, range(6))
            results.append((envs.step(a), local.step(a)))
        check_recovered(envs, local, results, np.arange(3, 6), restarts=1)
    finally:
        envs.close()
        local.close()


@linux_only
def test_the_only_actor_killed_its_restart_is_reported(cluster):
    """One actor (a one-node cluster's default): the lost step is the collect's only reply,
    and the step still reports it (not taken for a clean step)."""
    envs = ray_env(num_actors=1)
    try:
        envs.reset(seed=11)
        envs.step(actions_at(0, range(6)))
        pid = envs.actor_info()[0]["pid"]
        ray.kill(envs.actors[0], no_restart=False)
        deadline = time.monotonic() + 30
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        _, _, _, truncated, info = envs.step(actions_at(1, range(6)))
        assert truncated.all() and info["worker_restarted"].all()
        assert envs.restarts == 1
    finally:
        envs.close()


@linux_only
def test_actor_sigkill_during_async_and_rollout(cluster):
    """SIGKILL of actor 0's process while its envs are in flight; then a rollout reports
    nothing twice and keeps the other actor's envs exact."""
    envs, local = ray_env(batch_size=NUM_ENVS), local_env()
    try:
        envs.reset(seed=3), local.reset(seed=3)
        pid = envs.actor_info()[0]["pid"]
        envs.send(actions_at(0, range(6)))
        os.kill(pid, signal.SIGKILL)
        got = envs.recv()
        order = np.argsort(got[4]["env_id"])
        got = tuple(x[order] for x in got[:4]) + (take(got[4], order),)
        got[4].pop("env_id")
        results = [(got, local.step(actions_at(0, range(6))))]
        for t in range(1, 12):
            a = actions_at(t, range(6))
            results.append((envs.step(a), local.step(a)))
        check_recovered(envs, local, results, np.arange(0, 3), restarts=1)
        assert not alive(pid)
        assert envs.actor_info()[0]["pid"] != pid
        # a rollout after a kill: the lost block's first step is its (only) restart report
        os.kill(envs.actor_info()[0]["pid"], signal.SIGKILL)
        policy = ObsPolicy()
        out = envs.rollout(policy, 6)
        assert out.info["worker_restarted"][0, :3].all()
        assert out.info["_worker_restarted"][0, :3].all() and out.truncated[0, :3].all()
        assert not out.info["_worker_restarted"][1:, :3].any()  # once
        local_obs = results[-1][1][0]  # the local env's observations now
        for t in range(6):  # actor 1's envs: the policy stepped by hand on the local env
            np.testing.assert_array_equal(out.obs[t, 3:], local_obs[3:])
            actions = out.actions[t].copy()
            actions[3:] = policy(local_obs[3:])
            np.testing.assert_array_equal(out.actions[t, 3:], actions[3:])
            local_obs, reward, term, trunc, _ = local.step(actions)
            np.testing.assert_array_equal(out.rewards[t, 3:], reward[3:])
            np.testing.assert_array_equal(out.terminated[t, 3:], term[3:])
            np.testing.assert_array_equal(out.truncated[t, 3:], trunc[3:])
        np.testing.assert_array_equal(out.next_obs[3:], local_obs[3:])
        assert envs.restarts == 2
    finally:
        envs.close()
        local.close()


class ObsPolicy:
    """Deterministic and picklable: an action from each observation's checksum. Counts how
    often it is pickled on the driver (class attribute: the driver's count only)."""

    pickled = 0

    def __call__(self, obs):
        return (obs.reshape(len(obs), -1).sum(axis=1, dtype=np.int64) % 4).astype(np.int64)

    def __getstate__(self):
        type(self).pickled += 1
        return {}

    def __setstate__(self, state):
        pass


def test_rollout_equals_stepping_by_hand(cluster):
    envs = ray_env(autoreset_mode="same_step")
    try:
        policy = ObsPolicy()
        ObsPolicy.pickled = 0
        obs, _ = envs.reset(seed=21)
        out = envs.rollout(policy, 50)
        assert ObsPolicy.pickled == 1  # one ray.put for both actors
        assert out.obs.shape == (50, NUM_ENVS, 4, 84, 84) and out.actions.shape == (50, NUM_ENVS)
        np.testing.assert_array_equal(out.obs[0], obs)
        assert (out.terminated | out.truncated).any()  # episodes ended inside the rollout
        more = envs.rollout(policy, 3)  # continues where the first one stopped
        np.testing.assert_array_equal(more.obs[0], out.next_obs)
        envs.reset(seed=21)
        for t in range(50):
            np.testing.assert_array_equal(out.obs[t], obs)
            actions = policy(obs)
            np.testing.assert_array_equal(out.actions[t], actions)
            obs, reward, term, trunc, info = envs.step(actions)
            np.testing.assert_array_equal(out.rewards[t], reward)
            np.testing.assert_array_equal(out.terminated[t], term)
            np.testing.assert_array_equal(out.truncated[t], trunc)
            same_info(take(out.info, t), info)
        np.testing.assert_array_equal(out.next_obs, obs)
        ref = ray.put(policy)  # an ObjectRef works too
        assert envs.rollout(ref, 2).actions.shape == (2, NUM_ENVS)
        # a policy that raises: its error comes back, and no env is left where the driver
        # does not know it is (the actors' envs are reset, reported as restarted)
        with pytest.warns(RuntimeWarning, match="actor . raised an exception; restarted"), \
                pytest.raises(ValueError, match="actions must be in"):
            envs.rollout(lambda o: np.full(len(o), 9), 1)
        _, _, _, truncated, info = envs.step(np.zeros(NUM_ENVS, np.int64))
        assert truncated.all() and info["worker_restarted"].all()
        assert envs.rollout(policy, 2).actions.shape == (2, NUM_ENVS)
    finally:
        envs.close()


@linux_only
def test_snapshots_travel_between_ray_and_local(cluster):
    """A local env's state_dict restores into the Ray env (through the object store, on both
    actors' nodes) and the two go on identically; a Ray env's clone restores locally."""
    envs, local = ray_env(), local_env()
    try:
        local.reset(seed=11)
        for t in range(25):
            local.step(actions_at(t, range(NUM_ENVS)))
        envs.load_state_dict(local.state_dict())  # no reset: the state is the start
        for t in range(40):
            a = actions_at(t, range(NUM_ENVS))
            same_step(envs.step(a), local.step(a))
        snaps = envs.clone([1, 4])
        local.restore(snaps, env_ids=[4, 1])  # swapped: a snapshot fits any env of its game
        for t in range(20):
            a = actions_at(t, range(NUM_ENVS))
            swapped = a.copy()
            swapped[[1, 4]] = a[[4, 1]]
            got, want = envs.step(a), local.step(swapped)
            np.testing.assert_array_equal(got[0][[1, 4]], want[0][[4, 1]])
            np.testing.assert_array_equal(got[1][[1, 4]], want[1][[4, 1]])
    finally:
        envs.close()
        local.close()


def test_evaluate_on_ray_gives_the_local_numbers(cluster):
    from fastatari.evaluation.evaluate import evaluate

    kw = dict(episodes=2, seed=3, progress=False, max_num_frames_per_episode=600)
    on_ray = evaluate(["pong", "breakout"], use_ray=True, **kw)
    local = evaluate(["pong", "breakout"], num_workers=2, **kw)
    assert on_ray.to_json() == local.to_json()


def test_close_leaves_no_actor_or_worker(cluster):
    envs = ray_env()
    envs.reset(seed=0)
    described = envs.actor_info()
    pids = [d["pid"] for d in described] + [p for d in described for p in d["worker_pids"]]
    assert len(pids) == 4 and all(alive(p) for p in pids)
    actors = envs.actors
    envs.close()
    envs.close()  # twice is fine
    deadline = time.monotonic() + 20
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(p) for p in pids)
    for actor in actors:
        with pytest.raises(ray.exceptions.RayActorError):
            ray.get(actor.describe.remote(0), timeout=20)


def test_module_does_not_shadow_ray():
    import ray as real_ray

    assert fa_ray.ray is real_ray and "fastatari" not in real_ray.__file__


# -- RLlib -------------------------------------------------------------------------------------
def test_rllib_ppo_iteration_on_vector_entry_point(cluster):
    """RLlib's SingleAgentEnvRunner (on a cluster node) builds fastatari's vector env through
    gymnasium's vector_entry_point: ``gym.make_vec(id, num_envs, vectorization_mode=...)``;
    then one PPO iteration samples from it and trains."""
    pytest.importorskip("torch")
    ppo = pytest.importorskip("ray.rllib.algorithms.ppo", exc_type=ImportError)
    import gymnasium
    from ray.rllib.connectors.env_to_module.observation_preprocessor import (
        SingleAgentObservationPreprocessor,
    )

    class ScaleObs(SingleAgentObservationPreprocessor):
        """uint8 frames to float32 in [0, 1]: RLlib's CNN takes floats."""

        def recompute_output_observation_space(self, observation_space, action_space):
            return gymnasium.spaces.Box(0.0, 1.0, observation_space.shape, np.float32)

        def preprocess(self, observation, episode):
            return observation.astype(np.float32) / 255.0

    config = (ppo.PPOConfig()
              .environment("fastatari:fastatari/Breakout-v5",  # "module:id": runners import it
                           env_config={"channels_last": True, "max_num_frames_per_episode": 400,
                                       "num_workers": 1})
              .env_runners(num_env_runners=1, num_envs_per_env_runner=2,
                           gym_env_vectorize_mode="vector_entry_point",
                           rollout_fragment_length=32, num_cpus_per_env_runner=1,
                           env_to_module_connector=lambda env, spaces, device: ScaleObs())
              .learners(num_learners=0)
              .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1))
    algo = config.build_algo()
    try:
        result = algo.train()
        assert result["env_runners"]["num_env_steps_sampled_lifetime"] >= 64
        assert np.isfinite(result["learners"]["default_policy"]["total_loss"])
    finally:
        algo.stop()


# -- node loss (last: it changes the cluster) ------------------------------------------------------
def test_node_removed_actor_moves_others_unchanged(cluster):
    cluster.add_node(num_cpus=1)  # the spare the lost actor restarts on
    envs, local = ray_env(num_actors=2, actor_timeout=120), local_env()
    try:
        envs.reset(seed=7), local.reset(seed=7)
        lost_node = envs.nodes[1]
        for t in range(4):
            same_step(envs.step(actions_at(t, range(6))), local.step(actions_at(t, range(6))))
        node = next(n for n in cluster.list_all_nodes() if n.node_id == lost_node)
        cluster.remove_node(node)
        results = []
        for t in range(4, 16):
            a = actions_at(t, range(6))
            results.append((envs.step(a), local.step(a)))
        check_recovered(envs, local, results, np.arange(3, 6), restarts=1)
        assert envs.nodes[1] != lost_node and envs.nodes[0] != lost_node
    finally:
        envs.close()
        local.close()


def test_without_ray_init_a_private_ray_on_loopback(tmp_path):
    """No ray.init by the caller: fastatari.ray starts Ray itself, on 127.0.0.1 only (not on
    the machine's network address), and stops it with the last env."""
    import subprocess

    code = ("import numpy as np, ray; from fastatari import ray as fa_ray\n"
            "envs = fa_ray.make_vec('breakout', 2, num_workers=1)\n"
            "envs.reset(seed=0); envs.step(np.zeros(2, np.int64))\n"
            "print(sorted({n['NodeManagerAddress'] for n in ray.nodes()}))\n"
            "envs.close(); print(ray.is_initialized())\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "RAY_ADDRESS")}
    env["RAY_AUTH_MODE"] = "disabled"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, timeout=240, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split("\n")[-3:-1] == ["['127.0.0.1']", "False"]
