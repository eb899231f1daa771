"""The package as a user gets it: the wheel and the sdist build and pass twine's checks; the
wheel, installed with its dependencies in a fresh virtual environment, runs from a folder
outside the repository: the version, the recipes by name, and the README's "Try it small,
offline" block as written (sample data, pre-training, fine-tuning, evaluation), every
download made to fail. That folder holds no ``configs/``: the block's ``configs/NAME.toml``
names the packaged recipe (:mod:`nemot.recipes`), as the docs promise a pip user. (The
demo is not run here too: what it runs, the same modules, is tests/test_demo.py's; the
``my_qa`` recipe learning from the demo's model is there.)

The environment is installed as ``make install`` installs, with uv and its cache, offline:
every package comes from the cache the development install filled (seconds, no download),
at the versions of constraints.txt. uv links those packages' files from its cache, the same
files the development environment has: their compiled bytecode there is linked beside them
too (Python checks a ``.pyc`` against its source's time and size), so the first process to
load TensorFlow does not compile it all again (14 CPU seconds against 1); nemot's own
modules, which the development environment runs from the checkout, compile at their first
import.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import time
import tomllib
import zipfile
from pathlib import Path

import pytest

import nemot
from nemot import NeMoTConfig, recipes

from tests.conftest import BACKEND_NOTICES

ROOT = Path(__file__).resolve().parents[1]
UV = Path(sys.executable).with_name("uv")


def _run(command, cwd=None, env=None, timeout=1800):
    result = subprocess.run([str(part) for part in command], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, (command, result.stdout[-3000:], result.stderr[-3000:])
    return result


def recipe_block():
    """The first ```bash block of the README section "Try it small, offline"."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Try it small, offline\n", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1)


def link_bytecode(ours, theirs):
    """Link each ``__pycache__/*.pyc`` of site-packages ``ours`` into site-packages
    ``theirs`` where its source there is the same file as here (one inode: uv linked both
    from its cache); returns how many were linked."""
    linked = 0
    for folder, _, names in os.walk(ours):
        if os.path.basename(folder) != "__pycache__":
            continue
        source_dir = Path(folder).parent
        target_dir = theirs / source_dir.relative_to(ours)
        for name in names:
            source = name.split(".", 1)[0] + ".py"
            try:
                if not os.path.samefile(source_dir / source, target_dir / source):
                    continue
            except OSError:  # not in the fresh environment
                continue
            (target_dir / "__pycache__").mkdir(exist_ok=True)
            os.link(Path(folder, name), target_dir / "__pycache__" / name)
            linked += 1
    return linked


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    _run([UV, "build", "--offline", "--quiet", "--out-dir", out, ROOT])
    (wheel,), (sdist,) = out.glob("*.whl"), out.glob("*.tar.gz")
    return wheel, sdist


@pytest.fixture(scope="module")
def user(dist, tmp_path_factory):
    """``(env, folder)``: the environment of a fresh virtual environment with the wheel
    installed, and an empty folder outside the repository to run its commands in."""
    wheel, _ = dist
    root = tmp_path_factory.mktemp("installed")
    venv, folder = root / "venv", root / "user"
    folder.mkdir()
    _run([UV, "venv", "--offline", "--quiet", "--python", sys.executable, venv])
    _run([UV, "pip", "install", "--offline", "--quiet", "--python", venv / "bin" / "python",
          "--constraint", ROOT / "constraints.txt", wheel])
    link_bytecode(Path(sysconfig.get_paths()["purelib"]),
                  Path(_run([venv / "bin" / "python", "-c", "import sysconfig; print("
                             "sysconfig.get_paths()['purelib'])"]).stdout.strip()))
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")}
    # The first process writes the bytecode of what is left (nemot's), the later ones read it.
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}", TF_CPP_MIN_LOG_LEVEL="2")
    yield env, folder
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
    env, folder = user

    def run(*command):
        return _run(command, cwd=folder, env=env).stdout

    assert run("nemot", "--version").strip() == f"nemot {nemot.__version__}"
    listed = run("nemot", "recipes").splitlines()
    assert [line.split()[0] for line in listed] == recipes.names()
    where = json.loads(run("python", "-c", "import json, nemot; from nemot import recipes; "
                                           "print(json.dumps([nemot.__file__, "
                                           "str(recipes.resolve('configs/race.toml'))]))"))
    for path in map(Path, where):
        assert "site-packages" in path.parts and not path.is_relative_to(ROOT), path


def test_readme_recipe_runs_offline_in_the_installed_package(user):
    env, folder = user
    assert not (folder / "configs").exists()  # configs/NAME.toml: the packaged recipes
    unreachable = "http://127.0.0.1:9"  # nothing listens: a download fails at once
    env = dict(env, HTTP_PROXY=unreachable, HTTPS_PROXY=unreachable, HF_HUB_OFFLINE="1",
               HF_DATASETS_OFFLINE="1")
    env.pop("TF_CPP_MIN_LOG_LEVEL")  # the command line quiets TensorFlow itself
    started = time.time()
    result = _run(["bash", "-e", "-c", recipe_block()], cwd=folder, env=env, timeout=1200)
    print(f"README recipe: {time.time() - started:.0f} s")
    for notice in BACKEND_NOTICES:
        assert notice not in result.stderr, result.stderr[-2000:]
    runs = folder / "checkpoints" / "tiny"
    pretrain = tomllib.loads((runs / "pretrain" / "run_config.toml").read_text())
    assert "gpt2" not in pretrain  # --gpt2 none: a random vanilla set, nothing downloaded
    assert pretrain["model"] == NeMoTConfig.preset("tiny").to_dict() == tomllib.loads(
        (runs / "race" / "run_config.toml").read_text())["model"]
    assert (runs / "race" / "model_best_metric.keras").is_file()
    questions = list((runs / "sample" / "RACE" / "test").rglob("*.txt"))
    predictions = (runs / "race" / "eval" / "race_test_predictions.jsonl").read_text()
    assert len(questions) == len(predictions.splitlines()) == 8
    metrics = json.loads((runs / "race" / "eval" / "race_test_metrics.json").read_text())
    assert 0 <= metrics["scores"]["total"] <= 1
