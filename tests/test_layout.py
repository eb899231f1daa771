"""The layout's import directions (``.importlinter``, README "Layout") hold: ``lint-imports``
passes, and each contract is one that a wrong import breaks."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


def lint(*args, cwd=ROOT):
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run([str(LINT), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_every_import_contract_is_kept():
    result = lint()
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


def test_a_back_edge_breaks_the_stack(tmp_path):
    """A copy of the package in which the data layer imports a model, a paper package another,
    NeMoT's models a host, the evaluation a host, one data group another and the run protocol
    the run configs (and with them Keras): the stack, the hosts' boundary, the data groups and
    the light run protocol are broken."""
    subprocess.run(["cp", "-r", str(ROOT / "nemot"), str(ROOT / ".importlinter"),
                    str(tmp_path)], check=True)
    edges = {"data/qa/format.py": "from nemot.models import registry",
             "pals/tasks.py": "from nemot.modact import models",
             "models/routing.py": "from nemot.hosts import losses",
             "evaluation/metrics.py": "from nemot.hosts import bert",
             "data/qa/readers/race.py": "from nemot.data.c4 import stream",
             "data/benchmarks/glue.py": "from nemot.data.qa import format",
             "experiments/protocol.py": "from nemot.training import run_config"}
    for path, line in edges.items():
        with open(tmp_path / "nemot" / path, "a") as f:
            f.write(f"\n{line}  # noqa: E402,F401\n")
    result = lint(cwd=tmp_path)
    assert result.returncode != 0
    assert "nemot.data is not allowed to import nemot.models" in result.stdout
    assert "nemot.pals is not allowed to import nemot.modact" in result.stdout
    assert "nemot.models is not allowed to import nemot.hosts" in result.stdout
    assert "nemot.evaluation is not allowed to import nemot.hosts" in result.stdout
    assert "nemot.data.qa is not allowed to import nemot.data.c4" in result.stdout
    assert "nemot.data.benchmarks is not allowed to import nemot.data.qa" in result.stdout
    assert "nemot.experiments.protocol is not allowed to import keras" in result.stdout
