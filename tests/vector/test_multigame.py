"""Several games in one vector env: every env byte-identical to its own AtariEnv, for any
worker count and assignment, through episode ends; the Atari-57 suite; per-game options;
cost-balanced assignment."""
from __future__ import annotations

import numpy as np
import pytest

import fastatari
from fastatari import AtariEnv, make_vec
from fastatari.core.games import game_ids
from fastatari.vector.assignment import assign_workers, game_costs, make_assignment

KW = dict(repeat_action_probability=0.0, max_num_frames_per_episode=400,
          full_action_space=True)


def run_against_single_envs(envs, games, steps, seed, rng, **kw):
    """Step ``envs`` and one AtariEnv per game side by side (next-step autoreset by hand)."""
    singles = [AtariEnv(g, **kw) for g in games]
    # the pool's actions are ALE's 18 by name; a game without one (Skiing) plays NOOP there
    names = envs.get_action_meanings()
    maps = [[m.index(a) if a in m else m.index("NOOP") for a in names]
            for m in (env.get_action_meanings() for env in singles)]
    obs, info = envs.reset(seed=seed)
    for i, env in enumerate(singles):
        assert np.array_equal(obs[i], env.reset(seed=seed + i)[0]), games[i]
    ended = np.zeros(len(games), bool)
    ends = 0
    for t in range(steps):
        actions = rng.integers(0, envs.single_action_space.n, len(games))
        obs, rew, term, trunc, info = envs.step(actions)
        for i, env in enumerate(singles):
            if ended[i]:
                expected, *_ = env.reset()
                exp_rew, exp_term, exp_trunc = 0.0, False, False
            else:
                expected, exp_rew, exp_term, exp_trunc, exp_info = env.step(maps[i][actions[i]])
                if "ram" in info:
                    assert np.array_equal(info["ram"][i], exp_info["ram"]), (t, i)
            assert np.array_equal(obs[i], expected), f"step {t}, env {i} ({games[i]})"
            assert (rew[i], term[i], trunc[i]) == (exp_rew, exp_term, exp_trunc), (t, i)
        ended = term | trunc
        ends += int(ended.sum())
    for env in singles:
        env.close()
    return ends


@pytest.mark.parametrize("num_workers,balance", [(1, True), (3, True), (3, False)])
def test_each_env_is_its_own_games_single_env(num_workers, balance):
    games = ["pong", "breakout", "seaquest", "qbert"] * 2
    rng = np.random.default_rng(num_workers)
    with make_vec(games, len(games), num_workers=num_workers, balance=balance, **KW) as envs:
        assert envs.games == tuple(games) and envs.rom is None
        assert envs.game_names == ("pong", "breakout", "seaquest", "qbert")
        ends = run_against_single_envs(envs, games, 120, 7, rng, **KW)
        _, info = envs.reset(seed=0)
        assert info["game_index"].tolist() == [0, 1, 2, 3] * 2
    assert ends >= 4  # truncations at 400 frames, then autoresets


@pytest.mark.parametrize("num_workers", [1, 2])
def test_episodic_life_continues_the_stack_like_the_single_env(num_workers):
    # A continued game's reset pushes onto its stack: the worker's reset in advance (into a
    # private stack) must start from the env's current frames.
    games = ["breakout", "space_invaders", "qbert"]
    kw = dict(KW, episodic_life=True, fire_reset=True, ram_info=True,
              max_num_frames_per_episode=3000)
    rng = np.random.default_rng(4)
    with make_vec(games, 3, num_workers=num_workers, **kw) as envs:
        ends = run_against_single_envs(envs, games, 300, 2, rng, **kw)
    assert ends >= 3  # lives lost, games continued


def test_the_atari_57_suite_every_game():
    suite = fastatari.suites.ATARI_57
    assert len(set(suite)) == 57 and set(suite) <= set(game_ids())
    rng = np.random.default_rng(57)
    with make_vec(suite, 57, num_workers=2, **KW) as envs:
        assert envs.single_action_space.n == 18  # Skiing's own set has 9
        run_against_single_envs(envs, list(suite), 12, 100, rng, **KW)


def test_atari_5_is_a_subset_of_the_57():
    assert set(fastatari.suites.ATARI_5) <= set(fastatari.suites.ATARI_57)


def test_different_action_sets_need_the_full_action_space():
    with pytest.raises(ValueError, match="different action sets .*full_action_space=True"):
        make_vec(["pong", "breakout"], 2, num_workers=1)
    with pytest.raises(ValueError, match="one game per env: 3 names for num_envs=2"):
        make_vec(["pong", "breakout", "qbert"], 2)
    with pytest.raises(ValueError, match="unknown Atari game"):
        make_vec(["pong", "pongg"], 2)


