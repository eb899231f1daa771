"""The README's "Try it small, offline" block, run as written: pre-train, fine-tune and
evaluate on sample data in a fresh directory holding the repository's configs, with every
download made to fail."""

import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

from nemot import NeMoTConfig

ROOT = Path(__file__).resolve().parents[1]
# What TensorFlow prints when it loads on a machine without a GPU driver.
BACKEND_NOTICES = ("absl::InitializeLog", "cudart_stub", "cuInit", "oneDNN", "cpu_feature_guard")


def recipe_block():
    """The first ```bash block of the README section "Try it small, offline"."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Try it small, offline\n", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1)


def test_readme_recipe_runs_offline(tmp_path):
    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    unreachable = "http://127.0.0.1:9"  # nothing listens: a download fails at once
    env = dict(os.environ, PYTHONPATH=str(ROOT), HTTP_PROXY=unreachable,
               HTTPS_PROXY=unreachable, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)  # the command line quiets TensorFlow itself
    started = time.time()
    result = subprocess.run(["bash", "-e", "-c", recipe_block()], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=600)
    print(f"README recipe: {time.time() - started:.0f} s")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    for notice in BACKEND_NOTICES:
        assert notice not in result.stderr, result.stderr[-2000:]
    runs = tmp_path / "checkpoints" / "tiny"
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
