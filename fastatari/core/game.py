"""One ALE game driven directly, with the exact semantics of gymnasium's Atari pipeline.

:class:`AtariGame` reproduces, step for step and byte for byte,
``FrameStackObservation(AtariPreprocessing(gymnasium.make("ALE/<Game>-v5", frameskip=1, ...)),
stack_size)``: ale-py's seeding, ALE's sticky actions, no-op starts drawn from the env's generator,
frame skip with the early stop on a terminal frame, the max over the last two frames and
INTER_AREA resizing. It does this without gymnasium and without OpenCV: it reads palette-index
screens (``ale.getScreen``, about 1 µs) and runs one fused compiled kernel per step.

This module imports only numpy, ale_py and fastatari, so it can run inside vector-env workers;
it writes observations into a caller-provided stack array (for example a view into shared
memory).
"""

from __future__ import annotations

import collections
import time
from typing import Any, Callable, Deque, Dict, Optional, Tuple

import ale_py
import numpy as np

from fastatari import kernels
from fastatari.core import sticky
from fastatari.core.games import resolve_game, rom_path
from fastatari.core.options import AtariOptions
from fastatari.core.palette import Palette, palette_for
from fastatari.core.romfacts import RomFacts, loaded_facts, read_facts
from fastatari.core.schema import GAME_KEY
from fastatari.core.snapshot import GameState, pack_frames

__all__ = ["AtariGame", "FramePipeline", "action_index", "action_names", "make_np_random"]

_IDENTITY = np.arange(256, dtype=np.uint8)

#: ALE's 18 actions in their enum order (NOOP, FIRE, UP, ...): the full action set of most games.
ALE_ACTIONS = tuple(ale_py.Action.__members__.values())


def action_names(rom: str, full_action_space: bool = False) -> Tuple[str, ...]:
    """The names of a ROM's actions (minimal set, or all 18), e.g. ``("NOOP", "FIRE", ...)``,
    for front ends that must know the action set before they choose options (EnvPool's fire
    reset only where action 1 is FIRE). From the ROM facts table, without loading the ROM."""
    return loaded_facts(rom).actions(full_action_space)


