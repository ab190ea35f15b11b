"""fastatari.evaluation.scores: every table's normalization (exactly 0 at random, 1 at human),
which suite games each table covers, the errors, aggregate() against rliable called directly
(marker eval; skipped without rliable), and fastatari.scores as its public path."""
from __future__ import annotations

import json
import math
import sys
from importlib import resources

import numpy as np
import pytest
from ale_py import roms

import fastatari
from fastatari.evaluation import scores, suites
from fastatari.evaluation.scores import (
    DEFAULT_TABLE,
    METRICS,
    TABLES,
    Estimate,
    aggregate,
    human_normalized,
    reference,
)

SUITES = {name: getattr(suites, name) for name in suites.__all__}

# Nature's 49 games are Atari-57 without these; Dopamine's 55 have no human score for two.
NOT_IN_NATURE = {"berzerk", "defender", "phoenix", "pitfall", "skiing", "solaris", "surround",
                 "yars_revenge"}
NOT_IN_DOPAMINE = {"defender", "surround"}

# Which suite games each table lacks: the default table has them all.
MISSING = {
    ("dqn_zoo", "ATARI_5"): set(), ("dqn_zoo", "ATARI_10"): set(),
    ("dqn_zoo", "ATARI_57"): set(), ("dqn_zoo", "ATARI_100K"): set(),
    ("nature", "ATARI_5"): {"phoenix"}, ("nature", "ATARI_10"): {"phoenix"},
    ("nature", "ATARI_57"): NOT_IN_NATURE, ("nature", "ATARI_100K"): set(),
    ("dopamine", "ATARI_5"): set(), ("dopamine", "ATARI_10"): set(),
    ("dopamine", "ATARI_57"): NOT_IN_DOPAMINE, ("dopamine", "ATARI_100K"): set(),
}


# ---------------------------------------------------------------- tables and normalization

@pytest.mark.parametrize("table", list(TABLES))
def test_zero_at_random_one_at_human(table):
    for game, (random_score, human_score) in TABLES[table].items():
        assert human_normalized(game, random_score, table) == 0.0, game
        assert human_normalized(game, human_score, table) == 1.0, game
        both = human_normalized(game, [random_score, human_score], table)
        assert both.dtype == np.float64 and both.tolist() == [0.0, 1.0], game
        assert reference(game, table) == (random_score, human_score)


def test_default_table_is_dqn_zoo():
    assert DEFAULT_TABLE == "dqn_zoo" == scores.tables()[0]
    assert scores.tables() == ("dqn_zoo", "nature", "dopamine")
    assert set(scores.SOURCES) == set(TABLES)
    assert human_normalized("pong", 14.6) == 1.0  # the DQN Zoo human, not Nature's 9.3


def test_table_games_and_sizes():
    assert set(TABLES["dqn_zoo"]) == set(suites.ATARI_57)
    assert set(TABLES["nature"]) == set(suites.ATARI_57) - NOT_IN_NATURE
    assert set(TABLES["dopamine"]) == set(suites.ATARI_57) - NOT_IN_DOPAMINE
    assert [len(TABLES[t]) for t in TABLES] == [57, 49, 55]
    rom_ids = set(roms.get_all_rom_ids())
    for table, games in TABLES.items():
        assert set(games) <= rom_ids, table
        for game, (random_score, human_score) in games.items():
            assert math.isfinite(random_score) and math.isfinite(human_score)
            assert human_score > random_score, (table, game)


# Each table's size and the exact sums of its random and human columns (math.fsum), as the
# Python literals the data files replaced held them.
FINGERPRINTS = {
    "dqn_zoo": (57, 50864.9, 606494.2),
    "nature": (49, 60114.5, 438093.0),
    "dopamine": (55, 31743.5, 587798.8),
}


