"""The game layer: one ALE game driven directly, with gymnasium's exact semantics.

``game`` (:class:`~fastatari.core.game.AtariGame`: the one frame-skip loop, the frame
pipeline), ``options`` (:class:`~fastatari.AtariOptions`, validated once), ``schema`` (the
per-env result and info fields, declared once), ``validate`` (the argument checks every front
end shares), ``romfacts`` (each ROM's action sets, modes, difficulties and screen size, and the
options check against them), ``games`` (game names to ROM ids), ``palette`` (palette tables).
Everything above (the envs, the vector env's workers, the front ends) builds on these; they
import nothing of fastatari's above them. A worker process imports this layer and the compiled
kernels only.
"""
