"""The ``envs`` section: one env's agent steps/s, ``steps`` per round, random actions drawn
in advance: the raw-ALE ceiling (``FRAME_SKIP`` bare ``ale.act`` calls per step, no
preprocessing), ``fastatari.AtariEnv`` and gymnasium's reference pipeline. Ratios to the
ceiling are per round, against the same round's ceiling, median.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from fastatari.bench.harness import (
    RATE_HEADER,
    BenchConfig,
    Contender,
    Contenders,
    Rate,
    Section,
    bare_loop,
    draw_actions,
    markdown_table,
    rate_rows,
    rates,
)
from fastatari.bench.systems import gymnasium_reference_env

CEILING = "raw ALE (4× ale.act)"


@dataclass
class EnvsReport:
    rates: list[Rate] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # system -> why it did not run


def env_contender(name: str, env, config: BenchConfig, note: str) -> Contender:
    """Random actions through a gymnasium.Env, resetting when an episode ends."""
    rows = draw_actions(config.seed, int(env.action_space.n), config.rounds,
                        config.steps).tolist()
    env.reset(seed=config.seed)

    def run(round_index: int) -> None:
        for action in rows[round_index]:
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                env.reset()

    return Contender(name, config.steps, run, note=note, close=env.close)


def fastatari_env(config: BenchConfig):
    import fastatari

    return fastatari.AtariEnv(config.game, repeat_action_probability=0.0)


def env_contenders(config: BenchConfig) -> Contenders:
    skipped: dict[str, str] = {}
    contenders = [Contender(CEILING, config.steps,
                            bare_loop(config.game, config.seed, config.rounds, config.steps),
                            note="the emulation ceiling, one core, no preprocessing")]
    makers = [
        ("fastatari AtariEnv", fastatari_env, "fastatari.AtariEnv, fused kernels"),
        ("gymnasium AtariPreprocessing + FrameStack",
         lambda config: gymnasium_reference_env(config.rom), "the reference pipeline, 1 env"),
    ]
    for name, make, note in makers:
        try:
            contenders.append(env_contender(name, make(config), config, note))
        except ImportError as error:  # e.g. OpenCV missing for gymnasium's pipeline
            skipped[name] = f"{type(error).__name__}: {error}"
    return Contenders(contenders, lambda seconds: EnvsReport(
        rates(contenders, seconds, CEILING), skipped))


def markdown_envs(report: EnvsReport, config: dict) -> str:
    rows = rate_rows(report.rates) + [[name, "—", "—", "—", f"skipped: {reason}"]
                                      for name, reason in report.skipped.items()]
    return (f"{config['steps']:,} agent steps per round per system; ratios are per-round ratios "
            "to the ceiling of the same round, median.\n\n" + markdown_table(RATE_HEADER, rows))


SECTION = Section(
    "envs", "one env's agent steps/s: fastatari.AtariEnv and gymnasium's reference pipeline "
    "against the raw-ALE ceiling", markdown_envs, contenders=env_contenders)
