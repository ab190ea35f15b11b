"""tests/ is on sys.path (rootdir import mode): a folder there named like a package a test
imports would stand in for it, as an empty namespace package, wherever that package is not
installed (CI's default run has no ray or envpool)."""
from __future__ import annotations

from pathlib import Path

# what the tests import and may find missing: the extras and the anchors
OPTIONAL_IMPORTS = {"ray", "envpool", "gym", "jax", "torch", "stable_baselines3", "cv2", "tqdm",
                    "PIL", "tensorboard", "tensorboardX", "hypothesis", "matplotlib", "rliable"}


def test_no_test_folder_shadows_a_package():
    folders = {p.name for p in Path(__file__).parent.iterdir() if p.is_dir()}
    assert not folders & (OPTIONAL_IMPORTS | {"fastatari", "gymnasium", "numpy", "ale_py"})
