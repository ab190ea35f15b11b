"""Named evaluation protocols: the options of a paper's setting, read from its source.

``make_vec(games, n, protocol="machado2018")`` (also :class:`~fastatari.AtariEnv` and
``fastatari.ray.make_vec``) sets every option the protocol fixes; keywords given beside it
override it, and ``envs.options`` shows the result. A protocol has a training variant (its
name) and, where they differ, an evaluation variant (``"<name>:eval"``): life loss and reward
clipping are training-time devices in DQN and Atari-100k, not part of the score.

Options a protocol does not name keep fastatari's defaults, which are gymnasium's
``AtariPreprocessing`` ones (84x84 gray, max-pool, 4 stacked frames). Each value's source is in
:data:`SOURCES`, and the README's table lists them all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Mapping, Tuple

__all__ = ["PROTOCOLS", "Protocol", "apply_protocol", "protocol_options"]


@dataclass(frozen=True)
class Protocol:
    """A paper's setting: ``train``, the options while training; ``evaluate``, what changes
    for evaluation; ``sources``, where each value is written; ``differences``, what fastatari
    cannot set as the source does."""

    name: str
    title: str
    train: Mapping[str, Any]
    evaluate: Mapping[str, Any]
    sources: Mapping[str, str]
    differences: Tuple[str, ...] = ()

    def options(self, evaluation: bool = False) -> Dict[str, Any]:
        return {**self.train, **self.evaluate} if evaluation else dict(self.train)


_NATURE = "Mnih et al. 2015, Nature 518"
_DOPAMINE = "google/dopamine"

PROTOCOLS: Dict[str, Protocol] = {p.name: p for p in (
    Protocol(
        "dqn_nature", "DQN (Mnih et al. 2015, Nature)",
        train=dict(frame_skip=4, maxpool=True, grayscale_obs=True, screen_size=84,
                   stack_size=4, noop_max=30, repeat_action_probability=0.0,
                   full_action_space=False, episodic_life=True, clip_rewards=True),
        evaluate=dict(episodic_life=False, clip_rewards=False,
                      max_num_frames_per_episode=18_000),
        sources=dict(
            frame_skip=f"{_NATURE}, Methods 'Training details' and Extended Data Table 1 "
                       "(action repeat 4)",
            maxpool=f"{_NATURE}, Methods 'Preprocessing' (maximum over the frame and the "
                    "previous one)",
            grayscale_obs=f"{_NATURE}, Methods 'Preprocessing' (luminance)",
            screen_size=f"{_NATURE}, Methods 'Preprocessing' (84x84)",
            stack_size=f"{_NATURE}, Extended Data Table 1 (agent history length 4)",
            noop_max=f"{_NATURE}, Extended Data Table 1 (no-op max 30; the unit is not "
                     "stated: fastatari counts frames, as gymnasium's AtariPreprocessing)",
            repeat_action_probability="sticky actions came later (Machado et al. 2018): none",
            full_action_space=f"{_NATURE}, Methods 'Model architecture' (the game's actions, "
                              "between 4 and 18)",
            episodic_life=f"{_NATURE}, Methods 'Training details' (the lives counter marks "
                          "the end of an episode during training only)",
            clip_rewards=f"{_NATURE}, Methods 'Training details' (rewards clipped to -1, 0, "
                         "1 in training)",
            max_num_frames_per_episode=f"{_NATURE}, Methods 'Evaluation procedure' (episodes "
                                       "of up to 5 min: 18,000 frames at 60 Hz); training's "
                                       "cap is not stated (fastatari's default, 108,000)"),
        differences=("noop_max: the paper does not say whether its 30 no-ops are frames or "
                     "agent steps",)),
    Protocol(
        "machado2018", "Machado et al. 2018, 'Revisiting the ALE' (ALE v5)",
        train=dict(frame_skip=4, repeat_action_probability=0.25, full_action_space=False,
                   max_num_frames_per_episode=108_000, noop_max=0,
                   terminal_on_life_loss=False, episodic_life=False, clip_rewards=False),
        evaluate={},
        sources=dict(
            frame_skip="ale-py registration.py, ALE/<Game>-v5 (frameskip=4)",
            repeat_action_probability="Machado et al. 2018, JAIR 61 (sticky actions, 0.25); "
                                      "ale-py registration.py, v5",
            full_action_space="ale-py registration.py, v5 (the minimal action set)",
            max_num_frames_per_episode="ale-py registration.py, v5 (108,000 frames: 30 min)",
            noop_max="ale-py's v5 envs: no no-op starts (sticky actions are the randomness)",
            terminal_on_life_loss="Machado et al. 2018 (no loss-of-life signal); gymnasium "
                                  "atari_preprocessing.py's docstring",
            episodic_life="as terminal_on_life_loss",
            clip_rewards="scores are raw returns")),
    Protocol(
        "atari100k", "Atari-100k (Kaiser et al. 2019), as Dopamine's DER.gin runs it",
        train=dict(frame_skip=4, maxpool=True, grayscale_obs=True, screen_size=84,
                   stack_size=4, repeat_action_probability=0.0, full_action_space=False,
                   max_num_frames_per_episode=108_000, noop_max=30, life_loss_info=True,
                   clip_rewards=True),
        evaluate=dict(life_loss_info=False, clip_rewards=False),
        sources=dict(
            frame_skip=f"{_DOPAMINE} dopamine/discrete_domains/atari_lib.py (frame_skip=4)",
            maxpool=f"{_DOPAMINE} atari_lib.py (max over the last two frames)",
            grayscale_obs=f"{_DOPAMINE} atari_lib.py (ALE grayscale)",
            screen_size=f"{_DOPAMINE} atari_lib.py (cv2.INTER_AREA to 84)",
            stack_size=f"{_DOPAMINE} atari_lib.py (NATURE_DQN_STACK_SIZE = 4)",
            repeat_action_probability=f"{_DOPAMINE} labs/atari_100k/configs/DER.gin "
                                      "(sticky_actions = False)",
            full_action_space=f"{_DOPAMINE} atari_lib.py (the minimal set)",
            max_num_frames_per_episode=f"{_DOPAMINE} DER.gin (max_steps_per_episode = "
                                       "27000 agent steps: 108,000 frames)",
            noop_max=f"{_DOPAMINE} labs/atari_100k/atari_100k_runner.py (0-29 no-op agent "
                     "steps at each reset)",
            life_loss_info=f"{_DOPAMINE} DER.gin (terminal_on_life_loss = True: terminal "
                           "for the learner, the game goes on)",
            clip_rewards=f"{_DOPAMINE} run_experiment.py (rewards clipped for the learner; "
                         "returns stay raw)"),
        differences=("noop_max: Dopamine's runner plays 0-29 no-op agent steps (4 frames each) "
                     "at a reset; fastatari plays 1-30 no-op frames",
                     "life_loss_info is a vector-env option: AtariEnv takes the evaluation "
                     "variant only")),
)}


def protocol_options(protocol: str) -> Dict[str, Any]:
    """The options of ``protocol``: ``"<name>"`` (training) or ``"<name>:eval"``.

    Raises ``ValueError`` naming the protocols for an unknown name or variant.
    """
    if not isinstance(protocol, str):
        raise TypeError(f"protocol must be a str, got {type(protocol).__name__}")
    name, _, variant = protocol.partition(":")
    found = PROTOCOLS.get(name)
    if found is None or variant not in ("", "eval", "train"):
        names = ", ".join(f"{n!r}, '{n}:eval'" for n in PROTOCOLS)
        raise ValueError(f"unknown protocol {protocol!r}; the protocols: {names}")
    return found.options(evaluation=variant == "eval")


def apply_protocol(keywords: Dict[str, Any]) -> Dict[str, Any]:
    """``keywords`` with a ``protocol`` keyword replaced by its options; the other keywords
    override the protocol's.

    ``TypeError`` for ``protocol`` beside an ``options=AtariOptions(...)``: an AtariOptions
    holds every option (its defaults too), so neither could override the other without
    dropping what the caller set. Pass one, or build the options from the protocol:
    ``AtariOptions(**{**protocol_options(name), "frame_skip": 2})``.
    """
    if "protocol" not in keywords:
        return keywords
    rest = dict(keywords)
    protocol = rest.pop("protocol")
    if rest.get("options") is not None:
        raise TypeError(f"protocol={protocol!r} and options=AtariOptions(...) cannot be "
                        f"combined (the options hold every setting, defaults included): pass "
                        f"the protocol with option keywords (protocol={protocol!r}, "
                        f"frame_skip=...), or options built from it: AtariOptions(**{{**"
                        f"protocol_options({protocol!r}), ...}})")
    return {**protocol_options(protocol), **rest}
