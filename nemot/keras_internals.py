"""What nemot needs from Keras and KerasHub that they offer no public function for.

Only this module relies on their implementation; tests/test_keras_internals.py checks
each piece against the installed versions and fails, naming them, if one changes.

- An optimizer's slots per variable: Keras names the slot it makes for a variable in
  ``add_variable_from_reference`` after the variable's path (``"dense/kernel"``'s
  momentum is ``"dense_kernel_momentum"``), and keeps the mapping itself private.
- Which variable an optimizer's update is for: under TensorFlow, Keras passes the
  TensorFlow variable, or a replica's copy of it, to ``update_step``.
- A preset's config without building its model: KerasHub's preset loader reads
  ``config.json`` of a preset name, handle or directory (KerasHub or Hugging Face).
"""


def optimizer_slots(optimizer, variables):
    """Each variable's optimizer slots: ``{id(variable): {slot name: slot variable}}``
    (Adam: ``"momentum"`` and ``"velocity"``); a variable without slots is missing.

    Args:
        optimizer: a built Keras optimizer (a loss-scale wrapper's ``inner_optimizer``).
        variables: the model variables it was built for.
    """
    prefixes = {v.path.replace("/", "_") + "_": v for v in variables}
    slots = {}
    for slot in optimizer.variables:
        name = slot.name
        # the longest variable prefix: "block_kernel_1_momentum" is block/kernel_1's
        for end in range(len(name) - 1, 0, -1):
            variable = prefixes.get(name[:end]) if name[end - 1] == "_" else None
            if variable is not None and tuple(variable.shape) == tuple(slot.shape):
                slots.setdefault(id(variable), {})[name[end:]] = slot
                break
    return slots


def variable_index(optimizer, variable):
    """The position, in the list the optimizer was built for, of the variable an
    ``update_step`` is given (a Keras variable, its TensorFlow variable or a replica's
    copy)."""
    return optimizer._get_variable_index(variable)


def preset_config(source):
    """``(config, backbone class, from_transformers)`` of a KerasHub preset name, handle
    or directory, reading its ``config.json`` only (a name or handle downloads it).
    ``from_transformers``: a Hugging Face checkpoint (``config`` is its ``config.json``);
    otherwise ``config["config"]`` holds the backbone's arguments."""
    from keras_hub.src.utils.preset_utils import get_preset_loader
    from keras_hub.src.utils.transformers.preset_loader import TransformersPresetLoader

    loader = get_preset_loader(source)
    return (loader.config, loader.check_backbone_class(),
            isinstance(loader, TransformersPresetLoader))
