"""The diagnostics' tests: their arithmetic on made-up timings, their registry and command line,
and the stand-in game through a real worker pool. Run by ``pytest`` from the repository root
(pyproject's ``testpaths``)."""