def make_np_random(seed: int) -> np.random.Generator:
    """The generator ``gymnasium.utils.seeding.np_random(seed)[0]`` returns, without gymnasium."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed)))


def action_index(action: Any, n: int) -> int:
    """Validate an action of ``Discrete(n)`` and return it as an int.

    Accepts Python and NumPy integers and 0-d integer arrays. Anything else (bools, floats,
    strings, arrays) raises ``TypeError``, as ale-py's env and the vector env do for a value
    of the wrong type; an integer out of range raises ``ValueError``, as the vector env does.
    Both name the valid range.
    """
    if type(action) is int:
        a = action
    elif isinstance(action, np.integer):
        a = int(action)
    elif isinstance(action, np.ndarray) and action.ndim == 0 and action.dtype.kind in "iu":
        a = int(action)
    else:
        raise TypeError(f"action must be an int in [0, {n}) (Discrete({n})), got {action!r} "
                        f"of type {type(action).__name__}")
    if not 0 <= a < n:
        raise ValueError(f"action must be an int in [0, {n}) (Discrete({n})), got {a}")
    return a


class FramePipeline:
    """Screens -> stacked observation, reproducing gymnasium's frame buffers exactly.

    gymnasium's ``AtariPreprocessing`` keeps two full-resolution buffers: at ``t == skip - 2``
    it grabs into buffer 1, at ``t == skip - 1`` into buffer 0, and then takes
    ``np.maximum(buf0, buf1, out=buf0)`` in place. Normally that is ``max(prev, last)`` of the
    step's last two frames, which one fused kernel computes from palette indices. When a step
    ends early the buffers carry over, and:

    * ending before the ``skip - 2`` grab repeats the previous observation's frame (after the
      in-place max, ``buf0 >= buf1`` everywhere);
    * ending between the two grabs gives ``max(previous pooled frame, new prev)``, a max of three
      frames. For that rare case the pooled full-resolution frame (``held``) is materialised.

    Parameters
    ----------
    ale : ale_py.ALEInterface
    palette : Palette
        The ROM's learned tables.
    grayscale : bool
    stack : ndarray, uint8
        Written in place, in the layout :meth:`AtariOptions.stack_shape` describes.
    channels_last : bool
    pooling : bool
        Max-pool the last two frames of a step (``maxpool and frame_skip > 1``).
    zero_padding : bool
        At a reset, zero the older stack slots instead of repeating the reset frame.
    """

    def __init__(self, ale, palette: Palette, grayscale: bool, stack: np.ndarray,
                 channels_last: bool, pooling: bool, zero_padding: bool = False) -> None:
        h, w = ale.getScreenDims()
        self.ale = ale
        self.palette = palette
        self.grayscale = grayscale
        self.lut = palette.table(grayscale)
        self.channels_last = channels_last
        self.pooling = pooling
        self.zero_padding = zero_padding
        self.channels = 1 if grayscale else 3
        # (prev, last) define the current pooled frame; (next_prev, next_last) receive grabs.
        self.prev = np.zeros((h, w), np.uint8)
        self.last = np.zeros((h, w), np.uint8)
        self.next_prev = np.zeros((h, w), np.uint8)
        self.next_last = np.zeros((h, w), np.uint8)
        self.held: Optional[np.ndarray] = None
        self.retarget(stack)

    def retarget(self, stack: np.ndarray) -> None:
        """Write the observation stack into ``stack`` from now on (same shape and layout)."""
        self.stack = stack
        if self.channels_last:
            hh, ww, kc = stack.shape
            self._frames = stack.reshape(hh, ww, kc // self.channels, self.channels)
        else:
            self._frames = stack

    # -- the frame-skip loop ---------------------------------------------------------------------
    def run(self, frame: Callable[[], bool], skip: int) -> bool:
        """Run an agent step of ``skip`` frames and push its observation.

        ``frame()`` runs one emulator frame and returns True when the step must stop there (an
        episode's end): gymnasium's wrapper breaks *before* grabbing that frame, so the pushed
        frame comes from the buffers as they are (see :meth:`push_early`). Otherwise the screen
        is grabbed after frame ``skip - 2`` (when pooling) and after frame ``skip - 1``.
        Returns whether the step stopped early.
        """
        prev_at = skip - 2 if self.pooling else -1
        last_at = skip - 1
        for t in range(skip):
            if frame():
                self.push_early(grabbed_prev=prev_at >= 0 and t == prev_at + 1)
                return True
            if t == prev_at:
                self.grab_prev()
            elif t == last_at:
                self.grab_last()
        self.push_step()
        return False

    # -- grabs (right after the frame they belong to) ------------------------------------------
    def grab_prev(self) -> None:
        """Grab the current screen as the step's second-to-last frame."""
        self.ale.getScreen(self.next_prev)
        self.palette.learn(self.ale, self.next_prev)

    def grab_last(self) -> None:
        """Grab the current screen as the step's last frame."""
        self.ale.getScreen(self.next_last)
        self.palette.learn(self.ale, self.next_last)

    # -- pushing a new frame into the stack ----------------------------------------------------
    def push_step(self) -> None:
        """The step ran all its frames: push ``max(prev, last)`` (or ``last``)."""
        if self.pooling:
            kernels.step_palette(self.next_prev, self.next_last, self.lut, self.stack,
                                 maxpool=True, channels_last=self.channels_last)
            self.prev, self.next_prev = self.next_prev, self.prev
        else:
            kernels.step_palette(self.next_last, self.next_last, self.lut, self.stack,
                                 maxpool=False, channels_last=self.channels_last)
        self.last, self.next_last = self.next_last, self.last
        self.held = None

    def push_early(self, grabbed_prev: bool) -> None:
        """The step ended early; ``grabbed_prev`` says whether :meth:`grab_prev` ran."""
        if not (self.pooling and grabbed_prev):
            self._repeat_newest()
            return
        held = self.held
        if held is None:
            lut = self.lut
            held = np.maximum(np.take(lut, self.prev, axis=0), np.take(lut, self.last, axis=0))
            self.held = held
        np.maximum(held, np.take(self.lut, self.next_prev, axis=0), out=held)
        if self.grayscale:
            kernels.step_palette(held, held, _IDENTITY, self.stack, maxpool=False,
                                 channels_last=self.channels_last)
        else:
            kernels.step_rgb(held, held, self.stack, grayscale=False, maxpool=False,
                             channels_last=self.channels_last)

    def push_reset(self, pad: bool = True) -> None:
        """Grab the current screen into the newest stack slot and, with ``pad``, fill the
        others with it (gymnasium's default padding) or with zeros (``zero_padding``); without
        ``pad`` the older frames shift along as after a step."""
        self.ale.getScreen(self.last)
        self.palette.learn(self.ale, self.last)
        np.copyto(self.prev, self.last)
        self.held = None
        kernels.step_palette(self.last, self.last, self.lut, self.stack, maxpool=False,
                             channels_last=self.channels_last)
        if not pad:
            return
        frames = self._frames
        if self.channels_last:
            frames[:, :, :-1] = 0 if self.zero_padding else frames[:, :, -1:]
        else:
            frames[:-1] = 0 if self.zero_padding else frames[-1]

    # -- snapshots ---------------------------------------------------------------------------
    def pooled(self) -> np.ndarray:
        """The full-resolution frame the next step pools with if it ends between its two
        grabs (see :meth:`push_early`): ``held``, or the max of the last two frames."""
        if self.held is not None:
            return self.held
        return np.maximum(np.take(self.lut, self.prev, axis=0),
                          np.take(self.lut, self.last, axis=0))

    @property
    def pooled_shape(self) -> Tuple[int, ...]:
        """The shape of :meth:`pooled`: the screen's, RGB or gray as the palette table."""
        return self.prev.shape + self.lut.shape[1:]

    def restore_pooled(self, pooled: np.ndarray) -> None:
        """Make :meth:`pooled` return ``pooled``: what the next early end pools with."""
        self.held = np.array(pooled)

    def _repeat_newest(self) -> None:
        frames = self._frames
        if self.channels_last:
            frames[:, :, :-1] = frames[:, :, 1:].copy()
        else:
            frames[:-1] = frames[1:].copy()


class AtariGame:
    """One ALE game with gymnasium's Atari preprocessing, observations written in place.

    Parameters
    ----------
    game : str
        Any name :func:`fastatari.core.games.resolve_game` accepts (``"breakout"``,
        ``"ALE/Breakout-v5"``, ...).
    options : AtariOptions, optional
        Preprocessing options (defaults: :class:`AtariOptions`'s).
    stack : ndarray, optional
        uint8, C-contiguous, writable, of shape ``options.observation_shape``: the observation
        stack to write into. Allocated if omitted.
    seed : int, optional
        Seed for the construction-time ROM load (random if omitted, as in ale-py). A first
        ``reset(seed)`` with the same seed then need not reload the ROM.

    Notes
    -----
    Semantics (gymnasium's, unless marked as a fastatari extra):

    * Seeding: ``reset(seed=s)`` seeds as ale-py does: ``SeedSequence(s).generate_state(2)``
      gives the generator's seed and ALE's ``random_seed``, then the ROM is reloaded. Until the
      first seeded reset the game is seeded randomly. ``reset()`` continues the generators.
    * Reset: ``reset_game``, then ``integers(1, noop_max + 1)`` no-op frames; a no-op that ends
      the episode resets again (re-seeding with the same seed, if one was given).
    * Step: the action is repeated for ``frame_skip`` frames, stopping early on a terminal or
      truncated frame (or a lost life, with ``terminal_on_life_loss``/``episodic_life``).
    * ``fire_reset`` (extra): after the no-ops, FIRE is pressed for one frame.
    * ``episodic_life`` (extra): a lost life ends the episode (``terminated=True``), and the next
      unseeded ``reset()`` continues the same game as EnvPool's does: no ALE reset, but the
      no-ops and FIRE (``fire_reset``) again; their last frame is pushed onto the stack, whose
      older frames stay. A real game over (or truncation) resets fully.
    * ``life_loss_info`` (ale-py's vector env): a step that loses a life (lives remain) sets
      :attr:`life_loss_signal`; the episode and the game go on.
    * ``continuous`` (ale-py's): :meth:`step` takes an ALE action's value and the paddle
      strength (see :mod:`fastatari.core.continuous`).
    * ``clip_rewards`` (extra): the reward is ``sign(raw)``; ``info["raw_reward"]`` is the raw one.
    * Episode statistics (extra): when a step ends the episode and the next ``reset()`` will
      start a new game, ``info["game"] = {"r": raw return, "l": agent steps, "t": seconds}``
      covering that game since its reset.
    """

    def __init__(self, game: str, options: Optional[AtariOptions] = None,
                 stack: Optional[np.ndarray] = None, seed: Optional[int] = None) -> None:
        if options is None:
            options = AtariOptions()
        elif not isinstance(options, AtariOptions):
            raise TypeError(f"options must be an AtariOptions, got {type(options).__name__}")
        self.options = options
        self.rom = resolve_game(game)

        ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)  # before: no banner
        ale = ale_py.ALEInterface()
        ale.setFloat("repeat_action_probability", float(options.repeat_action_probability))
        if options.max_num_frames_per_episode is not None:
            ale.setInt("max_num_frames_per_episode", int(options.max_num_frames_per_episode))
        ale.setBool("sound_obs", False)
        self.ale = ale
        self.np_random: np.random.Generator = make_np_random(0)
        # ale-py seeds randomly at construction; a known seed lets the first reset(seed) with
        # the same seed skip reloading the ROM (0.1-0.3 s), as the loaded state is the same.
        self._load_seeds = self.seed(seed)
        self.facts: Optional[RomFacts] = None  # read at the first load, which checks options
        self._load()
        self._fresh_seed = seed  # not None: the ROM is as loaded with this seed, untouched

        self.action_set = list(ale.getLegalActionSet() if options.full_action_set
                               else ale.getMinimalActionSet())
        self.num_actions = len(self.action_set)
        # continuous actions name ALE's actions themselves, as ale-py's (Skiing's legal set
        # lacks FIRE, which a continuous action still presses)
        self._step_actions = ALE_ACTIONS if options.continuous else self.action_set
        h, w = ale.getScreenDims()
        self.screen_shape: Tuple[int, int] = (h, w)

        shape = options.observation_shape
        if stack is None:
            stack = np.zeros(shape, np.uint8)
        elif not (isinstance(stack, np.ndarray) and stack.dtype == np.uint8
                  and stack.shape == shape and stack.flags.c_contiguous
                  and stack.flags.writeable):
            got = (f"{stack.dtype} {stack.shape}" if isinstance(stack, np.ndarray)
                   else type(stack).__name__)
            raise ValueError(f"stack must be a writable C-contiguous uint8 array of shape "
                             f"{shape}, got {got}")
        self.stack = stack
        self.palette = palette_for(self.rom)
        self.frames = FramePipeline(ale, self.palette, options.grayscale_obs, stack,
                                    options.channels_last, options.pooling,
                                    zero_padding=options.padding_type == "zero")

        self._skip = options.frame_skip
        self._action = self.action_set[0]  # the current step's (see _frame)
        self._raw = 0
        self._life_lost = False
        self._watch_lives = (options.terminal_on_life_loss or options.episodic_life
                             or options.life_loss_info)
        # life loss ends the step early only with terminal_on_life_loss (gymnasium's)
        self._stop_at_life_loss = options.terminal_on_life_loss
        self._signal_life_loss = options.life_loss_info and not (
            options.terminal_on_life_loss or options.episodic_life)
        #: life_loss_info: the last step lost a life and the game goes on (ale-py's vector env
        #: then reports terminated=True, without ending the episode)
        self.life_loss_signal = False
        self._strength = 1.0
        # the latest actions asked of ALE (with their strength): a snapshot looks among them
        # for the one the emulator repeats (sticky actions)
        self._requests: Deque[Tuple[Any, float]] = collections.deque(maxlen=8)
        self.lives = 0
        self._continue_game = False  # episodic_life: the next reset continues the game
        self._return: float = 0  # the raw rewards' sum (a snapshot's episode[0])
        self._length = 0
        self._t0 = time.perf_counter()
        self._closed = False

    # -- seeding and loading, as ale_py.env.AtariEnv does --------------------------------------
    def seed(self, seed: Optional[int] = None) -> Tuple[int, int]:
        """Seed the generator and ALE (takes effect at the next ROM load); returns both seeds."""
        ss = np.random.SeedSequence(seed)
        np_seed, ale_seed = ss.generate_state(n_words=2)
        self.np_random = make_np_random(int(np_seed))
        self.ale.setInt("random_seed", np.int32(ale_seed))
        return int(np_seed), int(ale_seed)

    def _load(self) -> None:
        ale, opts = self.ale, self.options
        ale.loadROM(rom_path(self.rom))
        if self.facts is None:  # the first load: what the ROM offers, against the options
            self.facts = read_facts(self.rom, ale)
            self.facts.check(opts)
        if opts.mode is not None:
            ale.setMode(opts.mode)
        if opts.difficulty is not None:
            ale.setDifficulty(opts.difficulty)

    def _reset_ale(self, seed: Optional[int]) -> None:
        if seed is not None:
            self.seed(seed)
            self._load()
        self.ale.reset_game()
        self._return = 0
        self._length = 0
        self._t0 = time.perf_counter()

    # -- the game ------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"this {self.rom} game is closed")

    def reset(self, seed: Optional[int] = None) -> Dict[str, Any]:
        """Start an episode and write its observation into :attr:`stack`.

        Parameters
        ----------
        seed : int, optional
            Re-seed (and reload the ROM) first, as ale-py does.

        Returns
        -------
        dict
            ``lives``, ``episode_frame_number``, ``frame_number`` (and ``seeds`` when seeded;
            ``game_over`` with ``episodic_life``).
        """
        self._check_open()
        ale = self.ale
        seeds = None
        continuing = seed is None and self._continue_game
        if not continuing:
            if seed is not None and seed == self._fresh_seed:
                seeds = self._load_seeds
            elif seed is not None:
                seeds = self.seed(seed)
                self._load()
            self._fresh_seed = None
            ale.reset_game()
            self._return = 0
            self._length = 0
            self._t0 = time.perf_counter()
        # After a life loss too, as EnvPool: no-ops, then FIRE, then the game goes on.
        opts = self.options
        noops = int(self.np_random.integers(1, opts.noop_max + 1)) if opts.noop_max > 0 else 0
        restarted = False
        for action in [self.action_set[0]] * noops + [self.action_set[1]] * opts.fire_reset:
            ale.act(action)
            self._requests.append((action, 1.0))
            if ale.game_over():
                self._reset_ale(seed)
                restarted = True
        self._continue_game = False
        self.lives = ale.lives()
        # a continued game keeps its older frames in the stack, as EnvPool's
        self.frames.push_reset(pad=not continuing or restarted)
        info = self._info()
        if seeds is not None:
            info["seeds"] = seeds
        if self.options.episodic_life:
            info["game_over"] = False
        return info

    def step(self, action: int, strength: float = 1.0
             ) -> Tuple[float, bool, bool, Dict[str, Any]]:
        """Run one agent step (``frame_skip`` frames) and push its frame into :attr:`stack`.

        Parameters
        ----------
        action : int
            Index into :attr:`action_set`, already validated (see :func:`action_index`); with
            ``continuous``, an ALE action's value (see :func:`fastatari.core.continuous.joystick`).
        strength : float, default 1.0
            The paddle strength (ALE's ``act(action, paddle_strength)``; continuous actions).

        Returns
        -------
        reward : float
            Sum of the frames' rewards (its sign with ``clip_rewards``).
        terminated, truncated : bool
        info : dict
            The keys of :func:`fastatari.core.schema.info_fields` (``lives``,
            ``episode_frame_number``, ``frame_number``; ``raw_reward`` with ``clip_rewards``;
            ``game_over`` with ``episodic_life``; ``ram`` with ``ram_info``), and ``game`` at the
            end of a game.
        """
        if self._closed:
            self._check_open()
        self._fresh_seed = None
        self._action = self._step_actions[action]
        self._strength = strength
        self._requests.append((self._action, strength))
        self._raw = 0
        self._life_lost = False
        if self.frames.run(self._frame, self._skip):
            ale = self.ale
            terminated = ale.game_over(with_truncation=False)
            truncated = ale.game_truncated()
        else:
            terminated = truncated = False
        raw, life_lost = self._raw, self._life_lost

        self._return += raw
        self._length += 1
        info = self._info()
        opts = self.options
        reward = float(raw)
        if opts.clip_rewards:
            info["raw_reward"] = reward
            reward = float((raw > 0) - (raw < 0))
        game_over = terminated or truncated
        if opts.episodic_life:
            info["game_over"] = game_over
            self._continue_game = life_lost and not game_over
        if life_lost and (opts.terminal_on_life_loss or opts.episodic_life):
            terminated = True
        if self._signal_life_loss:
            self.life_loss_signal = life_lost and not game_over
        if (terminated or truncated) and not self._continue_game:
            info[GAME_KEY] = {"r": float(self._return), "l": self._length,
                               "t": round(time.perf_counter() - self._t0, 6)}
        return reward, terminated, truncated, info

    def _frame(self) -> bool:
        """One emulator frame of :meth:`step`; True when the step must stop here."""
        ale = self.ale
        self._raw += ale.act(self._action, self._strength)
        if self._watch_lives:
            lives = ale.lives()
            if not self._stop_at_life_loss:
                # episodic_life as EnvPool (and SB3's EpisodicLifeEnv), life_loss_info as ale-py:
                # a life is lost only while lives remain (Atlantis plays on at 0 lives), and the
                # step plays all its frames
                self._life_lost |= 0 < lives < self.lives
                self.lives = lives
                return ale.game_over()
            # terminal_on_life_loss, as gymnasium's AtariPreprocessing: stop at the lost life
            self._life_lost = lives < self.lives
            self.lives = lives
        return self._life_lost or ale.game_over()

    def _info(self) -> Dict[str, Any]:
        ale = self.ale
        info: Dict[str, Any] = {
            "lives": ale.lives(),
            "episode_frame_number": ale.getEpisodeFrameNumber(),
            "frame_number": ale.getFrameNumber(),
        }
        if self.options.ram_info:
            info["ram"] = ale.getRAM()
        return info

    # -- snapshots -------------------------------------------------------------------------------
    def snapshot(self) -> GameState:
        """This game's state: restored by :meth:`restore` into a game of the same ROM and
        options, here or in another process, it continues exactly as this one would."""
        self._check_open()
        frames = self.frames
        ale = self.ale
        state = ale.cloneState(include_rng=True)
        emulator = state.serialize()
        repeats = sticky.leading_repeats(emulator, self.options.repeat_action_probability)
        held = sticky.find_held_action(ale, state, repeats, sticky.recent_actions(
            [(int(action.value), strength) for action, strength in self._requests]))
        return GameState(
            emulator=emulator, np_random=self.np_random.bit_generator.state,
            frames=pack_frames(frames.stack, frames.pooled()),
            lives=self.lives, continue_game=self._continue_game,
            episode=(self._return, self._length, time.perf_counter() - self._t0), held=held,
            held_frames=repeats if held is not None else 0)

    def restore(self, state: GameState) -> None:
        """Put back a :meth:`snapshot` (of a game of this ROM and options: checked by the
        caller, see :meth:`fastatari.core.snapshot.EnvSnapshot.check`)."""
        self._check_open()
        frames = self.frames
        # every field checked first (ValueError): a restore happens whole or not at all
        stack, pooled, emulator = state.unpack(frames.stack.shape, frames.pooled_shape)
        # bytes ALE parses but cannot load (a crafted state: a part's name or size that is not
        # its own) raise nanobind's SystemError after part of the emulator changed: put it back
        before = self.ale.cloneState(include_rng=True)
        try:
            self.ale.restoreState(emulator)
        except Exception:
            self.ale.restoreState(before)
            raise ValueError(f"snapshot emulator state ({len(state.emulator)} bytes) is not one "
                             f"ALE can load") from None
        if state.held is not None:
            sticky.hold_action(self.ale, emulator, state.held, state.held_frames)
        self.np_random.bit_generator.state = state.np_random
        np.copyto(frames.stack, stack)
        frames.restore_pooled(pooled)
        self.lives = state.lives
        self._continue_game = state.continue_game
        self._return, self._length, seconds = state.episode
        self._t0 = time.perf_counter() - seconds
        self._fresh_seed = None  # the ROM is no longer as loaded: a seeded reset reloads it
        self.life_loss_signal = False

    def render_rgb(self) -> np.ndarray:
        """The raw current screen, ``(210, 160, 3)`` uint8 for most games (``getScreenRGB``)."""
        self._check_open()
        return self.ale.getScreenRGB()

    def action_meanings(self) -> list:
        """Names of the actions, e.g. ``["NOOP", "FIRE", "RIGHT", "LEFT"]``."""
        return [a.name for a in self.action_set]

    @property
    def continues_game(self) -> bool:
        """Whether the next unseeded :meth:`reset` continues the game (``episodic_life``, after
        a lost life): it then pushes onto the current stack instead of filling a new one."""
        return self._continue_game

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def close(self) -> None:
        """Release the emulator. Later calls raise ``RuntimeError``."""
        if not self._closed:
            self._closed = True
            del self.frames, self.ale  # release them; _check_open guards every use
