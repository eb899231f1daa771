"""Undoing TensorFlow's allocator patch, so that the process reuses the memory it frees
(glibc's ``mallopt``; Linux only). Every generator of
:func:`nemot.data.batching.generator_dataset` calls :func:`keep_freed_memory` as it
starts, and so do the comparison's own generators.
"""

import ctypes
import os

# glibc's mallopt parameters (malloc.h) and the values keep_freed_memory sets: heap chunks
# up to 32 MiB (glibc's largest mmap threshold) and up to 256 MiB of freed heap kept.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD, _TRIM_THRESHOLD = 32 << 20, 256 << 20


def keep_freed_memory():
    """Let the process reuse the memory it frees, undoing TensorFlow's allocator patch.

    A TensorFlow generator dataset, when its iterator starts, sets glibc's
    ``M_TRIM_THRESHOLD`` to 128 KiB ("Memory patch applied" in its log), which also fixes
    the mmap threshold at 128 KiB: every buffer of 128 KiB or more is then a fresh ``mmap``
    whose pages fault in when first written and go back to the system when freed, and a
    training step allocates the same buffers again at every step. On the 2-core machine
    the comparison's training process spent ~45% of its CPU time in the kernel that way
    (83 million page faults in 20 minutes); with this setting, a short run of it took
    5.0 s of system time instead of 27.8 s (0.88 million page faults instead of 7.6;
    docs/performance.md). Where TensorFlow's oneDNN operations are on (its default on
    CPUs with AVX512_VNNI, AVX512_BF16, AMX and the like), its tensors come from oneDNN's
    pooling allocator instead, and the patch costs little.
    Freed heap memory up to 256 MiB is kept for reuse, and chunks up to 32 MiB come from
    the heap. Called by every generator of :func:`nemot.data.batching.generator_dataset`
    as it starts (after TensorFlow's patch). ``NEMOT_TF_MEMORY_PATCH=keep`` keeps
    TensorFlow's setting.

    Returns:
        whether the setting was made (False: the C library is not glibc, or the
        environment variable asks to keep TensorFlow's).
    """
    if os.environ.get("NEMOT_TF_MEMORY_PATCH") == "keep":
        return False
    libc = ctypes.CDLL(None)
    if not (hasattr(libc, "gnu_get_libc_version") and hasattr(libc, "mallopt")):
        return False
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
                and libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD))
