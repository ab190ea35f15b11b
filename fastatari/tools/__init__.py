"""Tools around the envs, at the edge of the package: nothing below imports them.

The submodules: ``video`` (side-by-side frames of what the game shows and what the agent sees,
video writers and a vector-env recorder), ``play`` (a game played by a simple policy, the engine
of ``fastatari play``), ``episodes`` (:class:`~fastatari.tools.episodes.EpisodeRecorder`: game
returns and lengths to TensorBoard or CSV). The files they write go through ``fastatari._files``
(never through a planted symbolic link), which the evaluation and the benchmarks share. Importing
this package imports none of them.
"""
