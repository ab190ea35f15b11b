"""Named lists of games for multi-task Atari: ``make_vec(suites.ATARI_57, 57, ...)``.

Each list holds ale-py ROM ids (:func:`fastatari.core.games.game_ids` spells them).
"""
from __future__ import annotations

from typing import Tuple

__all__ = ["ATARI_5", "ATARI_57"]

#: The 57 games of the Atari benchmark as used by DQN's successors and Agent57 (Badia et al.,
#: "Agent57: Outperforming the Atari Human Benchmark", ICML 2020, appendix table of games).
ATARI_57: Tuple[str, ...] = (
    "alien", "amidar", "assault", "asterix", "asteroids", "atlantis", "bank_heist",
    "battle_zone", "beam_rider", "berzerk", "bowling", "boxing", "breakout", "centipede",
    "chopper_command", "crazy_climber", "defender", "demon_attack", "double_dunk", "enduro",
    "fishing_derby", "freeway", "frostbite", "gopher", "gravitar", "hero", "ice_hockey",
    "jamesbond", "kangaroo", "krull", "kung_fu_master", "montezuma_revenge", "ms_pacman",
    "name_this_game", "phoenix", "pitfall", "pong", "private_eye", "qbert", "riverraid",
    "road_runner", "robotank", "seaquest", "skiing", "solaris", "space_invaders", "star_gunner",
    "surround", "tennis", "time_pilot", "tutankham", "up_n_down", "venture", "video_pinball",
    "wizard_of_wor", "yars_revenge", "zaxxon",
)

#: Atari-5: the five games whose scores best predict the Atari-57 median (Aitchison, Sweetser
#: and Hutter, "Atari-5: Distilling the Arcade Learning Environment down to Five Games",
#: ICML 2023).
ATARI_5: Tuple[str, ...] = ("battle_zone", "double_dunk", "name_this_game", "phoenix", "qbert")
