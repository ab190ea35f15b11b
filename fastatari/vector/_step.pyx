"""The synchronous step's own work, compiled: one call before the wait (check and write the
actions, choose each env's op) and one after it (the returned arrays and the batched info).

The vector env's front takes this path for the common step: every env steps or, after an ended
episode under next-step autoreset, resets; no restart awaits its report; the actions are an
int64 array of the right shape and range; and the step left no final observation (same-step
autoreset). Anything else returns ``NOT_COMMON`` or None here, and the front's general path,
in Python, does that step whole, raising its precise errors; the two give the same results.
"""

from libc.stdint cimport int64_t, uint8_t
from libc.string cimport memmove

import numpy as np

cimport numpy as cnp

cnp.import_array()

cdef enum:
    _NOT_COMMON = 0
    _ALL_STEP = 1
    _SOME_RESET = 2

#: :meth:`SyncStep.write_actions`' answers: not the common step; every env steps; some reset.
NOT_COMMON, ALL_STEP, SOME_RESET = _NOT_COMMON, _ALL_STEP, _SOME_RESET

cdef uint8_t OP_STEP = 1, OP_RESET = 2  # messages.Op


cdef class SyncStep:
    """The common synchronous step of ``num_envs`` envs over the shared ``buffers`` columns,
    with the book's ``ended`` and ``restarted`` arrays (``EnvBook.step_columns``).

    ``autoreset``: ``"next_step"`` (an ended env resets at its next step), ``"disabled"`` (an
    ended env must be reset by the caller: the general path raises) or ``"same_step"``.
    ``game_fields``: the names of a finished game's statistics (``info["game"]``);
    ``game_index``: each env's game (``info["game_index"]``), None for one game."""

    cdef Py_ssize_t n
    cdef int64_t num_actions
    cdef int64_t[::1] action
    cdef uint8_t[::1] ended, restarted, game_done, has_final, terminated_v, truncated_v
    cdef uint8_t[::1] ops_v
    cdef readonly object ops
    cdef object obs, reward, terminated, truncated, life_loss, game_key, game_done_array
    cdef object game_index
    cdef tuple fields, game_columns
    cdef bint copy, life_loss_info, track_ended, reset_ended

    def __init__(self, buffers, ended, restarted, field_names, game_key, game_fields,
                 game_index, int64_t num_actions, bint copy, bint life_loss_info,
                 str autoreset):
        self.n = ended.shape[0]
        self.num_actions = num_actions
        self.action = buffers.action
        self.ended = ended.view(np.uint8)
        self.restarted = restarted.view(np.uint8)
        self.game_done_array = buffers.game_done
        self.game_done = buffers.game_done.view(np.uint8)
        self.has_final = buffers.has_final.view(np.uint8)
        self.obs, self.reward = buffers.obs, buffers.reward
        self.terminated, self.truncated = buffers.terminated, buffers.truncated
        self.terminated_v = buffers.terminated.view(np.uint8)
        self.truncated_v = buffers.truncated.view(np.uint8)
        self.life_loss = buffers.life_loss
        self.fields = tuple((name, buffers.info[name]) for name in field_names)
        self.game_key = game_key
        self.game_columns = tuple((name, buffers.game[name]) for name in game_fields)
        self.game_index = game_index
        self.ops = np.zeros(self.n, np.uint8)
        self.ops_v = self.ops
        self.copy, self.life_loss_info = copy, life_loss_info
        self.track_ended = autoreset != "same_step"  # ended envs matter at the next step
        self.reset_ended = autoreset == "next_step"

    def write_actions(self, actions):
        """Check ``actions`` and, for the common step, write them and each env's op
        (:attr:`ops`): ``ALL_STEP`` when every env steps, ``SOME_RESET`` when some reset
        after an ended episode. ``NOT_COMMON`` for anything else (another dtype or shape, an
        action out of range, a restart to report, an ended episode without next-step
        autoreset): the general path then checks and writes the actions itself."""
        cdef Py_ssize_t i, n = self.n
        cdef int64_t a, limit = self.num_actions
        cdef const int64_t[::1] given
        cdef int answer = _ALL_STEP
        if not (isinstance(actions, np.ndarray) and actions.dtype == np.int64
                and actions.ndim == 1 and actions.shape[0] == n):
            return _NOT_COMMON
        given = np.ascontiguousarray(actions)
        with nogil:
            # copied first, then checked: what is checked is what the workers read (another
            # thread may change the caller's array); the general path rewrites it otherwise
            memmove(&self.action[0], &given[0], n * sizeof(int64_t))
            for i in range(n):
                a = self.action[i]
                if a < 0 or a >= limit or self.restarted[i]:
                    answer = _NOT_COMMON
                    break
                if self.ended[i]:
                    if not self.reset_ended:
                        answer = _NOT_COMMON
                        break
                    answer = _SOME_RESET
            if answer == _SOME_RESET:
                for i in range(n):
                    self.ops_v[i] = OP_RESET if self.ended[i] else OP_STEP
        return answer

    def results(self):
        """The step's ``(obs, reward, terminated, truncated, info)``, as the general path
        gives them, or None when only it can (a final observation). Records which envs'
        episodes ended."""
        cdef Py_ssize_t i, n = self.n
        cdef bint common = True, games = False
        with nogil:
            for i in range(n):
                if self.has_final[i]:
                    common = False
                    break
                if self.game_done[i]:
                    games = True
            if common and self.track_ended:
                for i in range(n):
                    self.ended[i] = self.terminated_v[i] | self.truncated_v[i]
        if not common:
            return None
        obs = self.obs.copy() if self.copy else self.obs
        terminated = self.terminated.copy()
        if self.life_loss_info:  # ale-py's: terminated at a life loss, the episode goes on
            np.logical_or(terminated, self.life_loss, out=terminated)
        info = {}
        for name, column in self.fields:
            info[name] = column.copy()
            info["_" + name] = np.ones(n, np.bool_)
        if games:  # a finished game's statistics, zeros for the other envs
            done = self.game_done_array.copy()
            game = {}
            for name, column in self.game_columns:
                game[name] = np.where(done, column, np.zeros((), column.dtype))
                game["_" + name] = done
            info[self.game_key], info["_" + self.game_key] = game, done
        if self.game_index is not None:
            info["game_index"] = self.game_index.copy()
            info["_game_index"] = np.ones(n, np.bool_)
        return obs, self.reward.copy(), terminated, self.truncated.copy(), info
