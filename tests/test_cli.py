import argparse
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import keras
import pytest

import nemot
from nemot import cli, console, errors
from nemot.evaluation.options import EVALUATED_MODELS
from nemot.models.nemot_causal_lm import parameter_breakdown
from nemot.training import cli as training_cli
from nemot.training import trainer
from tests.data import fixtures
from tests.conftest import BACKEND_NOTICES

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = ("info", "pretrain", "finetune", "train-general", "evaluate", "generate",
            "prepare-data", "runs", "ngt", "pals", "hypergrid", "modact", "recipes")


def _python(code, env=None):
    """Run ``code`` in a fresh interpreter on this checkout; returns the completed process."""
    env = dict(os.environ if env is None else env, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)


def test_console_script_lists_every_command():
    script = Path(sys.executable).with_name("nemot")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(ROOT))
    out = subprocess.run([str(script), "--help"], capture_output=True, text=True, env=env,
                         check=True).stdout
    for command in COMMANDS:
        assert command in out


def test_help_and_version_load_no_backend():
    # Every command's help, argument errors and --version come before TensorFlow loads.
    code = f"""
import sys
from nemot import cli
for argv in [["--help"], ["--version"], ["finetune"], *[[c, "--help"] for c in {COMMANDS!r}]]:
    try:
        cli.main(argv)
    except SystemExit:
        pass
print("LOADED", [m for m in ("tensorflow", "keras", "jax") if m in sys.modules])
"""
    result = _python(code)
    assert "LOADED []" in result.stdout, result.stdout[-500:] + result.stderr[-2000:]
    assert "the following arguments are required: --config" in result.stderr


def test_version_is_the_installed_package_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"nemot {importlib.metadata.version('nemot')}"


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_is_written_for_users(command, capsys):
    argv = ["--help"] if command is None else [command, "--help"]
    if command == "prepare-data":  # the help of python -m data_prep, which it runs
        argv = ["prepare-data", "--help"]
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for markup in ("``", ":mod:", ":func:", "add_parser", "Wire into"):
        assert markup not in out
    assert "NEMOT_BACKEND_LOGS" in out and "NEMOT_DEBUG" in out
    if command is None:
        assert "Try it small, offline" in out and "--version" in out and "--debug" in out
        for name in COMMANDS:
            assert f"\n    {name}" in out


def test_info_prints_the_breakdown_of_the_config(tmp_path, capsys):
    path = tmp_path / "run.toml"
    path.write_text('[model]\npreset = "tiny"\nnum_output_blocks = 2\n')
    cli.main(["info", "--config", str(path), "--json"])
    printed = json.loads(capsys.readouterr().out)
    config = nemot.NeMoTConfig.from_file(path)
    assert printed["config"]["output_blocks"] == ["lm", "mqa"]
    expected = parameter_breakdown(nemot.build_model(config))
    assert printed["parameters"] == expected


