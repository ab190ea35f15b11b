"""What one env step produces, declared once.

Every other place derives from these tables: the game layer fills an info dict with
:data:`INFO_FIELDS`, the vector env's shared-memory layout gets one column per field (and one
``final_`` column for same-step autoreset), the workers write the columns, the trainer builds
gymnasium's batched ``info`` from them, and the SB3 and EnvPool front ends read the keys listed
here. Adding an info field is one line below (plus the game code that computes it).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Tuple

if TYPE_CHECKING:
    from fastatari.core.options import AtariOptions

__all__ = ["GAME_FIELDS", "GAME_KEY", "INFO_FIELDS", "RAM_SIZE", "STATE_FIELDS", "STEP_FIELDS",
           "Field", "When", "info_fields"]


class When(enum.Enum):
    """When an info key is present."""

    ALWAYS = "always"
    CLIP_REWARDS = "clip_rewards"  # with AtariOptions.clip_rewards
    EPISODIC_LIFE = "episodic_life"  # with AtariOptions.episodic_life
    RAM_INFO = "ram_info"  # with AtariOptions.ram_info


@dataclass(frozen=True)
class Field:
    """One per-env value: its name, numpy dtype, per-env shape (``()`` for a scalar) and (for
    info keys) when it is present."""

    name: str
    dtype: str
    doc: str
    when: When = When.ALWAYS
    state: bool = False  # describes the game's state (a reset changes it), not the step
    shape: Tuple[int, ...] = ()

    def present(self, options: "AtariOptions") -> bool:
        """Whether this key is in the info of a game with ``options``."""
        return self.when is When.ALWAYS or bool(getattr(options, self.when.value))


#: The step's return values besides the observation.
STEP_FIELDS: Tuple[Field, ...] = (
    Field("reward", "float64", "the step's reward (its sign with clip_rewards)"),
    Field("terminated", "bool", "the episode ended (game over, or a life lost when asked)"),
    Field("truncated", "bool", "the episode was cut (frame limit, or a worker restart)"),
)

#: Bytes of RAM in the Atari 2600.
RAM_SIZE = 128

#: The per-env info keys, after every step and reset. ``lives`` is int64 as in ale-py's env.
INFO_FIELDS: Tuple[Field, ...] = (
    Field("lives", "int64", "lives left", state=True),
    Field("episode_frame_number", "int64", "frames since the game's reset, ALE's count",
          state=True),
    Field("frame_number", "int64", "frames since the ROM was loaded, ALE's count", state=True),
    Field("raw_reward", "float64", "the reward before clipping", When.CLIP_REWARDS),
    Field("game_over", "bool", "the game itself ended (not only a life)", When.EPISODIC_LIFE),
    Field("ram", "uint8", "the console's RAM", When.RAM_INFO, state=True, shape=(RAM_SIZE,)),
)

#: The info key of a finished game's statistics. Not ``"episode"``: that key is gymnasium's
#: ``RecordEpisodeStatistics``' (which refuses to run over an env that already sets it) and
#: counts episodes as the env ends them; a game spans every life, also when life loss ends
#: episodes (``episodic_life``, ``terminal_on_life_loss``).
GAME_KEY = "game"

#: ``info["game"]`` when a game ends, with RecordEpisodeStatistics' field names.
GAME_FIELDS: Tuple[Field, ...] = (
    Field("r", "float64", "the game's raw return"),
    Field("l", "int64", "the game's length in agent steps"),
    Field("t", "float64", "seconds the game took"),
)


#: After a same-step autoreset these info keys describe the new episode; the others keep
#: describing the step that ended the old one (its full info is in ``final_info``).
STATE_FIELDS: Tuple[Field, ...] = tuple(f for f in INFO_FIELDS if f.state)


def info_fields(options: "AtariOptions") -> Tuple[Field, ...]:
    """The info keys a game with ``options`` reports, in declaration order."""
    return tuple(f for f in INFO_FIELDS if f.present(options))