def test_per_game_modes_as_a_mapping():
    games = ["breakout", "pong"]
    kw = dict(KW, mode={"Breakout": 4})
    rng = np.random.default_rng(2)
    with make_vec(games, 2, num_workers=2, **kw) as envs:
        singles_kw = [dict(KW, mode=4), dict(KW)]
        singles = [AtariEnv(g, **k) for g, k in zip(games, singles_kw, strict=True)]
        obs, _ = envs.reset(seed=3)
        for i, env in enumerate(singles):
            assert np.array_equal(obs[i], env.reset(seed=3 + i)[0])
        for _ in range(30):
            a = rng.integers(0, 18, 2)
            obs, *_ = envs.step(a)
            for i, env in enumerate(singles):
                assert np.array_equal(obs[i], env.step(int(a[i]))[0])
    with pytest.raises(ValueError, match="mode names 'qbert', which no env plays"):
        make_vec(games, 2, mode={"qbert": 0}, **KW)


def test_games_in_no_order_and_ambiguous_mappings_are_refused():
    """A set's order changes with PYTHONHASHSEED (so would which env plays which game); a
    mapping that names one ROM twice leaves the value to dict order; a key that is no game
    name must say where it is."""
    for games in ({"pong", "breakout"}, frozenset({"pong"}), {"pong": 1, "breakout": 2}.keys()):
        with pytest.raises(TypeError, match="game must be a name or a sequence .*of names, got a "):
            make_assignment(games, 2, {})
    with pytest.raises(ValueError, match="mode names the game 'breakout' twice .*'breakout' "
                                         "and 'ALE/Breakout-v5'"):
        make_assignment(["breakout", "pong"], 2, dict(mode={"breakout": 4, "ALE/Breakout-v5": 0}))
    with pytest.raises(ValueError, match="difficulty=\\{game: value\\}: game must be a str "
                                         "such as 'breakout', got 5"):
        make_assignment(["breakout", "pong"], 2, dict(difficulty={5: 1}))
    assignment, _ = make_assignment(("pong", "breakout"), 2, dict(full_action_space=True))
    assert assignment.games == ("pong", "breakout")  # a tuple, a list, an array: in order


def test_cost_balanced_assignment_beats_contiguous_blocks():
    costs = game_costs()
    assert len(costs) >= 57  # the shipped table covers the suite
    assignment, _ = make_assignment(list(fastatari.suites.ATARI_57), 57, dict(KW))
    cost = np.array([costs[g] for g in assignment.games])
    for workers in (2, 4, 8):
        balanced = assign_workers(assignment, workers)
        contiguous = assign_workers(assignment, workers, balance=False)
        assert sorted(np.concatenate(balanced).tolist()) == list(range(57))
        assert all(np.all(np.diff(b) > 0) for b in contiguous)
        slowest = max(cost[b].sum() for b in balanced)
        assert slowest <= max(cost[b].sum() for b in contiguous)
        assert slowest <= cost.sum() / workers + cost.max()  # greedy's bound


@pytest.mark.parametrize("assignment", ["atari5-groups", "atari57-twice"])
@pytest.mark.parametrize("workers", [2, 4, 16])
def test_balancing_keeps_each_games_envs_together(assignment, workers):
    """Changing game costs a worker its caches: games are split over workers only where the
    balance needs it, and a worker steps each game's envs in a row."""
    games = (tuple(g for g in fastatari.suites.ATARI_5 for _ in range(4))
             if assignment == "atari5-groups" else fastatari.suites.ATARI_57 * 2)
    lu, _ = make_assignment(list(games), len(games), dict(KW))
    costs = game_costs()
    cost = np.array([costs[g] for g in lu.games])
    blocks = assign_workers(lu, workers)
    assert sorted(np.concatenate(blocks).tolist()) == list(range(len(games)))
    assert max(cost[b].sum() for b in blocks) <= cost.sum() / workers + cost.max()
    game_of = lu.game_index()
    pairs = 0
    for block in blocks:
        runs = game_of[block]
        assert np.all(np.diff(block)[runs[1:] == runs[:-1]] > 0)  # by env id within a game
        assert len(set(runs.tolist())) == 1 + int(np.count_nonzero(np.diff(runs)))  # in a row
        pairs += len(set(runs.tolist()))
    assert pairs <= len(lu.names) + workers - 1  # games split only where a worker fills up


def test_async_batches_follow_each_workers_game_order():
    """Balanced workers step their envs grouped by game, not by id: the partial replies of an
    async step name the envs the worker has really stepped."""
    games = ["pong", "breakout", "seaquest", "qbert"] * 2
    n, steps = len(games), 40
    actions = np.random.default_rng(3).integers(0, 18, (steps, n))
    with make_vec(games, n, num_workers=1, **KW) as envs:
        expected = [envs.reset(seed=5)[0]] + [envs.step(a)[0] for a in actions]
    with make_vec(games, n, num_workers=2, batch_size=2, **KW) as envs:
        blocks = envs.executor.blocks
        assert any(np.any(np.diff(b) < 0) for b in blocks)  # some worker's order is not by id
        envs.reset(seed=5)
        t = np.zeros(n, int)
        envs.send(actions[0])
        done = 0
        while done < steps * n:
            obs, *_, info = envs.recv()
            for j, i in enumerate(info["env_id"]):
                t[i] += 1
                done += 1
                assert np.array_equal(obs[j], expected[t[i]][i]), (t[i], i)
            ids = [i for i in info["env_id"] if t[i] < steps]
            if ids:
                envs.send(np.array([actions[t[i], i] for i in ids]), env_ids=ids)
