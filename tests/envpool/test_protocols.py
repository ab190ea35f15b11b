"""fastatari.envpool's ``protocol=``: a named protocol's options (fastatari.core.protocols) as
EnvPool's, in ``spec.config``; the EnvPool options given beside it override them; options
EnvPool's cannot express raise. The comparison with the real EnvPool is marked ``envpool``."""
from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import re

import pytest

from fastatari import envpool as fa_envpool
from fastatari.core.options import AtariOptions
from fastatari.core.protocols import PROTOCOLS, protocol_options
from fastatari.envpool import _protocol_keywords, _vector_options

HAVE_ENVPOOL = importlib.util.find_spec("envpool") is not None

# EnvPool's names, as spec.config has them, for each protocol that EnvPool's options express.
EXPECTED = {
    "dqn_nature": dict(frame_skip=4, gray_scale=True, img_height=84, img_width=84, stack_num=4,
                       noop_max=30, repeat_action_probability=0.0, full_action_space=False,
                       episodic_life=True, reward_clip=True, use_fire_reset=False,
                       max_episode_steps=27000, mode=-1, difficulty=-1),
    "dqn_nature:eval": dict(episodic_life=False, reward_clip=False, max_episode_steps=4500,
                            noop_max=30, repeat_action_probability=0.0, use_fire_reset=False),
    "machado2018": dict(frame_skip=4, repeat_action_probability=0.25, full_action_space=False,
                        max_episode_steps=27000, noop_max=0, episodic_life=False,
                        reward_clip=False, use_fire_reset=False, gray_scale=True,
                        img_height=84, img_width=84, stack_num=4),
    "machado2018:eval": dict(repeat_action_probability=0.25, max_episode_steps=27000,
                             noop_max=0, episodic_life=False, reward_clip=False),
    "atari100k:eval": dict(frame_skip=4, gray_scale=True, img_height=84, img_width=84,
                           stack_num=4, repeat_action_probability=0.0, full_action_space=False,
                           max_episode_steps=27000, noop_max=30, episodic_life=False,
                           reward_clip=False, use_fire_reset=False),
}


def test_every_protocol_is_covered():
    variants = {f"{name}{suffix}" for name in PROTOCOLS for suffix in ("", ":eval")}
    assert variants == set(EXPECTED) | {"atari100k"}


@pytest.mark.parametrize("protocol", sorted(EXPECTED))
def test_protocol_config_in_envpool_names(protocol):
    config = fa_envpool.make_spec("Breakout-v5", num_envs=2, protocol=protocol).config
    for name, value in EXPECTED[protocol].items():
        assert getattr(config, name) == value, name
        assert type(getattr(config, name)) is type(value), name
    # the games fastatari.envpool plays are the protocol's, as make_vec(protocol=) plays them,
    # but for the frame cap (counted here, in agent steps) and info["ram"] (always on here)
    ours = AtariOptions(**_vector_options(config))
    theirs = AtariOptions(**protocol_options(protocol))
    assert ours == dataclasses.replace(theirs, screen_size=(84, 84), ram_info=True,
                                       max_num_frames_per_episode=None)
    assert config.max_episode_steps * config.frame_skip == theirs.max_num_frames_per_episode


def test_make_and_its_entry_points_take_the_protocol():
    expected = fa_envpool.make_spec("Pong-v5", protocol="machado2018", num_threads=1).config
    envs = fa_envpool.make_gymnasium("Pong-v5", protocol="machado2018", num_threads=1)
    try:
        assert envs.spec.config == expected
        assert envs.config["repeat_action_probability"] == 0.25
        assert envs.config["noop_max"] == 0 and envs.config["max_episode_steps"] == 27000
        assert envs.vec.options.noop_max == 0 and not envs.vec.options.fire_reset
        assert envs.vec.options.repeat_action_probability == 0.25
    finally:
        envs.close()
    # no protocol (None, the default) keeps EnvPool's defaults
    assert (fa_envpool.make_spec("Pong-v5", protocol=None).config
            == fa_envpool.make_spec("Pong-v5").config)
    assert inspect.signature(fa_envpool.make_spec).parameters["protocol"].default is None


