"""The package as a user gets it: the wheel and the sdist build and pass twine's checks; the
wheel, installed with its dependencies in a fresh virtual environment, runs from a folder
outside the repository: the version, the recipes by name, ``info`` on a recipe, the sample
data and a few steps of fine-tuning through a packaged recipe. (The demo is not run here
too: it doubles the test's time, and what it runs, the same modules, is
tests/test_demo.py's; the ``my_qa`` recipe learning from the demo's model is there.)

The environment is installed as ``make install`` installs, with uv and its cache, offline:
every package comes from the cache the development install filled (seconds, no download),
at the versions of constraints.txt.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import nemot
from nemot import recipes

ROOT = Path(__file__).resolve().parents[1]
UV = Path(sys.executable).with_name("uv")


def _run(command, cwd=None, env=None, timeout=1800):
    result = subprocess.run([str(part) for part in command], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, (command, result.stdout[-3000:], result.stderr[-3000:])
    return result.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    _run([UV, "build", "--offline", "--quiet", "--out-dir", out, ROOT])
    (wheel,), (sdist,) = out.glob("*.whl"), out.glob("*.tar.gz")
    return wheel, sdist


@pytest.fixture(scope="module")
def user(dist, tmp_path_factory):
    """``(run, folder)``: ``run(*command)`` runs a command of a fresh environment with the
    wheel installed, in ``folder``, outside the repository."""
    wheel, _ = dist
    root = tmp_path_factory.mktemp("installed")
    venv, folder = root / "venv", root / "user"
    folder.mkdir()
    _run([UV, "venv", "--offline", "--quiet", "--python", sys.executable, venv])
    _run([UV, "pip", "install", "--offline", "--quiet", "--python", venv / "bin" / "python",
          "--constraint", ROOT / "constraints.txt", wheel])
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")}
    # The first process writes the fresh environment's bytecode, the later ones read it.
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}", TF_CPP_MIN_LOG_LEVEL="2")

    def run(*command):
        return _run(command, cwd=folder, env=env)

    yield run, folder
    shutil.rmtree(root)


def test_wheel_and_sdist_hold_the_recipes_and_pass_twine(dist):
    wheel, sdist = dist
    _run([sys.executable, "-m", "twine", "check", "--strict", wheel, sdist])
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(f"nemot-{nemot.__version__}.dist-info/METADATA").decode()
    expected = {f"nemot/configs/{name}.toml" for name in recipes.names()}
    assert expected <= names
    assert f"nemot-{nemot.__version__}.dist-info/licenses/LICENSE" in names
    assert f"Version: {nemot.__version__}\n" in metadata
    assert "# nemot" in metadata  # the README is the long description
    # Ranges, not the development pins: an installed nemot shares an environment.
    assert "Requires-Dist: keras<4,>=3.15" in metadata and "==" not in re.sub(
        r"Requires-Dist: [^\n]*extra == [^\n]*", "", metadata)
    with tarfile.open(sdist) as archive:
        members = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {f"nemot/configs/{name}.toml" for name in recipes.names()} <= members


def test_installed_package_runs_from_outside_the_repository(user):
    run, folder = user
    assert run("nemot", "--version").strip() == f"nemot {nemot.__version__}"
    listed = run("nemot", "recipes").splitlines()
    assert [line.split()[0] for line in listed] == recipes.names()
    info = json.loads(run("nemot", "info", "--config", "boolq", "--json"))
    assert info["config"]["d_model"] == 768 and info["parameters"]["total"] > 10 ** 8
    location = Path(run("python", "-c", "import nemot; print(nemot.__file__)").strip())
    assert "site-packages" in location.parts and not location.is_relative_to(ROOT)
    # A fine-tuning through a packaged recipe, on the sample of its layout (a few steps).
    run("python", "-m", "data_prep", "sample", "--out", "sample", "--questions", "16")
    printed = run("nemot", "finetune", "--config", "my_qa", "--data-dir", "sample/my_qa",
                  "--init-from", "none", "--out", "my_qa", "--epochs", "1",
                  "--set", "train.steps_per_epoch=2", "--set", "model.max_text_length=16",
                  "--set", "train.verbose=0")
    assert "done: step 2" in printed and (folder / "my_qa" / "model_last.keras").is_file()
