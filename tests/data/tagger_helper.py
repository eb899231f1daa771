"""A real NLTK averaged-perceptron POS tagger for tests, trained on a tiny hand-tagged corpus.

Nothing is downloaded: :func:`train_perceptron` writes the corpus and trains the
tagger; :func:`install_perceptron` saves it where NLTK looks for its English
tagger, so code that builds the default tagger (``nemot.data.pos_tags.default_tagger``,
the ``nemot evaluate`` command) loads it once the folder is on ``nltk.data.path``.
Test modules import the :func:`perceptron` fixture.
"""

import json
import random

import nltk
import pytest
from nltk.corpus.reader import TaggedCorpusReader
from nltk.tag.perceptron import PerceptronTagger

CORPUS = """\
The/DT dog/NN barked/VBD loudly/RB at/IN 42/CD visitors/NNS ./.
The/DT happy/JJ dog/NN ran/VBD quickly/RB ./.
A/DT big/JJ cat/NN sleeps/VBZ quietly/RB ./.
The/DT book/NN is/VBZ good/JJ ./.
The/DT book/NN was/VBD red/JJ ./.
A/DT book/NN fell/VBD ./.
I/PRP book/VBP a/DT room/NN ./.
We/PRP book/VBP the/DT flight/NN ./.
They/PRP book/VBP a/DT table/NN ./.
She/PRP reads/VBZ the/DT book/NN ./.
He/PRP said/VBD bonjour/FW twice/RB ./.
Visitors/NNS saw/VBD 3/CD big/JJ cats/NNS ./.
"""
NUM_SENTENCES = 12


def train_perceptron(root):
    """A ``PerceptronTagger`` trained on :data:`CORPUS`, written under the folder ``root``."""
    (root / "hand.pos").write_text(CORPUS)
    # NLTK's corpus readers only open files under nltk.data.path (nltk.pathsec).
    nltk.data.path.append(str(root))
    try:
        sentences = list(TaggedCorpusReader(str(root), ["hand.pos"]).tagged_sents())
    finally:
        nltk.data.path.remove(str(root))
    assert len(sentences) == NUM_SENTENCES
    random.seed(0)  # PerceptronTagger.train shuffles with the global generator
    tagger = PerceptronTagger(load=False)
    tagger.train(sentences * 4, nr_iter=10)
    return tagger


@pytest.fixture(scope="module")
def perceptron(tmp_path_factory):
    """A pytest fixture: :func:`train_perceptron` once per test module."""
    return train_perceptron(tmp_path_factory.mktemp("corpus"))


def install_perceptron(tagger, root, lang="eng"):
    """Save ``tagger`` as NLTK's ``averaged_perceptron_tagger_<lang>`` data under ``root``.

    Put ``root`` on ``nltk.data.path`` (e.g. ``monkeypatch.setattr(nltk.data, "path",
    [str(root)])``) and ``PerceptronTagger()`` loads it.
    """
    folder = root / "taggers" / f"averaged_perceptron_tagger_{lang}"
    folder.mkdir(parents=True, exist_ok=True)
    for value, name in zip(tagger.encode_json_obj(), tagger.param_files(lang)):
        (folder / name).write_text(json.dumps(value))
    return root
