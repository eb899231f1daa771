"""The NAMES reader on files written in the distributed layout, and its named errors."""

import pytest

from nemot.data import DataError
from nemot.data.benchmarks import names
from tests.data import benchmark_files


def test_names_are_folded_to_ascii_as_the_tutorial_does(tmp_path):
    benchmark_files.names(tmp_path / "names")
    read, labels, languages = names.read_names(tmp_path / "names")
    assert languages == ["Czech", "Irish", "Polish"]
    assert read == ["Dvorak", "Novak", "Cerny", "O'Neill", "Slusarski", "Nowak"]
    assert list(labels) == [0, 0, 0, 1, 2, 2]


def test_names_errors_name_the_file_and_line(tmp_path):
    directory = tmp_path / "names"
    benchmark_files.names(directory)
    (directory / "Greek.txt").write_bytes("Papadopoulos\n\nAlexiou\n".encode())
    with pytest.raises(DataError, match=r"Greek.txt: line 2: field 'name': expected a name "
                                        r"\(letters or \" .,;'\"\), got ''"):
        names.read_names(directory)
    (directory / "Greek.txt").write_bytes(b"Papadopoulos\nAlex\xffiou\n")
    with pytest.raises(DataError, match=r"Greek.txt: line 2: field '\(bytes\)': expected UTF-8 "
                                        r"text; byte 0xff at byte offset 17 is not \(invalid "
                                        r"start byte\)"):
        names.read_names(directory)
    with pytest.raises(FileNotFoundError, match="no <Language>.txt files"):
        names.read_names(tmp_path / "empty")
