"""Preprocessing options shared by every fastatari front end.

:class:`AtariOptions` is one frozen, validated dataclass: :class:`fastatari.AtariEnv` takes its
fields as keyword arguments, and the vector env will too. The names and defaults follow
gymnasium (``AtariPreprocessing``, ``FrameStackObservation`` and ale-py's ``ALE/<Game>-v5``);
the options after ``max_num_frames_per_episode`` are fastatari's own.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from typing import Any, Optional, Tuple, Union

from fastatari.core.validate import (
    check_bool,
    check_fits_in_memory,
    check_int,
    check_probability,
    is_int,
)

__all__ = ["AtariOptions", "check_option_names"]


#: The largest frame side: ALE screens are at most 250 lines, and fastatari only downscales.
MAX_SIDE = 4096


@dataclass(frozen=True)
class AtariOptions:
    """Preprocessing options, validated once at construction.

    Parameters
    ----------
    frame_skip : int, default 4
        Emulator frames per agent step (>= 1); the action is repeated on each.
    screen_size : int or tuple of (int, int), default 84
        Output frame size: a square side, or ``(width, height)`` as ``cv2.resize`` takes it.
        Must not enlarge the game's screen (checked when a game is created).
    grayscale_obs : bool, default True
        Gray frames; False gives RGB frames.
    noop_max : int, default 30
        At reset, ``1..noop_max`` no-op frames (drawn from the env's generator); 0 disables.
    terminal_on_life_loss : bool, default False
        ``terminated=True`` when a life is lost; the next ``reset()`` starts a new game
        (gymnasium's semantics).
    stack_size : int, default 4
        Frames in the observation stack (>= 1).
    repeat_action_probability : float, default 0.25
        ALE's sticky-action probability, in [0, 1].
    full_action_space : bool, default False
        All 18 actions instead of the game's minimal set.
    max_num_frames_per_episode : int or None, default 108000
        ALE truncates an episode after this many frames (>= 0; 0 or None means no limit).
    maxpool : bool, default True
        Max-pool the last two frames of a step (gymnasium's behaviour). False uses the last frame.
    channels_last : bool, default False
        Stack layout: False gives ``(k, H, W)`` / ``(k, H, W, 3)``, True gives ``(H, W, k)`` /
        ``(H, W, 3k)``.
    clip_rewards : bool, default False
        Return ``sign(reward)``; the raw reward is in ``info["raw_reward"]``.
    fire_reset : bool, default False
        After the reset no-ops, press FIRE for one frame. Only for games whose action 1 is FIRE.
    episodic_life : bool, default False
        A life loss ends the episode but not the game: the next ``reset()`` continues the same
        game. Only while lives remain, as in EnvPool and SB3 (a game that plays on at 0 lives
        ends its episode when the game ends). Exclusive with ``terminal_on_life_loss``.
    mode, difficulty : int or None, default None
        ALE game mode and difficulty; None keeps the ROM's default.
    padding_type : {"reset", "zero"}, default "reset"
        What fills the older stack slots at a reset, as gymnasium's ``FrameStackObservation``:
        the reset frame repeated (its default), or zeros (ale-py's vector env and SB3's
        ``VecFrameStack``).
    ram_info : bool, default False
        Also report the console's 128 bytes of RAM after each step and reset in
        ``info["ram"]`` (uint8), as EnvPool does.
    continuous : bool, default False
        ale-py's continuous actions: an action is ``(radius, theta, fire)`` (float32, in
        ``Box([0, -pi, 0], [1, pi, 1])``); the joystick direction is where the polar point
        ``radius * (cos theta, sin theta)`` passes ``continuous_action_threshold`` on each
        axis, FIRE is ``fire > continuous_action_threshold``, and ``radius`` is the paddle
        strength. Implies the full action set (as in ale-py).
    continuous_action_threshold : float, default 0.5
        See ``continuous``.
    life_loss_info : bool, default False
        Vector envs only, as ale-py's vector env: a step on which a life is lost (lives remain)
        reports ``terminated=True``, but the episode goes on (no reset, the game continues).
        No effect with ``episodic_life`` or ``terminal_on_life_loss``, which end the episode
        there.
    """

    frame_skip: int = 4
    screen_size: Union[int, Tuple[int, int]] = 84
    grayscale_obs: bool = True
    noop_max: int = 30
    terminal_on_life_loss: bool = False
    stack_size: int = 4
    repeat_action_probability: float = 0.25
    full_action_space: bool = False
    max_num_frames_per_episode: Optional[int] = 108_000
    maxpool: bool = True
    channels_last: bool = False
    clip_rewards: bool = False
    fire_reset: bool = False
    episodic_life: bool = False
    mode: Optional[int] = None
    difficulty: Optional[int] = None
    padding_type: str = "reset"
    ram_info: bool = False
    continuous: bool = False
    continuous_action_threshold: float = 0.5
    life_loss_info: bool = False

    def __post_init__(self) -> None:
        check_int("frame_skip", self.frame_skip, 1)
        size: Any = self.screen_size  # unchecked: any value a caller gave
        pair = isinstance(size, (tuple, list))
        sides = tuple(size) if pair else (size,)
        if len(sides) != (2 if pair else 1) or not all(
                is_int(side) and 1 <= side <= MAX_SIDE for side in sides):
            raise ValueError(f"screen_size must be an int in [1, {MAX_SIDE}] or a (width, height) "
                             f"tuple of such ints, got {size!r}")
        if pair:
            object.__setattr__(self, "screen_size", (int(sides[0]), int(sides[1])))
        check_int("noop_max", self.noop_max, 0)
        check_int("stack_size", self.stack_size, 1)
        if self.max_num_frames_per_episode is not None:
            check_int("max_num_frames_per_episode", self.max_num_frames_per_episode, 0)
        check_probability("repeat_action_probability", self.repeat_action_probability)
        for name in ("grayscale_obs", "terminal_on_life_loss", "full_action_space", "maxpool",
                     "channels_last", "clip_rewards", "fire_reset", "episodic_life", "ram_info",
                     "continuous", "life_loss_info"):
            check_bool(name, getattr(self, name))
        for name in ("mode", "difficulty"):
            value = getattr(self, name)
            if value is not None and (not is_int(value) or value < 0):
                raise ValueError(f"{name} must be None or an int >= 0, got {value!r}")
        threshold = self.continuous_action_threshold
        if (isinstance(threshold, bool) or not isinstance(threshold, numbers.Real)
                or not math.isfinite(threshold) or threshold < 0):
            raise ValueError(f"continuous_action_threshold must be a finite number >= 0, got "
                             f"{threshold!r}")
        object.__setattr__(self, "continuous_action_threshold", float(threshold))
        if self.padding_type not in ("reset", "zero"):
            raise ValueError(f"padding_type must be 'reset' or 'zero', got {self.padding_type!r}")
        if self.episodic_life and self.terminal_on_life_loss:
            raise ValueError("episodic_life and terminal_on_life_loss are mutually exclusive: "
                             "both end the episode on a life loss, but only terminal_on_life_loss "
                             "starts a new game at the next reset()")
        # the observation stack is allocated at once: name the options before numpy would
        shape = self.observation_shape
        check_fits_in_memory(f"observations of shape {shape} (stack_size={self.stack_size}, "
                             f"screen_size={self.screen_size!r})",
                             math.prod(shape))

    @classmethod
    def field_names(cls) -> Tuple[str, ...]:
        """The option names, in declaration order."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @property
    def width(self) -> int:
        """Output frame width in pixels."""
        size = self.screen_size  # __post_init__ made a pair a tuple
        return size[0] if isinstance(size, tuple) else int(size)

    @property
    def height(self) -> int:
        """Output frame height in pixels."""
        size = self.screen_size
        return size[1] if isinstance(size, tuple) else int(size)

    @property
    def channels(self) -> int:
        """Channels per frame: 1 (gray) or 3 (RGB)."""
        return 1 if self.grayscale_obs else 3

    @property
    def frame_shape(self) -> Tuple[int, ...]:
        """Shape of one unstacked frame: ``(H, W)`` or ``(H, W, 3)``."""
        if self.grayscale_obs:
            return (self.height, self.width)
        return (self.height, self.width, 3)

    def stack_shape(self, channels_last: Optional[bool] = None) -> Tuple[int, ...]:
        """Shape of the stacked observation.

        Parameters
        ----------
        channels_last : bool, optional
            Layout to describe; defaults to ``self.channels_last``.

        Returns
        -------
        tuple of int
            Gray: ``(k, H, W)`` or, channels-last, ``(H, W, k)``. RGB: ``(k, H, W, 3)`` or,
            channels-last, ``(H, W, 3k)`` (frame ``j`` in channels ``3j..3j+2``).
        """
        last = self.channels_last if channels_last is None else channels_last
        k, h, w = self.stack_size, self.height, self.width
        if last:
            return (h, w, k * self.channels)
        return (k, h, w) if self.grayscale_obs else (k, h, w, 3)

    @property
    def observation_shape(self) -> Tuple[int, ...]:
        """Shape of the observation in the configured layout (see :meth:`stack_shape`)."""
        return self.stack_shape()

    @property
    def full_action_set(self) -> bool:
        """Whether the game plays ALE's 18 actions (``full_action_space``, or ``continuous``,
        whose joystick positions and FIRE cover all 18), not its minimal set."""
        return self.full_action_space or self.continuous

    @property
    def pooling(self) -> bool:
        """Whether a step's observation max-pools two frames (``maxpool``, ``frame_skip > 1``)."""
        return self.maxpool and self.frame_skip > 1

    def replace(self, **changes: Any) -> "AtariOptions":
        """A copy with some options changed (validated again)."""
        check_option_names(changes)
        return dataclasses.replace(self, **changes)

    @classmethod
    def build(cls, options: Optional["AtariOptions"] = None, **changes: Any) -> "AtariOptions":
        """``options`` (default: the defaults) with ``changes`` applied; the one place where
        front ends turn keyword options into an :class:`AtariOptions`.

        Raises
        ------
        TypeError
            For a name that is not an option, or ``options`` that is not an AtariOptions.
        ValueError
            For a bad value.
        """
        if options is None:
            check_option_names(changes)
            return cls(**changes)
        if not isinstance(options, AtariOptions):
            raise TypeError(f"options must be an AtariOptions, got {type(options).__name__}")
        return options.replace(**changes) if changes else options


def check_option_names(names: Any) -> None:
    """``TypeError`` listing the valid options if any of ``names`` is not an option.

    The message starts in Python's own words for a bad keyword (``AtariOptions.__init__() got
    an unexpected keyword argument 'frameskip'``), as libraries that retry without a keyword
    match them: TorchRL's ``GymEnv`` passes ``frameskip=`` and, on that message, drops it and
    repeats each step itself. Any further unknown names follow in parentheses.
    """
    valid = AtariOptions.field_names()
    unknown = sorted(set(names) - set(valid))
    if unknown:
        more = f" (and {', '.join(map(repr, unknown[1:]))})" if len(unknown) > 1 else ""
        raise TypeError(f"AtariOptions.__init__() got an unexpected keyword argument "
                        f"{unknown[0]!r}{more}; valid options: {', '.join(valid)}")
