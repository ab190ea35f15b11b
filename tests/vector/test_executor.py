"""fastatari.vector.config and fastatari.vector.executor: the vector keywords declared once, and
the rules every executor shares (restart seeds, restart policy), apart from any process."""
from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import fastatari
from fastatari.vector.config import VECTOR_KEYWORDS, VectorConfig, WorkerSettings, split_keywords
from fastatari.vector.executor import RestartPolicy, SeedBook
from fastatari.vector.plan import plan_vec


def test_config_defaults_and_checks():
    config = VectorConfig.checked(8)
    assert (config.batch_size, config.copy, config.timeout) == (8, True, 120.0)
    assert config.autoreset_mode is AutoresetMode.NEXT_STEP and config.next_step
    assert not config.same_step and config.max_restarts is None
    assert VectorConfig.checked(3, autoreset_mode="SameStep").same_step
    for bad, match in [({"batch_size": 0}, "batch_size"),
                       ({"copy": 1}, "copy"), ({"timeout": -1}, "timeout"),
                       ({"max_restarts": -1}, "max_restarts"),
                       ({"max_crashes_without_progress": 0}, "max_crashes"),
                       ({"render_mode": "human"}, "render_mode"),
                       ({"autoreset_mode": "sometimes"}, "autoreset_mode")]:
        with pytest.raises(ValueError, match=match):
            VectorConfig.checked(8, **bad)
    with pytest.raises(TypeError):
        VectorConfig.checked(8, frame_skip=4)  # an option, not a vector keyword
    with pytest.raises(TypeError):
        VectorConfig.checked(8, num_workers=2)  # a worker setting, checked by the pool


def test_worker_settings_defaults_and_checks():
    workers = WorkerSettings.checked(8, num_workers=2)
    assert (workers.num_workers, workers.cpus, workers.balance) == (2, None, True)
    assert WorkerSettings.checked(1).num_workers == 1  # never more workers than envs
    for bad, match in [({"num_workers": 9}, "num_workers"), ({"num_workers": 0}, "num_workers"),
                       ({"balance": "yes"}, "balance")]:
        with pytest.raises(ValueError, match=match):
            WorkerSettings.checked(8, **bad)


def test_keywords_split_once_for_every_front_end():
    front, workers, options = split_keywords({"num_workers": 2, "frame_skip": 3,
                                              "copy": False, "noop_max": 0, "cpus": None})
    assert front == {"copy": False} and workers == {"num_workers": 2, "cpus": None}
    assert options == {"frame_skip": 3, "noop_max": 0}
    assert set(VECTOR_KEYWORDS) == ({f.name for f in dataclasses.fields(VectorConfig)}
                                    | {f.name for f in dataclasses.fields(WorkerSettings)})
    # make_vec and plan_vec re-declare none of them: they come through **keywords
    for function in (fastatari.make_vec, plan_vec):
        assert not set(inspect.signature(function).parameters) & set(VECTOR_KEYWORDS)


def test_restart_seeds_derive_from_last_seed_and_restart_count():
    book = SeedBook([10, 11, 12])  # the envs' ids in the whole vector env
    assert book.restart_resets([0, 1], restarts=1) == []  # no game exists before a reset
    book.record([(0, 5), (1, None), (2, 7)])
    got = book.restart_resets([0, 1, 2], restarts=3)
    derived = [int(np.random.SeedSequence([base, 3]).generate_state(1)[0])
               for base in (5, 11, 7)]  # env 1 never had a seed: its id is the base
    assert got == list(zip([0, 1, 2], derived, strict=True))
    assert book.restart_resets([0], restarts=4) != got[:1]  # another restart, another seed
    book.record([(0, None)])  # an unseeded reset keeps the last seed
    assert book.restart_resets([0], restarts=3) == got[:1]


def test_restart_policy():
    policy = RestartPolicy(2, max_crashes_without_progress=2, max_restarts=None)
    assert policy.died(0) is None
    policy.progress(0)
    assert policy.died(0) is None and policy.died(1) is None
    assert "2 times in a row without progress" in policy.died(0)
    assert policy.restarts == 4
    capped = RestartPolicy(1, max_crashes_without_progress=10, max_restarts=1)
    assert capped.died(0) is None
    assert "max_restarts=1" in capped.died(0)


