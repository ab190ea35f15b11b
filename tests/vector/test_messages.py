"""fastatari.vector.messages: every pipe command and reply survives encode/decode, the DONE
fast path, unknown tags, and the worker's start-up config."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

from fastatari.core.options import AtariOptions
from fastatari.vector import messages
from fastatari.vector.buffers import Layout
from fastatari.vector.messages import GAME_FACTORY, Command, Reply, ReplyKind, WorkerConfig


# -- commands (the pipe carries the rare ones: steps go through shared memory) ------------
@pytest.mark.parametrize("requests", [
    [],
    [(0, None)],
    [(0, 7), (1, None), (5, 2**40)],
    [(3, 0)],
])
def test_reset_round_trip(requests):
    data = messages.encode_reset(requests)
    assert data[:1] == Command.RESET.value
    command, payload = messages.decode_command(data)
    assert command is Command.RESET
    assert payload == requests


def test_reset_accepts_a_tuple_and_decodes_a_list():
    _, payload = messages.decode_command(messages.encode_reset(((2, 9),)))
    assert payload == [(2, 9)]


@pytest.mark.parametrize("env_ids", [[0], [3, 1, 2], np.array([4, 5], np.int64)])
def test_render_round_trip(env_ids):
    data = messages.encode_render(env_ids)
    assert data[:1] == Command.RENDER.value
    command, payload = messages.decode_command(data)
    assert command is Command.RENDER
    assert payload == [int(i) for i in env_ids]
    assert all(type(i) is int for i in payload)  # numpy ints become Python ints


def test_close_round_trip():
    data = messages.encode_close()
    assert data == Command.CLOSE.value
    assert messages.decode_command(data) == (Command.CLOSE, None)


def test_command_tags_are_distinct_single_bytes():
    tags = [c.value for c in Command]
    assert all(len(t) == 1 for t in tags)
    assert len(set(tags)) == len(tags)


@pytest.mark.parametrize("data", [b"x", b"?payload", b"d"])
def test_unknown_command_tag_raises_value_error(data):
    with pytest.raises(ValueError, match="is not a valid Command"):
        messages.decode_command(data)


# -- replies -------------------------------------------------------------------------------------
def test_done_fast_path():
    reply = messages.decode_reply(messages.DONE)
    assert reply.kind is ReplyKind.DONE
    assert reply.payload is None and reply.envs is None
    assert messages.decode_reply(bytes(messages.DONE)) == Reply(ReplyKind.DONE)


def test_ready():
    assert messages.READY == ReplyKind.READY.value
    reply = messages.decode_reply(messages.READY)
    assert reply == Reply(ReplyKind.READY)


@pytest.mark.parametrize("text", [
    "",
    "Traceback (most recent call last):\n  ValueError: boom",
    "Fehler: Größe ≠ 84 — 失败 🎮",
])
def test_error_round_trip(text):
    data = messages.encode_error(text)
    assert data[:1] == ReplyKind.ERROR.value
    assert messages.decode_reply(data) == Reply(ReplyKind.ERROR, text)


def test_rendered_round_trip():
    rng = np.random.default_rng(0)
    screens = [rng.integers(0, 256, (210, 160, 3), dtype=np.uint8),
               rng.integers(0, 256, (250, 160, 3), dtype=np.uint8)]
    data = messages.encode_rendered(screens)
    assert data[:1] == ReplyKind.RENDERED.value
    reply = messages.decode_reply(data)
    assert reply.kind is ReplyKind.RENDERED
    assert len(reply.payload) == 2
    for got, sent in zip(reply.payload, screens, strict=True):
        assert got.dtype == np.uint8 and got.shape == sent.shape
        np.testing.assert_array_equal(got, sent)


def test_rendered_empty_list():
    assert messages.decode_reply(messages.encode_rendered([])) == Reply(ReplyKind.RENDERED, [])


@pytest.mark.parametrize("data", [b"", b"x", b"zzz", b"s"])
def test_unknown_reply_tag_raises_value_error(data):
    with pytest.raises(ValueError, match="is not a valid ReplyKind"):
        messages.decode_reply(data)


def test_reply_tags_are_distinct_single_bytes():
    tags = [k.value for k in ReplyKind]
    assert all(len(t) == 1 for t in tags)
    assert len(set(tags)) == len(tags)


# -- start-up ------------------------------------------------------------------------------------
def test_worker_config_pickles():
    options = AtariOptions(frame_skip=2, screen_size=(64, 48), clip_rewards=True)
    config = WorkerConfig(index=1, env_ids=(2, 3),
                          games=(("breakout", options), ("pong", options)),
                          layout=Layout(4, options.observation_shape), same_step=True,
                          resets=((2, 10), (3, None)), restarted=True, cpu=0, memory=17)
    copy = pickle.loads(pickle.dumps(config, pickle.HIGHEST_PROTOCOL))
    assert copy == config
    assert copy.games[0][1].screen_size == (64, 48)
    assert copy.layout.offsets().keys() == config.layout.offsets().keys()
    assert copy.layout.nbytes == config.layout.nbytes


def test_worker_config_defaults():
    config = WorkerConfig(index=0, env_ids=(0,), games=(("pong", AtariOptions()),),
                          layout=Layout(1, (4, 84, 84)), same_step=False, resets=())
    assert (config.restarted, config.cpu, config.memory) == (False, None, None)
    assert (config.reset_ahead, config.ale_actions) == (False, False)
    assert config.game_factory == GAME_FACTORY == "fastatari.core.game:AtariGame"
    assert config.wake_fd == -1
    assert pickle.loads(pickle.dumps(config)) == config
