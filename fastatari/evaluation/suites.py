"""Named lists of games for multi-task Atari: ``make_vec(suites.ATARI_57, 57, ...)``.

Each list holds ale-py ROM ids (:func:`fastatari.core.games.game_ids` spells them).
"""
from __future__ import annotations

from typing import Tuple

__all__ = ["ATARI_5", "ATARI_10", "ATARI_57", "ATARI_100K"]

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

#: Atari-10: Atari-5 and five more games, for a closer estimate of the Atari-57 median (Aitchison,
#: Sweetser and Hutter, ICML 2023, above). The list is the first author's
#: ``AtariScoreNormalizer.SUBSETS["Atari_10"]`` in maitchison/PPO, tools/plot_util.py (commit
#: d3e32282); the paper's repository (maitchison/Atari-5) computes the subsets without listing
#: them. The last five are ATARI_5.
ATARI_10: Tuple[str, ...] = ("amidar", "bowling", "frostbite", "kung_fu_master", "riverraid",
                             "battle_zone", "double_dunk", "name_this_game", "phoenix", "qbert")

#: Atari 100k: the 26 games of Kaiser et al. 2019, "Model-Based Reinforcement Learning for Atari"
#: (SimPLe), on which data-efficient agents train for 100k agent steps (400k frames), as
#: Dopamine's dopamine/labs/atari_100k runs DER, DrQ, OTRainbow and SPR. The list is
#: ATARI_100K_GAMES in google-research/rliable, deep_rl_precipice_colab.ipynb (commit 3ccd9f4d);
#: Dopamine's configs name one game at a time (gin's create_atari_environment.game_name).
ATARI_100K: Tuple[str, ...] = (
    "alien", "amidar", "assault", "asterix", "bank_heist", "battle_zone", "boxing", "breakout",
    "chopper_command", "crazy_climber", "demon_attack", "freeway", "frostbite", "gopher", "hero",
    "jamesbond", "kangaroo", "krull", "kung_fu_master", "ms_pacman", "pong", "private_eye",
    "qbert", "road_runner", "seaquest", "up_n_down",
)
