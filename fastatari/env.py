"""gymnasium front ends: :class:`AtariEnv` (ALE driven directly) and the drop-in
:class:`AtariPreprocessing` wrapper."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, SupportsFloat, Tuple, Union

import ale_py
import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.error import ClosedEnvironmentError

from fastatari.core.continuous import ACTION_HIGH, ACTION_LOW, check_continuous_actions, joystick
from fastatari.core.game import AtariGame, FramePipeline, action_index
from fastatari.core.options import AtariOptions
from fastatari.core.palette import palette_for
from fastatari.core.protocols import apply_protocol
from fastatari.core.snapshot import EnvSnapshot, check_snapshots, warn_if_inexact

__all__ = ["AtariEnv", "AtariPreprocessing"]

class AtariEnv(gymnasium.Env):
    """An Atari game with gymnasium's preprocessing and frame stacking, fused and compiled.

    ``AtariEnv(game, **options)`` with ``reset(seed=s)`` gives, step for step, byte-identical
    observations and equal rewards, ``terminated``, ``truncated`` and ``info["lives"]`` to
    gymnasium's reference pipeline::

        FrameStackObservation(
            AtariPreprocessing(
                gymnasium.make("ALE/<Game>-v5", frameskip=1,
                               repeat_action_probability=..., full_action_space=...,
                               max_num_frames_per_episode=...),
                noop_max, frame_skip, screen_size, terminal_on_life_loss, grayscale_obs),
            stack_size)

    with ALE driven directly (no gymnasium env underneath) and one fused kernel per step.

    Parameters
    ----------
    game : str
        ``"breakout"``, ``"Breakout"``, ``"ALE/Breakout-v5"``, ``"space_invaders"``, ...
    options : AtariOptions, optional
        All options at once; keyword options given as well override its fields.
    render_mode : {None, "rgb_array"}, optional
        ``"rgb_array"``: :meth:`render` returns the raw ``(210, 160, 3)`` screen.
    **kwargs
        ``protocol`` (a paper's setting, see :mod:`fastatari.core.protocols`: its options,
        which the other keywords override), and any :class:`AtariOptions` field
        (``frame_skip``, ``screen_size``, ``noop_max``, ``repeat_action_probability``, ...):
        its docstring lists each with its default.

    Notes
    -----
    Observations are fresh uint8 arrays: ``(k, H, W)`` gray or ``(k, H, W, 3)`` RGB; with
    ``channels_last``, ``(H, W, k)`` or ``(H, W, 3k)``. ``info`` always holds ``lives``,
    ``episode_frame_number`` and ``frame_number``; see :class:`fastatari.core.game.AtariGame` for
    the extras (``raw_reward``, ``game_over``, ``episode``) and their exact semantics.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}

    def __init__(self, game: str, options: Optional[AtariOptions] = None, *,
                 render_mode: Optional[str] = None, **kwargs: Any) -> None:
        options = AtariOptions.build(**apply_protocol({**kwargs, "options": options}))
        if options.life_loss_info:
            # a single env's terminated=True ends its episode (gymnasium's wrappers reset it)
            raise ValueError("life_loss_info is a vector-env option (ale-py's AtariVectorEnv "
                             "has it, its AtariEnv does not): use fastatari.make_vec, or "
                             "terminal_on_life_loss / episodic_life here")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.render_mode = render_mode
        self.options = options
        self._game: Optional[AtariGame] = AtariGame(game, options)
        self._stack = self._game.stack
        self._n = self._game.num_actions
        self._continuous = options.continuous
        self.action_space: spaces.Space = (
            spaces.Box(ACTION_LOW.copy(), ACTION_HIGH.copy(), dtype=np.float32)
            if options.continuous else spaces.Discrete(self._n))
        self.observation_space = spaces.Box(0, 255, options.observation_shape, np.uint8)
        self._np_random = self._game.np_random

    # -- gymnasium API -------------------------------------------------------------------------
    def reset(self, *, seed: Optional[int] = None,
              options: Optional[Dict[str, Any]] = None) -> Tuple[np.ndarray, Dict[str, Any]]:
        """Start an episode.

        Parameters
        ----------
        seed : int, optional
            Seeds the env's generator and ALE exactly as ale-py does (and reloads the ROM).
            Without it the generators continue.
        options : dict, optional
            Unused (gymnasium signature).

        Returns
        -------
        observation : ndarray, uint8
        info : dict
        """
        game = self._live_game()
        super().reset(seed=seed)
        info = game.reset(seed)
        self._np_random = game.np_random
        return self._stack.copy(), info

    def step(self, action: Any) -> Tuple[np.ndarray, float, bool, bool, Dict[str, Any]]:
        """Run one agent step.

        Parameters
        ----------
        action : int or ndarray
            In ``[0, action_space.n)``; anything else raises ``ValueError`` before the
            emulator runs. With ``continuous``: ``(radius, theta, fire)``, float32.

        Returns
        -------
        observation : ndarray, uint8
        reward : float
        terminated, truncated : bool
        info : dict
        """
        game = self._game
        if game is None:
            game = self._live_game()  # raises: closed
        if self._continuous:
            action, strength = joystick(check_continuous_actions(action, (3,)),
                                        self.options.continuous_action_threshold)
            reward, terminated, truncated, info = game.step(action, strength)
            return self._stack.copy(), reward, terminated, truncated, info
        if type(action) is not int or not 0 <= action < self._n:
            action = action_index(action, self._n)
        reward, terminated, truncated, info = game.step(action)
        return self._stack.copy(), reward, terminated, truncated, info

    def clone(self) -> EnvSnapshot:
        """This env's whole state: the emulator with its random generator (sticky actions),
        the no-op generator, the frame stack, lives and the game's statistics. After
        :meth:`restore` (here, in another ``AtariEnv`` or in any env of a vector env of the same
        game and options, in any process) every action sequence gives the same results."""
        game = self._live_game()
        return EnvSnapshot(game.rom, self.options, game.snapshot())

    def restore(self, snapshot: EnvSnapshot) -> None:
        """Continue from ``snapshot`` (see :meth:`clone`). ``ValueError``, before anything
        changes, for another game or other options, a damaged copy or a foreign object."""
        game = self._live_game()
        check_snapshots([snapshot], 1)
        snapshot.check(game.rom, self.options)
        if snapshot.state.pending is not None:
            raise ValueError("this snapshot holds an autoreset its vector env had already run "
                             "(next-step autoreset): restore it into a vector env")
        warn_if_inexact(snapshot.game)
        game.restore(snapshot.state)

    def render(self) -> Optional[np.ndarray]:
        """The raw RGB screen with ``render_mode="rgb_array"``; None without a render mode."""
        game = self._live_game()
        if self.render_mode == "rgb_array":
            return game.render_rgb()
        return None

    def close(self) -> None:
        """Release the emulator; later ``reset``/``step``/``render`` raise gymnasium's
        ``ClosedEnvironmentError``."""
        if self._game is not None:
            self._game.close()
            self._game = None

    # -- extras --------------------------------------------------------------------------------
    def _live_game(self) -> AtariGame:
        if self._game is None:
            # the vector envs' (and fastatari.envpool's) exception for the same misuse
            raise ClosedEnvironmentError("this AtariEnv is closed; create a new one")
        return self._game

    @property
    def game(self) -> str:
        """The ale-py ROM id, e.g. ``"breakout"``."""
        return self._live_game().rom

    @property
    def ale(self) -> ale_py.ALEInterface:
        """The underlying ``ale_py.ALEInterface``."""
        return self._live_game().ale

    @property
    def lives(self) -> int:
        """Lives left now."""
        return int(self._live_game().ale.lives())

    def get_action_meanings(self) -> list:
        """Names of the actions, e.g. ``["NOOP", "FIRE", "RIGHT", "LEFT"]``."""
        return self._live_game().action_meanings()


