"""Python exceptions raised inside ``tf.data``, raised again as themselves.

``tf.data`` hands an exception raised by the Python code of a dataset (a generator, a
``tf.numpy_function``) on as a ``tf.errors.OpError`` that carries its message only, so a
:class:`~nemot.data.DataError` naming a file and line would reach the user as a TensorFlow
traceback. The datasets' Python code remembers the exceptions it raises
(:func:`remembered`, :func:`remembered_generator`) and :func:`python_errors` raises the
one an ``OpError`` carries again, as itself.
"""

import collections
import contextlib
import functools

import tensorflow as tf

# Python exceptions raised by the Python code of our datasets (generators, checks), newest
# last: tf.data hands them on as a tf.errors.OpError carrying their message only.
_RAISED = collections.deque(maxlen=8)


def remembered(fn):
    """``fn`` remembering the exception it raises, for :func:`python_errors`."""
    @functools.wraps(fn)
    def remembering(*args):
        try:
            return fn(*args)
        except Exception as error:
            _RAISED.append(error)
            raise

    return remembering


def remembered_generator(make_generator):
    """``make_generator`` whose generators remember the exception they raise, for
    :func:`python_errors`."""
    @functools.wraps(make_generator)
    def remembering(*args):
        try:
            yield from make_generator(*args)
        except Exception as error:
            _RAISED.append(error)
            raise

    return remembering


@contextlib.contextmanager
def python_errors():
    """Raise again, as itself, a Python exception of our data code that reached the caller
    through tf.data as a ``tf.errors.OpError``: e.g. the :class:`DataError` naming a file
    and line, or the ``ValueError`` of a task token the model has no block for.

    Example:
        >>> with python_errors():                            # doctest: +SKIP
        ...     model.fit(c4_dataset("c4/en", batch_size=8), steps_per_epoch=10)
    """
    try:
        yield
    except tf.errors.OpError as error:
        original = next((e for e in reversed(_RAISED) if str(e) and str(e) in error.message),
                        None)
        if original is None:
            raise
        raise original from None


def checked_token_ids(x, check_batch):
    """``x`` (a batch of a ``tf.data`` pipeline, ``{"token_ids": ...}``) with its token ids
    checked on the host as they are read: a compiled train step cannot raise on values.
    ``check_batch(token_ids)`` raises for numpy token ids [batch, 3 + n] the model cannot
    take (the error calling the model gives); it reaches the caller through
    :func:`python_errors`."""

    @remembered
    def checked_ids(token_ids):
        check_batch(token_ids)
        return token_ids

    ids = tf.numpy_function(checked_ids, [x["token_ids"]], x["token_ids"].dtype)
    return {**x, "token_ids": tf.ensure_shape(ids, x["token_ids"].shape)}
