# The per-env codes that the shared memory, the book and the step share, declared once: what the
# trainer asks of an env (its op word; messages.Op, which reads them from _wait.OPS) and where
# its step is (_book.Phase).

cdef enum:
    OP_IDLE = 0
    OP_STEP = 1
    OP_RESET = 2

cdef enum:
    PHASE_IDLE = 0
    PHASE_IN_FLIGHT = 1
    PHASE_ANSWERED = 2


cdef inline unsigned char next_op(unsigned char ended) noexcept nogil:
    """The op of an env's next step: a reset after an ended episode (the autoreset), else a
    step (the book's rule: ``EnvBook.mark_sent``)."""
    return OP_RESET if ended else OP_STEP
