import tomllib
from pathlib import Path

import pytest

import nemot
from nemot import cli, recipes
from nemot.errors import ConfigError
from nemot.experiments import protocol
from nemot.training.run_config import load_run_config

ROOT = Path(__file__).resolve().parents[1]
REPOSITORY_CONFIGS = sorted(str(p.relative_to(ROOT / "configs").with_suffix(""))
                            for p in (ROOT / "configs").rglob("*.toml"))


def test_the_packaged_recipes_are_the_repository_configs():
    assert sorted(recipes.names()) == REPOSITORY_CONFIGS
    assert recipes.path("pals/table3").samefile(ROOT / "configs" / "pals" / "table3.toml")


@pytest.mark.parametrize("name", REPOSITORY_CONFIGS)
def test_every_recipe_loads_by_name(name, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # nothing found from a clone's root
    path = recipes.resolve(name)
    data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    if "reproduction" in data:
        assert protocol.load(path)[1].name
    elif set(data) == {"model"}:
        assert isinstance(nemot.NeMoTConfig.from_file(path), nemot.NeMoTConfig)
    else:
        assert load_run_config(path).name
    assert recipes.summary(name)


def test_a_file_or_the_repository_spelling_names_a_recipe(monkeypatch, tmp_path):
    own = tmp_path / "boolq"
    own.write_text("[model]\npreset = 'tiny'\n")
    monkeypatch.chdir(tmp_path)
    assert recipes.resolve("boolq") == "boolq"  # a file of that name comes first
    assert Path(recipes.resolve("configs/race.toml")).samefile(ROOT / "configs" / "race.toml")


def test_an_unknown_name_suggests_the_nearest(capsys):
    with pytest.raises(ConfigError, match=r"'boolk'.*did you mean 'boolq'\?"):
        recipes.resolve("boolk")
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["finetune", "--config", "pals/tabel3"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --config: 'pals/tabel3'" in err and "did you mean 'pals/table3'?" in err


def test_recipes_lists_each_with_its_first_sentence(capsys):
    assert cli.main(["recipes"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == recipes.names()
    boolq = next(line for line in lines if line.startswith("boolq "))
    assert "Single-dataset fine-tuning, thesis Table 3.3" in boolq
    assert max(map(len, lines)) <= max(map(len, recipes.names())) + 2 + recipes.SUMMARY_WIDTH


def test_every_config_flag_takes_a_name(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    parser = cli.build_parser()
    for argv in (["info", "--config", "baseline/gpt2_medium"],
                 ["finetune", "--config", "boolq"],
                 ["runs", "--config", "modact/names_lstm"],
                 ["ngt", "params", "--config", "ngt/table1"],
                 ["hypergrid", "params", "--config", "hypergrid/tiny"],
                 ["pals", "run", "--config", "pals/synthetic"]):
        name = argv[argv.index("--config") + 1]
        assert Path(parser.parse_args(argv).config).samefile(recipes.path(name))