@pytest.mark.usefixtures("eager")
def test_generate_answers_prompts_from_a_checkpoint(tmp_path, capsys):
    keras.utils.set_random_seed(0)
    model = nemot.build_model(nemot.NeMoTConfig.preset("tiny"))
    path = tmp_path / "tiny.keras"
    model.save(path)
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("<q> Is the sky blue? <sep>\n<p1> A cat. <q> Who? <sep>\n")
    assert cli.main(["generate", "--checkpoint", str(path), "--input", str(prompts),
                     "--max-new-tokens", "3"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["prompt"] for line in lines] == prompts.read_text().splitlines()
    assert all(1 <= len(line["ids"]) <= 3 or line["ids"] == [] for line in lines)
    # The same ids as decoding directly with the library.
    from nemot.data import Tokenizer
    from nemot.models.generation import generate
    tok = nemot.vocab
    aux = [tok.CLS_ID, tok.DEC_ID, tok.task_token_id("gqa")]
    direct = generate(model, [aux + Tokenizer().encode(p)
                              for p in prompts.read_text().splitlines()], max_new_tokens=3)
    assert [line["ids"] for line in lines] == [list(d) for d in direct]


# ------------------------------------------------------------------ user errors: one line


def _one_line_error(capsys):
    """The single ``error: ...`` line a failed command printed (no traceback)."""
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1 and err.startswith("error: "), err
    return err.strip()


def test_generates_wrong_values_end_in_one_line(tmp_path, capsys):
    """Each option of ``nemot generate`` given a wrong value: argparse's usage and error,
    or one ``error:`` line naming the option, never a traceback."""
    prompt = ["--prompt", "<q> Why? <sep>"]
    for value in ("0", "-3", "x"):
        with pytest.raises(SystemExit) as exit_info:
            cli.main(["generate", "--checkpoint", "m.keras", *prompt, "--max-new-tokens", value])
        assert exit_info.value.code == 2
        assert f"argument --max-new-tokens: {value!r}: expected a whole number >= 1" in \
            capsys.readouterr().err
    path = tmp_path / "lm.keras"
    nemot.build_model(nemot.NeMoTConfig.preset("tiny").replace(
        num_vanilla_layers=1, num_nm_layers=1, output_blocks=("lm",)), preprocessor=None).save(path)
    for option, value, expected in [
            ("--sampler", "nope", "--sampler 'nope': expected one of ('greedy', 'top_k'"),
            ("--task-token", "zzz", "--task-token 'zzz': output block 'zzz' has no task token"),
            ("--task-token", "gqa", "--task-token 'gqa': token_ids: <gqa> at auxiliary position "
                                    "2 (<task>); expected the task token of one of the model's "
                                    "output blocks ['lm']"),
            ("--input", str(tmp_path / "none.txt"), "none.txt: no such file")]:
        assert cli.main(["generate", "--checkpoint", str(path), *prompt, option, value]) == 2, \
            option
        assert expected in _one_line_error(capsys), option


def _options(parser, words=()):
    """``(command words, action)`` of every option of ``parser`` and of its subcommands."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, (*words, name))
        elif action.option_strings:
            yield words, action


@pytest.mark.parametrize("command", COMMANDS)
def test_every_numeric_option_refuses_a_wrong_value_in_one_line(command, capsys):
    """Every number a command takes is read in its range (nemot.ranges.option): a word, a
    fraction where a whole number goes, a value below (or above) the range end in
    argparse's usage and one error line naming the option, the value and the range."""
    for words, action in _options(cli.build_parser()):
        if words[:1] != (command,):
            continue
        name = "/".join(action.option_strings)
        assert action.type not in (int, float), f"{' '.join(words)} {name}: no range"
        declared = getattr(action.type, "range", None)
        if declared is None:
            continue
        wrong = ["x", "1.5"] if action.type.kind is int else ["x"]
        if declared.low is not None:
            wrong.append(str(declared.low if declared.low_open else declared.low - 1))
        if declared.high is not None:
            wrong.append(str(declared.high if declared.high_open else declared.high + 1))
        for value in wrong:
            with pytest.raises(SystemExit) as exit_info:
                cli.main([*words, action.option_strings[0], value])
            assert exit_info.value.code == 2, (words, name, value)
            err = capsys.readouterr().err
            assert "Traceback" not in err
            assert err.splitlines()[-1].endswith(
                f"error: argument {name}: {value!r}: expected "
                f"{'a whole number' if action.type.kind is int else 'a number'} {declared}"), err


def test_generate_refuses_a_prompt_without_sep(tmp_path, capsys):
    assert cli.main(["generate", "--checkpoint", str(tmp_path / "x.keras"),
                     "--prompt", "<q> Why?"]) == 2
    assert "end with <sep>" in _one_line_error(capsys)


@pytest.fixture
def race_dir(tmp_path):
    fixtures.race(tmp_path / "raw")
    return tmp_path / "raw"


def _finetune(*argv, config=ROOT / "configs" / "race.toml"):
    return cli.main(["finetune", "--config", str(config), "--set", "model.preset=tiny",
                     *map(str, argv)])


def test_unknown_dataset_in_a_config_names_the_key(race_dir, capsys):
    assert _finetune("--data-dir", race_dir, "--set", "data.dataset=racex") == 2
    line = _one_line_error(capsys)
    assert "race.toml: data.dataset: unknown dataset(s) ['racex']" in line and "squad_v2" in line


def test_missing_data_directory_names_the_key(tmp_path, capsys):
    assert _finetune("--data-dir", tmp_path / "nowhere", "--set", "train.init_from=") == 2
    line = _one_line_error(capsys)
    assert f"data.dir = '{tmp_path / 'nowhere'}': no such directory" in line
    assert "--data-dir" in line


def test_missing_pretrained_model_names_train_init_from(race_dir, tmp_path, monkeypatch,
                                                        capsys):
    # configs/race.toml starts from checkpoints/pretrain/model_last.keras, absent here.
    monkeypatch.chdir(tmp_path)
    assert _finetune("--data-dir", race_dir) == 2
    line = _one_line_error(capsys)
    assert "race.toml: train.init_from = 'checkpoints/pretrain/model_last.keras': no such file" \
        in line
    assert "nemot pretrain" in line and "--set train.init_from=" in line


def test_malformed_data_line_is_one_line(race_dir, capsys):
    bad = race_dir / "RACE" / "train" / "middle" / "1.txt"
    bad.write_text(json.dumps({"article": "x", "questions": ["q"], "options": [["a", "b"]],
                               "answers": ["Z"]}))
    assert _finetune("--data-dir", race_dir, "--set", "train.init_from=") == 1
    line = _one_line_error(capsys)
    assert f"{bad}: question 0: field 'answers': expected one of the option labels" in line


def test_no_network_names_where_a_local_copy_goes(race_dir, monkeypatch, capsys):
    import requests
    import urllib3

    def offline(*args, **kwargs):
        # What kagglehub raises for a KerasHub preset on a machine without a network.
        reason = urllib3.exceptions.NameResolutionError(
            "api.kaggle.com", None, OSError("Name or service not known"))
        try:
            raise urllib3.exceptions.MaxRetryError(None, "/v1/models", reason)
        except urllib3.exceptions.MaxRetryError as error:
            raise requests.exceptions.ConnectionError(
                "HTTPSConnectionPool(host='api.kaggle.com', port=443): Max retries") from error

    monkeypatch.setattr(trainer, "train", offline)
    assert _finetune("--data-dir", race_dir, "--set", "train.init_from=",
                     "--gpt2", "gpt2_base_en") == 1
    line = _one_line_error(capsys)
    assert line.startswith("error: no network: could not reach api.kaggle.com")
    assert "gpt2 (--gpt2 DIR" in line and "--gpt2 none" in line
    assert "data.dir" not in line  # the data is local


def test_a_bug_keeps_its_traceback_and_debug_shows_user_errors(race_dir, monkeypatch, capsys):
    def broken(*args, **kwargs):
        return {}["missing"]

    monkeypatch.setattr(trainer, "train", broken)
    with pytest.raises(KeyError, match="missing"):
        _finetune("--data-dir", race_dir, "--set", "train.init_from=")
    with pytest.raises(errors.ConfigError, match="unknown dataset"):
        _finetune("--data-dir", race_dir, "--set", "data.dataset=racex", "--debug")
    monkeypatch.setenv("NEMOT_DEBUG", "1")
    with pytest.raises(errors.ConfigError, match="unknown dataset"):
        _finetune("--data-dir", race_dir, "--set", "data.dataset=racex")


def test_network_failures_are_told_from_other_errors():
    def chained(error, context):
        try:
            raise context
        except Exception:
            try:
                raise error
            except Exception as raised:
                return raised

    # Hugging Face datasets without a network: ConnectionError over a cache miss.
    hub = chained(ConnectionError("Couldn't reach 'google/boolq' on the Hub"),
                  FileNotFoundError("Dataset google/boolq is not cached"))
    assert errors.network_failure(hub) is hub
    assert errors.user_message(hub).startswith("no network: could not reach google/boolq")
    for error in (BrokenPipeError("worker died"), ValueError("shape mismatch"),
                  chained(ValueError("bad"), KeyError("k"))):
        assert errors.network_failure(error) is None and errors.user_message(error) is None
    assert errors.user_message(FileNotFoundError("x.toml")) == "x.toml"


# ------------------------------------------------------------------ checkpoints for evaluate


def _fake_keras_file(path, registered_name, module, class_name):
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("config.json", json.dumps(
            {"module": module, "class_name": class_name, "registered_name": registered_name,
             "config": {}}))
    return path


def _evaluate(checkpoint, data_dir, out):
    return cli.main(["evaluate", "--checkpoint", str(checkpoint), "--dataset", "race",
                     "--split", "dev", "--data-dir", str(data_dir), "--out", str(out)])


def test_evaluate_names_the_command_of_a_paper_checkpoint(race_dir, tmp_path, capsys):
    from nemot.pals.model import PALBert

    path = _fake_keras_file(tmp_path / "pals.keras", keras.saving.get_registered_name(PALBert),
                            PALBert.__module__, "PALBert")
    assert _evaluate(path, race_dir, tmp_path / "out") == 2
    line = _one_line_error(capsys)
    assert "holds a PALBert of the PALs reproduction" in line and "`nemot pals --help`" in line
    assert "Could not locate" not in line


def test_evaluate_refuses_missing_and_foreign_checkpoints(race_dir, tmp_path, capsys):
    assert _evaluate(tmp_path / "missing.keras", race_dir, tmp_path / "out") == 1
    assert "missing.keras: no such file" in _one_line_error(capsys)
    (tmp_path / "junk.keras").write_text("not a zip")
    assert _evaluate(tmp_path / "junk.keras", race_dir, tmp_path / "out") == 2
    assert "junk.keras: not a .keras file" in _one_line_error(capsys)
    sequential = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    sequential.save(tmp_path / "plain.keras")
    assert _evaluate(tmp_path / "plain.keras", race_dir, tmp_path / "out") == 2
    assert "holds a Sequential (keras)" in _one_line_error(capsys)


def test_evaluated_models_are_the_ones_nemot_saves(tmp_path):
    from nemot.evaluation.options import check_checkpoint

    config = nemot.NeMoTConfig.preset("tiny")
    models = [nemot.build_model(config), nemot.build_baseline(config)]
    assert sorted(keras.saving.get_registered_name(type(m)) for m in models) == sorted(
        EVALUATED_MODELS)
    for model in models:
        model.save(tmp_path / "m.keras")
        check_checkpoint(tmp_path / "m.keras")


# ------------------------------------------------------------------ the small offline path


def test_gpt2_none_and_preset_tiny_build_without_gpt2_weights(tmp_path):
    parser = cli.build_parser()
    args = parser.parse_args(["pretrain", "--config", str(ROOT / "configs" / "pretrain.toml"),
                              "--preset", "tiny", "--gpt2", "none"])
    from nemot.training.run_config import load_run_config

    cfg = load_run_config(args.config, training_cli._flag_overrides(args))
    assert cfg.gpt2 is None and cfg.model == nemot.NeMoTConfig.preset("tiny")
    assert trainer.build_model(cfg).config.d_model == cfg.model.d_model  # no download
    # A config's gpt2 = "" means the same.
    config = tmp_path / "pre.toml"
    config.write_text((ROOT / "configs" / "pretrain.toml").read_text().replace(
        'gpt2 = "gpt2_base_en"', 'gpt2 = ""'))
    assert load_run_config(config).gpt2 is None


def test_quiet_backend_closes_standard_error_only_while_asked():
    code = """
import os
import re
from nemot import console
console.quiet_backend()
os.write(2, b"before\\n")
with console.stderr_closed():
    os.write(2, b"hidden\\n")
os.write(2, b"after\\n")
print(os.environ["TF_CPP_MIN_LOG_LEVEL"])
"""
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    result = _python(code, env)
    assert result.stderr == "before\nafter\n" and result.stdout == "2\n"
    result = _python(code, dict(env, TF_CPP_MIN_LOG_LEVEL="0"))  # the user's choice stays
    assert result.stdout == "0\n"


@pytest.mark.parametrize("argv, collected", [(None, False), (["--version"], True)])
def test_a_command_line_ends_without_a_last_garbage_collection(argv, collected):
    """``nemot`` reading its process's command line skips the interpreter's last collection
    (nemot.console.end_without_collecting); called from Python with its arguments, the
    process collects at its end as any does. Shown by a cycle left for that collection."""
    code = f"""
import gc, sys
gc.disable()
class Cycle:
    def __del__(self):
        print("collected", flush=True)
cycle = Cycle()
cycle.self = cycle
del cycle
sys.argv = ["nemot", "--version"]
from nemot import cli
cli.main({argv!r})
"""
    result = _python(code)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines() == [f"nemot {nemot.__version__}"] + (
        ["collected"] if collected else [])


def test_describe_turns_a_docstring_into_help():
    help_kwargs = console.describe(
        "``nemot x``: does :mod:`nemot.x` things.\n\nExamples::\n\n    nemot x --a 1\n")
    assert help_kwargs["description"] == "nemot x: does nemot.x things."
    assert help_kwargs["epilog"].startswith("examples:\n  nemot x --a 1\n\nenvironment:")


def test_info_reports_a_wrong_model_config_in_one_line(tmp_path, capsys):
    path = tmp_path / "run.toml"
    path.write_text('[model]\npreset = "tiny"\nd_modle = 8\n')
    assert cli.main(["info", "--config", str(path)]) == 2
    assert str(path) in _one_line_error(capsys)
    path.write_text("[model\n")
    assert cli.main(["info", "--config", str(path)]) == 2
    assert _one_line_error(capsys).startswith(f"error: {path}: ")
    assert cli.main(["info", "--preset", "huge"]) == 2
    assert "huge" in _one_line_error(capsys)


def test_nemot_backend_logs_keeps_tensorflows_notices():
    """``NEMOT_BACKEND_LOGS=1``: nothing is silenced (no finder, no log level set). Without
    it, TensorFlow loads quietly after ``import nemot`` and later errors still show:
    :func:`test_the_readme_quick_start_runs_quietly_as_a_script`."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("TF_CPP_MIN_LOG_LEVEL", "NEMOT_BACKEND_LOGS")}
    shown = _python("import os, sys, nemot, nemot.console as c\n"
                    "print(any(isinstance(f, c._QuietTensorFlow) for f in sys.meta_path),\n"
                    "      os.environ.get('TF_CPP_MIN_LOG_LEVEL'))",
                    dict(env, NEMOT_BACKEND_LOGS="1"))
    assert shown.stdout == "False None\n", shown.stderr[-2000:]


def test_an_error_raised_inside_a_layer_is_one_plain_line():
    class Refuses(keras.layers.Layer):
        def call(self, x):
            raise errors.ConfigError("x.toml: model.d_model = 3: expected a multiple of 4")

    with pytest.raises(errors.ConfigError) as caught:
        Refuses()(keras.ops.ones((1, 2)))
    assert "\x1b[" in str(caught.value)  # Keras set the message in bold, with its context
    assert errors.user_message(caught.value) == (
        "x.toml: model.d_model = 3: expected a multiple of 4")
    assert errors.plain("\x1b[31mred\x1b[0m") == "red"


@pytest.mark.parametrize("command", [["runs"], ["pals", "run"]])
def test_seeds_is_a_count_and_a_list_of_seeds_is_pointed_to_seed_list(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main([*command, "--config", "pals/synthetic", "--seeds", "0", "1", "2"])
    assert exit_.value.code == 2
    error = capsys.readouterr().err
    assert "--seeds N runs seeds 0..N-1" in error and "--seed-list 0 1 2" in error
    with pytest.raises(SystemExit):
        cli.main([*command, "--help"])
    shown = capsys.readouterr().out
    assert "--seeds N " in shown and "N [N ...]" not in shown and "--keep-stale" in shown


def test_a_paper_run_takes_exactly_the_flags_of_nemot_runs():
    parser = cli.build_parser()
    flags = ["--config", "pals/synthetic", "--seeds", "3", "--variants", "a", "b",
             "--set", "x.y=1", "--set", "z=[1, 2]", "--jobs", "2", "--force", "--keep-stale"]
    keys = ("config", "seeds", "seed_list", "variants", "overrides", "jobs", "force",
            "keep_stale")
    runs = vars(parser.parse_args(["runs", *flags]))
    for paper in ("pals", "ngt", "hypergrid"):
        run = vars(parser.parse_args([paper, "run", *flags]))
        assert {k: run[k] for k in keys} == {k: runs[k] for k in keys}
    assert runs["seeds"] == 3 and runs["overrides"] == ["x.y=1", "z=[1, 2]"]
    listed = vars(parser.parse_args(["ngt", "run", "--config", "ngt/table1",
                                     "--seed-list", "3", "4"]))
    assert listed["seed_list"] == [3, 4] and listed["seeds"] is None


def test_a_paper_run_refuses_another_papers_config(tmp_path, capsys):
    config = tmp_path / "x.toml"
    config.write_text('reproduction = "modact"\nname = "x"\noutput_dir = "o"\n')
    assert cli.main(["pals", "run", "--config", str(config)]) == 1
    assert capsys.readouterr().err == (
        f"error: {config}: reproduction = 'modact': expected a pals config; run it with "
        f"`nemot runs --config {config}`\n")


def test_default_output_folders_are_ignored_by_git():
    paths = ["runs/pals/table2/report.md", "synthetic/data/ids-sst-train.csv"]
    ignored = subprocess.run(["git", "check-ignore", *paths], cwd=ROOT, capture_output=True,
                             text=True, check=False).stdout.split()
    assert ignored == paths


def test_init_from_takes_a_run_directory_or_none(tmp_path):
    parser = cli.build_parser()

    def init_from(value):
        args = parser.parse_args(["finetune", "--config", "my_qa", "--init-from", value])
        (override,) = [o for o in training_cli._flag_overrides(args)
                       if o.startswith("train.init_from=")]
        return override.split("=", 1)[1]

    assert init_from(str(tmp_path)) == json.dumps(str(tmp_path / "model_last.keras"))
    assert init_from("model.keras") == '"model.keras"' and init_from("none") == '""'


@pytest.mark.parametrize("config, saved", [("baseline/gpt2_medium", "NeMoTCausalLM"),
                                           ("race", "GPT2BaselineCausalLM")])
def test_a_saved_model_of_the_other_kind_is_refused_as_a_start(config, saved, tmp_path,
                                                               capsys):
    path = tmp_path / "model_last.keras"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("config.json", json.dumps({"class_name": saved}))
    assert cli.main(["finetune", "--config", config, "--init-from", str(path)]) == 2
    error = capsys.readouterr().err
    assert f"is a saved {saved}" in error and "GPT-2's own weights" in error
    assert error.count("\n") == 1


@pytest.mark.parametrize("argv, usage, hint", [
    (["finetune", "--config", "boolq", "--batchsize", "4"], "usage: nemot finetune",
     "unrecognized arguments: --batchsize 4; did you mean --batch-size?"),
    (["ngt", "params", "--config", "ngt/table1", "--num-clases=3"], "usage: nemot ngt params",
     "unrecognized arguments: --num-clases=3; did you mean --num-classes?"),
    (["info", "--zzz"], "usage: nemot info", "unrecognized arguments: --zzz\n"),
])
def test_an_unknown_option_is_named_with_the_nearest_one(argv, usage, hint, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(usage) and hint in err


def test_a_run_that_fails_before_writing_leaves_no_new_folder(tmp_path, capsys):
    (tmp_path / "qa").mkdir()  # no question files: the run stops as it reads them
    argv = ["finetune", "--config", "my_qa", "--data-dir", str(tmp_path / "qa"),
            "--init-from", "none", "--out"]
    assert cli.main([*argv, str(tmp_path / "new")]) == 1
    assert "dev.jsonl" in capsys.readouterr().err and not (tmp_path / "new").exists()
    (tmp_path / "mine").mkdir()  # a folder the user made stays
    assert cli.main([*argv, str(tmp_path / "mine")]) == 1
    assert (tmp_path / "mine").is_dir()


def _python_blocks(path):
    return re.findall(r"^```python\n(.*?)^```", path.read_text(encoding="utf-8"), re.M | re.S)


def test_the_docs_python_imports_nemot_before_the_backend():
    # TensorFlow prints its notices as it loads: after `import nemot` they are silenced,
    # before it (`import keras` first) nothing can silence them.
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for block in _python_blocks(path):
            imports = re.findall(r"^(?:import|from) (\w+)", block, re.M)
            backend = [i for i, name in enumerate(imports)
                       if name in ("keras", "keras_hub", "tensorflow", "jax")]
            if backend and "nemot" in imports:
                assert imports.index("nemot") < backend[0], (path.name, imports)


def test_the_readme_quick_start_runs_quietly_as_a_script(tmp_path):
    """The quick start's imports (``import nemot`` first) in a fresh interpreter, then a
    TensorFlow op: no start-up notice, the log level nemot set, and an error written after
    the load still shows (nemot silences TensorFlow's start, not the process's stderr)."""
    block = _python_blocks(ROOT / "README.md")[0]
    header = "".join(re.findall(r"^(?:import|from) .*\n", block, re.M))
    assert header.startswith("import nemot"), header
    script = tmp_path / "quick_start.py"
    script.write_text(header + "import os\nimport tensorflow as tf\n"
                      "print(int(tf.constant(1) + 1), os.environ['TF_CPP_MIN_LOG_LEVEL'])\n"
                      "os.write(2, b'an error after the load\\n')\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("TF_CPP_MIN_LOG_LEVEL", "NEMOT_BACKEND_LOGS")}
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            env=dict(env, PYTHONPATH=str(ROOT)), cwd=tmp_path, timeout=600)
    assert result.returncode == 0 and result.stdout == "2 2\n", result.stderr[-2000:]
    assert result.stderr == "an error after the load\n", result.stderr[-2000:]
    assert not any(notice in result.stderr for notice in BACKEND_NOTICES)