@pytest.mark.parametrize("table", list(FINGERPRINTS))
def test_every_table_loads_from_its_data_file(table):
    path = resources.files("fastatari.evaluation").joinpath("tables").joinpath(f"{table}.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["name"] == table and data["columns"] == ["random", "human"]
    assert data["source"] == scores.SOURCES[table]
    assert data["title"] and data["citation"] and data["notes"]
    assert {game: tuple(pair) for game, pair in data["scores"].items()} == TABLES[table]
    assert list(data["scores"]) == sorted(data["scores"])  # one game a line, in order
    pairs = list(TABLES[table].values())
    assert all(type(value) is float for pair in pairs for value in pair)
    count, random_sum, human_sum = FINGERPRINTS[table]
    assert len(pairs) == count
    assert round(math.fsum(r for r, _ in pairs), 6) == random_sum
    assert round(math.fsum(h for _, h in pairs), 6) == human_sum
    # a few values as published
    assert TABLES["dqn_zoo"]["ms_pacman"] == (307.3, 6951.6)
    assert TABLES["nature"]["ms_pacman"] == (307.3, 15693.0)
    assert TABLES["dopamine"]["video_pinball"] == (0.0, 17667.9)


def test_where_tables_differ():
    zoo, nature, dopamine = TABLES["dqn_zoo"], TABLES["nature"], TABLES["dopamine"]
    differ = {game for game in dopamine if dopamine[game] != zoo[game]}
    assert differ == {"video_pinball"}
    assert dopamine["video_pinball"] == (0.0, 17667.9) and zoo["video_pinball"][0] == 16256.9
    assert human_normalized("video_pinball", 16256.9, "dopamine") > 0.9

    def printed(value):  # Nature prints scores of 1000 and over as integers, rounded half up
        return float(math.floor(value + 0.5)) if abs(value) >= 1000 else round(value, 1)

    for game, (random_score, _) in nature.items():
        assert random_score == printed(zoo[game][0]), game
    human_differs = {game for game in nature if nature[game][1] != printed(zoo[game][1])}
    assert len(human_differs) == 33 and "ms_pacman" in human_differs


def test_spellings_resolve_to_rom_ids():
    expected = human_normalized("ms_pacman", 3000.0)
    for spelling in ("MsPacman", "ALE/MsPacman-v5", "MsPacmanNoFrameskip-v4",
                     "fastatari/MsPacman-v5"):
        assert human_normalized(spelling, 3000.0) == expected
    assert reference("MontezumaRevenge", "nature") == (0.0, 4367.0)


def test_array_scores_keep_their_shape():
    runs = np.array([[227.8, 7127.7], [3677.75, 227.8]], dtype=np.float32)
    normalized = human_normalized("alien", runs)
    assert normalized.shape == (2, 2) and normalized.dtype == np.float64
    assert normalized[1, 0] == pytest.approx(0.5, abs=1e-6)
    assert isinstance(human_normalized("alien", np.float32(227.8)), float)
    assert human_normalized("boxing", 12) == pytest.approx((12 - 0.1) / 12.0)


@pytest.mark.parametrize("table", list(TABLES))
@pytest.mark.parametrize("name", list(SUITES))
def test_which_suite_games_each_table_has(table, name):
    missing = {game for game in SUITES[name] if game not in TABLES[table]}
    assert missing == MISSING[(table, name)]


# ---------------------------------------------------------------- errors

def test_unknown_table():
    with pytest.raises(ValueError, match=r"^unknown score table 'nature5'; tables: dqn_zoo, "
                                         r"nature, dopamine$"):
        human_normalized("pong", 0.0, "nature5")
    with pytest.raises(ValueError, match="unknown score table None"):
        reference("pong", None)


def test_game_without_a_score_names_the_tables_that_have_it():
    with pytest.raises(ValueError, match=r"^no reference score for game 'phoenix' in table "
                                         r"'nature' \(49 games\); tables with it: dqn_zoo, "
                                         r"dopamine$"):
        human_normalized("Phoenix", 100.0, "nature")
    with pytest.raises(ValueError, match=r"'surround' in table 'dopamine' \(55 games\); "
                                         r"tables with it: dqn_zoo$"):
        reference("surround", "dopamine")
    with pytest.raises(ValueError, match=r"^no reference score for game 'tetris' in table "
                                         r"'dqn_zoo' \(57 games\); no table has it$"):
        human_normalized("tetris", 1.0)


def test_unknown_game():
    with pytest.raises(ValueError, match=r"unknown Atari game 'montezuma'; did you mean"):
        human_normalized("montezuma", 0.0)
    with pytest.raises(ValueError, match="game must be a str"):
        reference(3)


@pytest.mark.parametrize("score", ["100", True, None, [1.0, "x"], {"a": 1}])
def test_scores_that_are_not_numbers(score):
    with pytest.raises(TypeError, match="score must be a number or an array of numbers"):
        human_normalized("pong", score)


def test_ragged_scores():
    with pytest.raises(ValueError, match="score must be a number or a rectangular array"):
        human_normalized("pong", [[1.0, 2.0], [3.0]])


HNS = np.random.default_rng(7).gamma(1.5, 0.8, size=(5, 12))


@pytest.mark.parametrize("scores_arg, kwargs, message", [
    (HNS, dict(table="nature"), "an array of scores is taken as already human-normalized"),
    (HNS[0], {}, r"must be a \(runs x games\) array .* got shape \(12,\)"),
    (np.zeros((0, 3)), {}, r"got shape \(0, 3\)"),
    (np.where(HNS > 1, np.nan, HNS), {}, "scores must be finite"),
    ({}, {}, "scores is an empty mapping"),
    ({"pong": [1.0, 2.0], "alien": [300.0]}, {},
     r"every game needs the same number of runs .*\{'pong': 2, 'alien': 1\}"),
    ({"pong": [1.0], "Pong": [2.0]}, {}, "scores names a game twice"),
    ({"pong": [[1.0, 2.0]]}, {}, r"scores\['pong'\] must be a non-empty 1-D sequence"),
    ({"pong": []}, {}, r"scores\['pong'\] must be a non-empty 1-D sequence"),
    ({"phoenix": [1.0]}, dict(table="nature"), "no reference score for game 'phoenix'"),
    ({"pong": [1.0]}, dict(table="human"), "unknown score table 'human'"),
    (HNS, dict(metrics=("median", "max")), r"metrics must name at least one of median, mean, "
                                           r"iqm, optimality_gap; got \['median', 'max'\]"),
    (HNS, dict(metrics=()), "metrics must name at least one"),
    (HNS, dict(metrics=("iqm", "iqm")), "metrics names one twice"),
    (HNS, dict(reps=0), "reps must be an int >= 1, got 0"),
    (HNS, dict(reps=10.0), "reps must be an int >= 1, got 10.0"),
    (HNS, dict(confidence=1.0), r"confidence must be a float in \(0, 1\), got 1.0"),
    (HNS, dict(method="norm"), "method must be one of percentile, basic, bc, bca, got 'norm'"),
    (HNS, dict(task_bootstrap=1), "task_bootstrap must be a bool, got 1"),
    (HNS, dict(gap_threshold=math.inf), "gap_threshold must be a finite number"),
    (HNS, dict(seed=-1), r"seed must be None or an int in \[0, 2\*\*32\), got -1"),
    (HNS, dict(seed=2**32), r"seed must be None or an int in \[0, 2\*\*32\)"),
])
def test_aggregate_bad_input(scores_arg, kwargs, message):
    # checked before rliable is imported: these need no rliable
    with pytest.raises(ValueError, match=message):
        aggregate(scores_arg, **kwargs)


def test_aggregate_non_numbers():
    with pytest.raises(TypeError, match="scores must be a number or an array of numbers"):
        aggregate(np.array([["a", "b"]]))


def test_aggregate_without_rliable(monkeypatch):
    monkeypatch.setitem(sys.modules, "rliable", None)  # import rliable raises ImportError
    with pytest.raises(ImportError, match=r'needs rliable: pip install "fastatari\[eval\]"'):
        aggregate(HNS, reps=10)


# ---------------------------------------------------------------- aggregates (rliable)

@pytest.fixture
def rliable():
    library = pytest.importorskip("rliable.library")
    from rliable import metrics

    return library, metrics


REPS = 2000  # enough to exercise the bootstrap; the default (50,000) is for results


@pytest.mark.eval
def test_aggregate_equals_rliable_called_directly(rliable):
    library, metrics = rliable

    def all_four(x):
        return np.array([metrics.aggregate_median(x), metrics.aggregate_mean(x),
                         metrics.aggregate_iqm(x), metrics.aggregate_optimality_gap(x, 1.0)])

    np.random.seed(123)
    points, intervals = library.get_interval_estimates({"x": HNS}, all_four, reps=REPS)
    result = aggregate(HNS, reps=REPS, seed=123)
    assert list(result) == list(METRICS)
    for i, metric in enumerate(METRICS):
        assert result[metric] == Estimate(points["x"][i], intervals["x"][0, i],
                                          intervals["x"][1, i]), metric
        assert result[metric].low <= result[metric].value <= result[metric].high
    assert result["median"].value == metrics.aggregate_median(HNS)
    assert result["iqm"].value == metrics.aggregate_iqm(HNS)


@pytest.mark.eval
def test_aggregate_options_reach_rliable(rliable):
    library, metrics = rliable

    def gap_then_iqm(x):
        return np.array([metrics.aggregate_optimality_gap(x, 0.5), metrics.aggregate_iqm(x)])

    np.random.seed(5)
    points, intervals = library.get_interval_estimates(
        {"x": HNS}, gap_then_iqm, method="bca", task_bootstrap=True, reps=500,
        confidence_interval_size=0.9)
    result = aggregate(HNS, metrics=("optimality_gap", "iqm"), method="bca", task_bootstrap=True,
                       reps=500, confidence=0.9, gap_threshold=0.5, seed=5)
    assert list(result) == ["optimality_gap", "iqm"]
    assert [tuple(e) for e in result.values()] == [
        (points["x"][i], intervals["x"][0, i], intervals["x"][1, i]) for i in range(2)]


@pytest.mark.eval
def test_same_seed_same_intervals_and_global_state_untouched(rliable):
    np.random.seed(99)
    before = np.random.get_state()
    first = aggregate(HNS, reps=REPS, seed=7)
    after = np.random.get_state()
    assert before[0] == after[0] and np.array_equal(before[1], after[1]) and \
        before[2:] == after[2:]
    assert aggregate(HNS, reps=REPS, seed=7) == first
    other = aggregate(HNS, reps=REPS, seed=8)
    assert other != first
    assert all(other[m].value == first[m].value for m in METRICS)  # only the intervals move
    assert aggregate(HNS, reps=50, seed=None)["mean"].value == first["mean"].value


@pytest.mark.eval
def test_mapping_of_raw_scores_is_normalized_per_game(rliable):
    raw = {"pong": [-20.7, 14.6, 0.0], "Breakout": [1.7, 30.5, 16.1],
           "alien": [500.0, 900.0, 7127.7]}
    matrix = np.stack([human_normalized(game, runs) for game, runs in raw.items()], axis=1)
    assert aggregate(raw, reps=300, seed=1) == aggregate(matrix, reps=300, seed=1)
    nature = np.stack([human_normalized(game, runs, "nature") for game, runs in raw.items()],
                      axis=1)
    assert aggregate(raw, table="nature", reps=300, seed=1) == aggregate(nature, reps=300, seed=1)


def test_fastatari_scores_is_the_module():
    from fastatari import scores as public

    assert public is scores and fastatari.scores is scores


def test_interquartile_mean_of_nothing_is_refused():
    """Issue #45: interquartile_mean([]) returned nan silently."""
    for empty in ([], np.zeros(0), np.zeros((3, 0))):
        with pytest.raises(ValueError, match="at least one value"):
            scores.interquartile_mean(empty)
    assert scores.interquartile_mean([3.0]) == 3.0
