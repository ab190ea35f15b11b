"""The API reference cannot miss a public name: every name the public modules export has a
docstring, and the reference's pages document each of those modules (``automodule`` with its
members, so each exported name gets its entry)."""
from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The public modules and the reference page that documents each.
PUBLIC = {
    "fastatari": "fastatari.md",
    "fastatari.vector": "vector.md",
    "fastatari.envpool": "envpool.md",
    "fastatari.ray": "ray.md",
    "fastatari.evaluation.evaluate": "evaluation.md",
    "fastatari.evaluation.scores": "evaluation.md",
    "fastatari.evaluation.suites": "evaluation.md",
    "fastatari.tools.video": "tools.md",
    "fastatari.tools.episodes": "tools.md",
    "fastatari.kernels": "kernels.md",
}


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_every_exported_name_has_a_docstring(name):
    if name == "fastatari.ray":
        pytest.importorskip("ray")
    module = importlib.import_module(name)
    missing = []
    for export in module.__all__:
        value = getattr(module, export)
        if (inspect.isclass(value) or inspect.isroutine(value) or inspect.ismodule(value)) \
                and not (inspect.getdoc(value) or "").strip():
            missing.append(export)
    assert missing == [], f"{name}: no docstring for {missing}"


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_the_reference_documents_the_module(name):
    page = ROOT / "docs" / "api" / PUBLIC[name]
    if not page.exists():
        pytest.skip("no docs/ here (a copy of tests/ only)")
    text = page.read_text()
    if name == "fastatari":  # the top level: each of its names by hand
        module = importlib.import_module(name)
        documented = set(re.findall(r"\.\. auto\w+:: fastatari\.(\w+)", text))
        assert set(module.__all__) - {"kernels", "scores", "suites", "__version__"} <= documented
    else:
        assert re.search(rf"\.\. automodule:: {re.escape(name)}\n(   :\S.*\n)*   :members:",
                         text), f"{page.name} does not document {name}'s members"
