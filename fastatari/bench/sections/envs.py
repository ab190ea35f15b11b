"""The ``envs`` section: whole agent steps of one env, against the raw-ALE ceiling.

Contenders, each ``steps`` agent steps per round with random actions drawn in advance from a
seeded generator: the ceiling (a bare loop of ``FRAME_SKIP`` ``ale.act`` calls per agent step,
no preprocessing), ``fastatari.AtariEnv``, and gymnasium's reference pipeline
(``AtariPreprocessing`` + ``FrameStackObservation`` over ale_py's v5 env). Timed round-robin
with the other sections' contenders (the ``kernels`` section's); ratios to the ceiling are per
round, against the same round's ceiling, median.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from fastatari.bench.harness import (
    RATE_HEADER,
    BenchConfig,
    Contender,
    Contenders,
    Section,
    bare_loop,
    draw_actions,
    markdown_table,
    rate,
    rate_rows,
)
from fastatari.bench.systems import fastatari_env, gymnasium_env

CEILING = "raw ALE (4× ale.act)"


@dataclass
class EnvResult:
    system: str
    steps_per_s: float
    frames_per_s: float
    ratio_to_ceiling: float
    note: str
    rounds_steps_per_s: list[float]  # one per round, to judge the noise


@dataclass
class EnvsReport:
    envs: list[EnvResult] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # system -> why it did not run


def ceiling_contender(config: BenchConfig) -> Contender:
    run = bare_loop(config.game, config.seed, config.rounds, config.steps)
    return Contender("envs", CEILING, config.steps, run,
                     note="the emulation ceiling, one core, no preprocessing")


def env_contender(name: str, env, config: BenchConfig, note: str) -> Contender:
    """Random actions through a gymnasium.Env, resetting when an episode ends."""
    rows = draw_actions(config.seed, int(env.action_space.n), config.rounds, config.steps)
    env.reset(seed=config.seed)

    def run(round_index: int) -> None:
        for action in rows[round_index]:
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                env.reset()

    return Contender("envs", name, config.steps, run, note=note, close=env.close)


def env_contenders(config: BenchConfig) -> Contenders:
    skipped: dict[str, str] = {}
    contenders = [ceiling_contender(config)]
    makers = [
        ("fastatari AtariEnv", fastatari_env, "fastatari.AtariEnv, fused kernels"),
        ("gymnasium AtariPreprocessing + FrameStack", gymnasium_env,
         "the reference pipeline, 1 env"),
    ]
    for name, make, note in makers:
        try:
            env = make(config)
        except (ImportError, AttributeError) as error:  # fastatari.AtariEnv may not exist yet
            skipped[name] = f"{type(error).__name__}: {error}"
            continue
        contenders.append(env_contender(name, env, config, note))
    return Contenders(contenders, lambda seconds: env_results(contenders, seconds, skipped))


def env_results(contenders: list[Contender], seconds: dict[str, list[float]],
                skipped: dict[str, str]) -> EnvsReport:
    ceiling = seconds.get(CEILING)
    results = []
    for contender in contenders:
        r = rate(seconds[contender.name], ceiling)
        results.append(EnvResult(contender.name, r.steps_per_s, r.frames_per_s,
                                 r.ratio_to_ceiling, contender.note, r.rounds_steps_per_s))
    return EnvsReport(results, skipped)


def env_table(report: EnvsReport) -> str:
    rows = rate_rows(report.envs)
    rows += [[name, "—", "—", "—", f"skipped: {reason}"] for name, reason in report.skipped.items()]
    return markdown_table(RATE_HEADER, rows)


def markdown_envs(report: EnvsReport, config: dict) -> str:
    return (f"{config['steps']:,} agent steps per round per system; ratios are per-round ratios "
            "to the ceiling of the same round, median.\n\n" + env_table(report))


SECTION = Section(
    "envs", "one env's agent steps/s: fastatari.AtariEnv and gymnasium's reference pipeline "
    "against the raw-ALE ceiling", markdown_envs, contenders=env_contenders,
    # the report's keys "envs" and "skipped" (the systems that could not be built)
    json=lambda report: asdict(report or EnvsReport()))