class AtariPreprocessing(gymnasium.Wrapper):
    """Drop-in, faster replacement for ``gymnasium.wrappers.AtariPreprocessing`` (+ stacking).

    Same arguments, same validation errors and byte-identical outputs as gymnasium's wrapper
    over any ale-py env created with ``frameskip=1``. It still calls ``self.env.step(action)``
    once per frame, so wrappers below it, sticky actions and the env's generator behave the
    same, but it grabs palette-index screens from ``env.unwrapped.ale`` and runs one fused
    kernel per step instead of two gray/RGB screen copies, ``np.maximum`` and ``cv2.resize``.

    Parameters
    ----------
    env : gymnasium.Env
        An ale-py Atari env (``env.unwrapped.ale``), with ``frameskip=1`` when ``frame_skip > 1``.
    noop_max, frame_skip, screen_size, terminal_on_life_loss
        As in gymnasium. ``screen_size`` must not enlarge the screen (OpenCV switches to another
        interpolation there; a ``ValueError`` says so).
    grayscale_obs, grayscale_newaxis, scale_obs
        As in gymnasium.
    stack_size : int, optional
        None: gymnasium's unstacked observation. ``k``: equal to
        ``FrameStackObservation(gymnasium's AtariPreprocessing(...), k, padding_type=...)``.
    padding_type : {"reset", "zero"}, default "reset"
        With ``stack_size``: what fills the stack after a reset, as ``FrameStackObservation``'s
        ``padding_type`` (the reset frame, or zeros).
    """

    def __init__(self, env: gymnasium.Env, noop_max: int = 30, frame_skip: int = 4,
                 screen_size: Union[int, Tuple[int, int]] = 84,
                 terminal_on_life_loss: bool = False, grayscale_obs: bool = True,
                 grayscale_newaxis: bool = False, scale_obs: bool = False,
                 stack_size: Optional[int] = None, padding_type: str = "reset") -> None:
        gymnasium.Wrapper.__init__(self, env)
        # The same checks, types and messages as gymnasium 1.x's wrapper.
        if frame_skip <= 0:
            raise ValueError(f"Expect the `frame_skip` to be positive, actually: {frame_skip}")
        if not (
            (isinstance(screen_size, int) and screen_size > 0)
            or (isinstance(screen_size, tuple) and len(screen_size) == 2
                and all(isinstance(size, int) and size > 0 for size in screen_size))
        ):
            raise ValueError(f"Expect the `screen_size` to be positive, actually: {screen_size}")
        if frame_skip > 1 and getattr(env.unwrapped, "_frameskip", None) != 1:
            raise ValueError(
                "Disable frame-skipping in the original env. Otherwise, more than one frame-skip "
                "will happen as through this wrapper")
        if noop_max < 0:
            raise ValueError(f"Expect the `noop_max` to be non-negative, actually: {noop_max}")
        atari: Any = env.unwrapped  # an ale-py AtariEnv (get_action_meanings, ale)
        if noop_max > 0 and atari.get_action_meanings()[0] != "NOOP":
            raise ValueError("When noop_max > 0, the first action meaning must be 'NOOP'")
        if not isinstance(env.observation_space, spaces.Box):
            raise TypeError(f"AtariPreprocessing wrapper requires a Box observation space, got "
                            f"{type(env.observation_space)}")
        if stack_size is not None:
            if not np.issubdtype(type(stack_size), np.integer):
                raise TypeError(f"The stack_size is expected to be an integer, actual type: "
                                f"{type(stack_size)}")
            if not 0 < stack_size:
                raise ValueError(f"The stack_size needs to be greater than zero, actual value: "
                                 f"{stack_size}")
        if padding_type not in ("reset", "zero"):
            raise ValueError(f"padding_type must be 'reset' or 'zero', got {padding_type!r}")

        self.noop_max = noop_max
        self.frame_skip = frame_skip
        self.screen_size: Tuple[int, int] = (
            screen_size if isinstance(screen_size, tuple) else (screen_size, screen_size))
        self.terminal_on_life_loss = terminal_on_life_loss
        self.grayscale_obs = grayscale_obs
        self.grayscale_newaxis = grayscale_newaxis
        self.scale_obs = scale_obs
        self.stack_size = stack_size
        self.padding_type = padding_type
        self.lives = 0
        self.game_over = False

        ale = self.ale
        h, w = ale.getScreenDims()
        width, height = self.screen_size
        if width > w or height > h:
            raise ValueError(f"screen_size {self.screen_size} (width, height) would enlarge the "
                             f"{w}x{h} screen; fastatari's AtariPreprocessing only downscales "
                             f"(use gymnasium's wrapper to enlarge)")
        k = 1 if stack_size is None else int(stack_size)
        shape: Tuple[int, ...] = (k, height, width) if grayscale_obs else (k, height, width, 3)
        self._stack = np.zeros(shape, np.uint8)
        self._frames = FramePipeline(ale, palette_for(getattr(env.unwrapped, "_game", None)),
                                     grayscale_obs, self._stack, False, frame_skip > 1,
                                     zero_padding=padding_type == "zero")

        low, high, dtype = (0, 1, np.float32) if scale_obs else (0, 255, np.uint8)
        frame_shape: Tuple[int, ...] = (height, width, 1 if grayscale_obs else 3)
        if grayscale_obs and not grayscale_newaxis:
            frame_shape = frame_shape[:-1]
        space: spaces.Space = spaces.Box(low=low, high=high, shape=frame_shape, dtype=dtype)
        if stack_size is not None:
            space = gymnasium.vector.utils.batch_space(space, n=k)
        self.observation_space = space

    @property
    def ale(self) -> ale_py.ALEInterface:
        """The ALE of the wrapped env (``env.unwrapped.ale``)."""
        atari: Any = self.env.unwrapped  # an ale-py AtariEnv
        return atari.ale

    def step(self, action: Any) -> Tuple[np.ndarray, SupportsFloat, bool, bool, Dict[str, Any]]:
        """Repeat ``action`` for ``frame_skip`` frames (stopping early at an episode's end)."""
        result: List[Any] = [0.0, False, False, {}]  # total reward, terminated, truncated, info
        env_step = self.env.step

        def frame() -> bool:
            _, reward, terminated, truncated, result[3] = env_step(action)
            result[0] += reward
            self.game_over = terminated
            if self.terminal_on_life_loss:
                new_lives = self.ale.lives()
                terminated = terminated or new_lives < self.lives
                self.game_over = terminated
                self.lives = new_lives
            result[1], result[2] = terminated, truncated
            return terminated or truncated

        self._frames.run(frame, self.frame_skip)
        total_reward, terminated, truncated, info = result
        return self._obs(), total_reward, terminated, truncated, info

    def reset(self, *, seed: Optional[int] = None,
              options: Optional[Dict[str, Any]] = None) -> Tuple[np.ndarray, Dict[str, Any]]:
        """Reset, then ``1..noop_max`` no-op steps, as gymnasium's wrapper does."""
        _, reset_info = self.env.reset(seed=seed, options=options)
        noops = (self.env.unwrapped.np_random.integers(1, self.noop_max + 1)
                 if self.noop_max > 0 else 0)
        for _ in range(noops):
            _, _, terminated, truncated, step_info = self.env.step(0)
            reset_info.update(step_info)
            if terminated or truncated:
                _, reset_info = self.env.reset(seed=seed, options=options)
        self.lives = self.ale.lives()
        self._frames.push_reset()
        return self._obs(), reset_info

    def _obs(self) -> np.ndarray:
        stack = self._stack
        obs = stack[0] if self.stack_size is None else stack
        if self.scale_obs:
            obs = np.asarray(obs, dtype=np.float32) / 255.0
        else:
            obs = obs.copy()
        if self.grayscale_obs and self.grayscale_newaxis:
            obs = obs[..., np.newaxis]
        return obs
