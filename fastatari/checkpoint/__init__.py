"""Resume a run exactly: one checkpoint folder for the vector env, the replay memory, NumPy's
generators and the caller's arrays, written incrementally and atomically, in a format that runs
no code on load.

::

    from fastatari import checkpoint

    checkpoint.save("ckpt", envs=envs, memory=rb, rngs={"policy": rng},
                    arrays={"obs": obs, "step": np.array(global_step)})
    torch.save({"q": q_network.state_dict(), "opt": optimizer.state_dict()}, "ckpt/torch.pt")
    ...
    arrays = checkpoint.load("ckpt", envs=envs, memory=rb, rngs={"policy": rng})
    q_network.load_state_dict(torch.load("ckpt/torch.pt", weights_only=True)["q"])

What it holds: every env's snapshot (``envs.state_dict()``: the same exactness), the memory's
state (:class:`~fastatari.replay.ReplayMemory`, :class:`~fastatari.replay.ReplayBuffer`,
:class:`~fastatari.replay.PrioritizedReplayBuffer`: their ``state_dict()``), each generator's
``bit_generator.state`` and the arrays, as a JSON manifest and raw files
(:mod:`fastatari.checkpoint.files`). A save after the first into the same folder writes only
what changed (the frames added since, the arrays that differ); a process killed during a save
leaves the previous checkpoint whole; a damaged or foreign one is refused, naming the file,
before anything changes. Torch's states are the caller's: ``torch.save`` beside it, loaded with
``weights_only=True`` (which runs no code either).
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

import numpy as np

from fastatari.checkpoint import files, tree
from fastatari.checkpoint.files import CheckpointError

__all__ = ["CheckpointError", "load", "memory_args", "save"]


def save(folder: Any, *, envs: Any = None, memory: Any = None,
         rngs: Optional[Mapping[str, Any]] = None,
         arrays: Optional[Mapping[str, Any]] = None) -> Dict[str, int]:
    """Write a checkpoint of what is given into ``folder`` (made if needed), over the one
    there: ``envs`` (a vector env, idle), ``memory`` (a replay memory), ``rngs`` (NumPy
    ``Generator`` or ``RandomState`` objects by name, or ``np.random`` for its global one) and
    ``arrays`` (NumPy arrays, numbers, or nested dicts and lists of them, by name). Returns
    the bytes and files written. Nothing is changed in the objects."""
    state: Dict[str, Any] = {}
    if envs is not None:
        state["envs"] = envs.state_dict()
    if memory is not None:
        state["memory"] = _state_dict(memory)
        if callable(getattr(memory, "init_args", None)):  # what ``open`` remakes it from
            state["memory_args"] = {"class": type(memory).__name__, **memory.init_args()}
    if rngs:
        state["rngs"] = {name: _get_state(name, rng) for name, rng in rngs.items()}
    if arrays:
        state["arrays"] = {str(name): value for name, value in arrays.items()}
    document, data = tree.encode(state)
    return files.write(folder, document, data)


def load(folder: Any, *, envs: Any = None, memory: Any = None,
         rngs: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """Put the checkpoint in ``folder`` back into the objects given (each made as the saved
    one was: the same games and options, the same memory shape) and return its arrays.

    Every file is read and checked first (:class:`CheckpointError` naming a damaged, truncated
    or foreign one); then what was asked for but not saved is refused (``ValueError``); then
    the memory and the envs take their states, each checked whole before it changes, and the
    generators theirs."""
    document, data = files.read(folder)
    try:
        state = tree.decode(document, data)
    except (TypeError, ValueError, KeyError) as error:
        raise CheckpointError(f"{folder}: a damaged checkpoint document ({error!r})") from None
    asked = {"envs": envs, "memory": memory, "rngs": rngs}
    missing = [name for name, given in asked.items() if given is not None and name not in state]
    if missing:
        raise ValueError(f"{folder}: the checkpoint holds no {', '.join(missing)} "
                         f"(it holds {', '.join(sorted(state)) or 'nothing'})")
    if rngs is not None:
        saved = state["rngs"]
        if set(rngs) != set(saved):
            raise ValueError(f"{folder}: generators {sorted(saved)} saved, "
                             f"{sorted(rngs)} given")
        for name, rng in rngs.items():  # each state checked on a spare generator first
            _set_state(name, _spare(name, rng), saved[name])
    if memory is not None:
        memory.load_state_dict(state["memory"])
    if envs is not None:
        envs.load_state_dict(state["envs"])
    if rngs is not None:
        for name, rng in rngs.items():
            _set_state(name, rng, state["rngs"][name])
    return dict(state.get("arrays", {}))


def memory_args(folder: Any, kind: str) -> Dict[str, Any]:
    """The arguments the memory saved in ``folder`` was made with (a replay memory's
    ``init_args``), checked to be those of a ``kind`` (its class's name); only the manifest is
    read. :class:`CheckpointError` when there are none or they are another class's."""
    document = files.manifest(folder)["document"]
    args = document.get("memory_args") if isinstance(document, dict) else None
    if not isinstance(args, dict) or "class" not in args:
        raise CheckpointError(f"{folder}: the checkpoint holds no replay memory to open")
    args = dict(tree.decode(args, {}))
    saved = args.pop("class")
    if saved != kind:
        raise CheckpointError(f"{folder}: the checkpoint holds a {saved}, not a {kind}")
    return args


def _get_state(name: str, rng: Any) -> Any:
    """The state of a ``Generator``, a ``RandomState``, or ``np.random`` itself (its global
    legacy generator, which CleanRL-style code draws from)."""
    if isinstance(rng, np.random.Generator):
        return rng.bit_generator.state
    if isinstance(rng, np.random.RandomState) or rng is np.random:
        return rng.get_state(legacy=False)
    raise TypeError(f"rngs[{name!r}] must be a numpy Generator, a RandomState or np.random, "
                    f"got {type(rng).__name__}")


def _spare(name: str, rng: Any) -> Any:
    """A fresh generator of ``rng``'s kind, to try a state on."""
    _get_state(name, rng)  # (its kind checked)
    if isinstance(rng, np.random.Generator):
        return np.random.Generator(type(rng.bit_generator)())
    return np.random.RandomState()


def _set_state(name: str, rng: Any, state: Any) -> None:
    try:
        if isinstance(rng, np.random.Generator):
            rng.bit_generator.state = state
        else:
            rng.set_state(state)
    except (TypeError, ValueError, KeyError) as error:
        raise ValueError(f"the saved state of rngs[{name!r}] does not fit it: {error}") from None


def _state_dict(memory: Any) -> Dict[str, Any]:
    if not callable(getattr(memory, "state_dict", None)):
        raise TypeError(f"memory must be a fastatari replay memory (with state_dict()), got "
                        f"{type(memory).__name__}")
    return memory.state_dict(pieces=True)  # its frames as views: written, never copied
