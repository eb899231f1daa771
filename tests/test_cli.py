import json
import os
import subprocess
import sys
from pathlib import Path

import keras
import pytest

import nemot
from nemot import cli
from nemot.models.nemot import parameter_breakdown

COMMANDS = ("info", "pretrain", "finetune", "train-general", "evaluate", "generate",
            "prepare-data", "ngt")


def test_console_script_lists_every_command():
    script = Path(sys.executable).with_name("nemot")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    out = subprocess.run([str(script), "--help"], capture_output=True, text=True, env=env,
                         check=True).stdout
    for command in COMMANDS:
        assert command in out


@pytest.mark.parametrize("command", [c for c in COMMANDS if c != "prepare-data"])
def test_every_command_has_help(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([command, "--help"])
    assert exit_info.value.code == 0
    assert "usage: nemot " + command in capsys.readouterr().out


def test_info_prints_the_breakdown_of_the_config(tmp_path, capsys):
    path = tmp_path / "run.toml"
    path.write_text('[model]\npreset = "tiny"\nnum_output_blocks = 2\n')
    cli.main(["info", "--config", str(path), "--json"])
    printed = json.loads(capsys.readouterr().out)
    config = nemot.NeMoTConfig.from_file(path)
    assert printed["config"]["output_blocks"] == ["lm", "mqa"]
    expected = parameter_breakdown(nemot.build_model(config))
    assert printed["parameters"] == expected


def test_generate_answers_prompts_from_a_checkpoint(tmp_path, capsys):
    keras.utils.set_random_seed(0)
    model = nemot.build_model(nemot.NeMoTConfig.preset("tiny"))
    path = tmp_path / "tiny.keras"
    model.save(path)
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("<q> Is the sky blue? <sep>\n<p1> A cat. <q> Who? <sep>\n")
    results = cli.main(["generate", "--checkpoint", str(path), "--input", str(prompts),
                        "--max-new-tokens", "3"])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["prompt"] for line in lines] == prompts.read_text().splitlines()
    assert all(1 <= len(line["ids"]) <= 3 or line["ids"] == [] for line in lines)
    # The same ids as decoding directly with the library.
    from nemot.data import Tokenizer
    from nemot.evaluation.decoding import generate
    tok = nemot.vocab
    aux = [tok.CLS_ID, tok.DEC_ID, tok.task_token_id("gqa")]
    direct = generate(model, [aux + Tokenizer().encode(p) for p in prompts.read_text().splitlines()],
                      max_new_tokens=3)
    assert [line["ids"] for line in lines] == [list(d) for d in direct]


def test_generate_refuses_a_prompt_without_sep(tmp_path):
    with pytest.raises(ValueError, match="end with <sep>"):
        cli.main(["generate", "--checkpoint", str(tmp_path / "x.keras"), "--prompt", "<q> Why?"])
