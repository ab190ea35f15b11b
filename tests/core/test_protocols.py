"""Named protocols: every option equals its documented value (the table below, each row with its
source), keywords override a protocol and the result is what ``options`` shows, bad names get
clear errors."""
from __future__ import annotations

import pytest

import fastatari
from fastatari.core.options import AtariOptions
from fastatari.core.protocols import PROTOCOLS, protocol_options

NATURE = "Mnih et al. 2015"
DOPAMINE = "google/dopamine"
# (protocol, option, training value, evaluation value, source)
TABLE = [
    ("dqn_nature", "frame_skip", 4, 4, f"{NATURE}, Extended Data Table 1, action repeat"),
    ("dqn_nature", "maxpool", True, True, f"{NATURE}, Methods, Preprocessing"),
    ("dqn_nature", "grayscale_obs", True, True, f"{NATURE}, Methods, Preprocessing"),
    ("dqn_nature", "screen_size", 84, 84, f"{NATURE}, Methods, Preprocessing"),
    ("dqn_nature", "stack_size", 4, 4, f"{NATURE}, Extended Data Table 1, history length"),
    ("dqn_nature", "noop_max", 30, 30, f"{NATURE}, Extended Data Table 1, no-op max"),
    ("dqn_nature", "repeat_action_probability", 0.0, 0.0, "no sticky actions before 2018"),
    ("dqn_nature", "full_action_space", False, False, f"{NATURE}, Methods, architecture"),
    ("dqn_nature", "episodic_life", True, False, f"{NATURE}, Methods, Training details"),
    ("dqn_nature", "clip_rewards", True, False, f"{NATURE}, Methods, Training details"),
    ("dqn_nature", "max_num_frames_per_episode", 108_000, 18_000,
     f"{NATURE}, Methods, Evaluation procedure: 5 min at 60 Hz"),
    ("machado2018", "frame_skip", 4, 4, "ale-py registration.py, v5"),
    ("machado2018", "repeat_action_probability", 0.25, 0.25, "Machado et al. 2018; v5"),
    ("machado2018", "full_action_space", False, False, "ale-py registration.py, v5"),
    ("machado2018", "max_num_frames_per_episode", 108_000, 108_000, "ale-py, v5"),
    ("machado2018", "noop_max", 0, 0, "ale-py's v5 envs have no no-op starts"),
    ("machado2018", "terminal_on_life_loss", False, False, "Machado et al. 2018"),
    ("machado2018", "episodic_life", False, False, "Machado et al. 2018"),
    ("machado2018", "clip_rewards", False, False, "raw returns"),
    ("atari100k", "frame_skip", 4, 4, f"{DOPAMINE} atari_lib.py"),
    ("atari100k", "maxpool", True, True, f"{DOPAMINE} atari_lib.py"),
    ("atari100k", "screen_size", 84, 84, f"{DOPAMINE} atari_lib.py"),
    ("atari100k", "stack_size", 4, 4, f"{DOPAMINE} atari_lib.py"),
    ("atari100k", "repeat_action_probability", 0.0, 0.0, f"{DOPAMINE} DER.gin"),
    ("atari100k", "full_action_space", False, False, f"{DOPAMINE} atari_lib.py"),
    ("atari100k", "max_num_frames_per_episode", 108_000, 108_000,
     f"{DOPAMINE} DER.gin, 27000 agent steps"),
    ("atari100k", "noop_max", 30, 30,
     f"{DOPAMINE} atari_100k_runner.py: 0-29 no-op agent steps (fastatari: 1-30 frames, "
     f"a documented difference)"),
    ("atari100k", "life_loss_info", True, False, f"{DOPAMINE} DER.gin terminal_on_life_loss"),
    ("atari100k", "clip_rewards", True, False, f"{DOPAMINE} run_experiment.py"),
]


@pytest.mark.parametrize("protocol, option, train, evaluate, source", TABLE,
                         ids=[f"{row[0]}-{row[1]}" for row in TABLE])
def test_every_option_equals_its_documented_value(protocol, option, train, evaluate, source):
    assert getattr(AtariOptions(**protocol_options(protocol)), option) == train
    assert getattr(AtariOptions(**protocol_options(f"{protocol}:eval")), option) == evaluate
    assert option in PROTOCOLS[protocol].sources  # the module names its source too


def test_every_option_a_protocol_sets_is_in_the_table():
    for name, protocol in PROTOCOLS.items():
        tabled = {row[1] for row in TABLE if row[0] == name}
        assert set(protocol.options()) | set(protocol.options(True)) <= tabled | {
            "grayscale_obs"}, name


def test_keywords_override_the_protocol_and_options_show_it():
    with fastatari.make_vec("breakout", 2, num_workers=1, protocol="machado2018",
                            noop_max=7) as envs:
        assert envs.options.noop_max == 7
        assert envs.options.repeat_action_probability == 0.25
    with fastatari.make_vec("breakout", 2, num_workers=1, protocol="atari100k") as envs:
        assert envs.options.life_loss_info and envs.options.clip_rewards
    env = fastatari.AtariEnv("breakout", protocol="dqn_nature:eval")
    assert env.options.max_num_frames_per_episode == 18_000 and not env.options.clip_rewards
    env.close()


def test_bad_protocols_get_clear_errors():
    with pytest.raises(ValueError, match=r"unknown protocol 'nature'; the protocols: "
                                         r"'dqn_nature', 'dqn_nature:eval'"):
        fastatari.make_vec("breakout", 2, protocol="nature")
    with pytest.raises(ValueError, match="unknown protocol 'machado2018:test'"):
        fastatari.AtariEnv("breakout", protocol="machado2018:test")
    with pytest.raises(TypeError, match="protocol must be a str"):
        fastatari.AtariEnv("breakout", protocol=3)
    # options=AtariOptions(...) holds every option: neither it nor the protocol may silently
    # override the other, in every front
    for front in (lambda **kw: fastatari.make_vec("breakout", 2, num_workers=1, **kw),
                  lambda **kw: fastatari.AtariEnv("breakout", **kw)):
        with pytest.raises(TypeError, match="cannot be combined"):
            front(protocol="dqn_nature", options=AtariOptions(frame_skip=2))
    # atari100k trains with ale-py's life_loss_info, a vector-env option
    with pytest.raises(ValueError, match="vector-env option"):
        fastatari.AtariEnv("breakout", protocol="atari100k")
