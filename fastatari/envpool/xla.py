"""``env.xla()`` for :mod:`fastatari.envpool`: EnvPool's ``(handle, recv, send, step)``.

EnvPool registers C++ XLA custom calls; here the same four values sit on JAX's public host
callback, ``jax.experimental.io_callback`` with ``ordered=True``: inside ``jax.jit`` (and
``jax.lax.scan``) each ``send`` and ``recv`` runs the env's own :meth:`send`/:meth:`recv` on the
host, in program order. The handle is threaded through as in EnvPool (``send`` returns it,
``recv`` returns it with the result); it carries no state, only the order.

``recv``'s result has the shape of the env's own ``recv()`` (gymnasium's 5-tuple, or gym's
4-tuple with ``info["TimeLimit.truncated"]`` under gym < 0.26), with ``batch_size`` rows.
JAX is imported on the first call, so the package needs it only for ``xla()``.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Optional, Tuple

import numpy as np

__all__ = ["make_xla"]


def make_xla(env: Any) -> Tuple[np.ndarray, Callable, Callable, Callable]:
    """``handle, recv, send, step`` for ``env`` (an env from :func:`fastatari.envpool.make`).

    Raises
    ------
    ImportError
        Without jax, naming what to install.
    """
    try:
        import jax
        from jax.experimental import io_callback
    except ImportError as error:
        raise ImportError("env.xla() needs JAX: pip install jax (the CPU build is enough: the "
                          "envs run on the host)") from error

    handle = np.frombuffer(id(env).to_bytes(8, sys.byteorder), np.uint8).copy()
    handle_type = jax.ShapeDtypeStruct(handle.shape, handle.dtype)
    result_type = jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype),
                                         env.result_template())

    def host_send(handle: Any, action: Any, env_id: Any) -> np.ndarray:
        env.send(np.asarray(action), None if env_id is None else np.asarray(env_id))
        return np.asarray(handle)

    def host_recv(handle: Any) -> Tuple[np.ndarray, Any]:
        pending = env.pending
        if pending < env.batch_size:
            raise RuntimeError(f"xla recv needs batch_size={env.batch_size} envs in flight, "
                               f"found {pending}: send() them first")
        return np.asarray(handle), env.recv()

    def send(handle: Any, action: Any, env_id: Optional[Any] = None) -> Any:
        return io_callback(host_send, handle_type, handle, action, env_id, ordered=True)

    def recv(handle: Any) -> Tuple[Any, Any]:
        return io_callback(host_recv, (handle_type, result_type), handle, ordered=True)

    def step(handle: Any, action: Any, env_id: Optional[Any] = None) -> Tuple[Any, Any]:
        return recv(send(handle, action, env_id))

    return handle, recv, send, step