def test_options_given_beside_the_protocol_override_it():
    # given values equal to EnvPool's defaults override too (repeat_action_probability=0.0)
    config = fa_envpool.make_spec("Breakout-v5", 3, protocol="machado2018",
                                  repeat_action_probability=0.0, noop_max=30,
                                  use_fire_reset=True, episodic_life=True, stack_num=2).config
    assert config.num_envs == 3  # positional options still bind
    assert config.repeat_action_probability == 0.0 and config.noop_max == 30
    assert config.use_fire_reset and config.episodic_life and config.stack_num == 2
    assert not config.reward_clip and config.max_episode_steps == 27000  # the protocol's
    # the protocol's frame cap in agent steps of the frame_skip given
    config = fa_envpool.make_spec("Breakout-v5", protocol="machado2018", frame_skip=5).config
    assert config.frame_skip == 5 and config.max_episode_steps == 108_000 // 5
    config = fa_envpool.make_spec("Breakout-v5", protocol="dqn_nature:eval",
                                  max_episode_steps=100).config
    assert config.max_episode_steps == 100 and not config.episodic_life


def test_a_frame_cap_that_is_no_whole_number_of_steps_raises_unless_overridden():
    with pytest.raises(ValueError, match=r"max_num_frames_per_episode=108000, .*frame_skip=7"
                                         r".*fastatari\.make_vec"):
        fa_envpool.make_spec("Breakout-v5", protocol="machado2018", frame_skip=7)
    with pytest.raises(ValueError, match="frame_skip must be"):  # as without a protocol
        fa_envpool.make_spec("Breakout-v5", protocol="machado2018", frame_skip=0)
    config = fa_envpool.make_spec("Breakout-v5", protocol="machado2018", frame_skip=7,
                                  max_episode_steps=15000).config
    assert config.frame_skip == 7 and config.max_episode_steps == 15000


def test_an_option_envpool_cannot_express_raises(monkeypatch):
    # atari100k's training reports life losses as terminal while the episode goes on
    with pytest.raises(ValueError, match=r"'atari100k' sets life_loss_info=True.*episodic_life"
                                         r".*fastatari\.make_vec\(\.\.\., protocol='atari100k'"):
        fa_envpool.make_spec("Breakout-v5", protocol="atari100k")
    with pytest.raises(ValueError, match="life_loss_info"):  # make too, before any game
        fa_envpool.make("Breakout-v5", env_type="gymnasium", protocol="atari100k",
                        episodic_life=True)
    # an option fastatari.envpool carries at another value, or has no EnvPool name for
    with pytest.raises(ValueError, match=r"maxpool=False"):
        _protocol_keywords_with(monkeypatch, "maxpool", False)
    with pytest.raises(ValueError, match=r"channels_last=True"):
        _protocol_keywords_with(monkeypatch, "channels_last", True)
    # the value carried is accepted
    assert _protocol_keywords_with(monkeypatch, "maxpool", True)["frame_skip"] == 4


def _protocol_keywords_with(monkeypatch, name, value):
    """_protocol_keywords of machado2018 with ``name=value`` added to its options."""
    with monkeypatch.context() as patch:
        patch.setattr(fa_envpool, "protocol_options",
                      lambda p: {**protocol_options(p), name: value})
        return _protocol_keywords("machado2018", {})


def test_an_unknown_protocol_raises_as_protocol_options():
    for protocol in ("machado", "machado2018:test"):
        with pytest.raises(ValueError) as expected:
            protocol_options(protocol)
        with pytest.raises(ValueError, match=re.escape(str(expected.value))):
            fa_envpool.make_spec("Breakout-v5", protocol=protocol)
    with pytest.raises(TypeError, match="protocol must be a str"):
        fa_envpool.make_spec("Breakout-v5", protocol=1)
    # fastatari's names are not EnvPool's, beside a protocol too
    with pytest.raises(TypeError, match="clip_rewards"):
        fa_envpool.make_spec("Breakout-v5", protocol="machado2018", clip_rewards=True)


@pytest.mark.envpool
@pytest.mark.skipif(not HAVE_ENVPOOL, reason="envpool is not installed")
@pytest.mark.parametrize("protocol", ["dqn_nature", "dqn_nature:eval", "atari100k:eval",
                                      "machado2018"])
def test_the_keywords_are_real_envpools(protocol):
    import envpool

    keywords = _protocol_keywords(protocol, {})
    theirs = envpool.make_spec("Breakout-v5", **keywords).config
    ours = fa_envpool.make_spec("Breakout-v5", protocol=protocol).config
    for name, value in theirs._asdict().items():
        if name != "base_path":  # where the ROMs are
            assert getattr(ours, name) == value, name
