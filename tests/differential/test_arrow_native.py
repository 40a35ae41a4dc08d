"""The native Arrow builder of the changes view against the pure-Python batches, on every corpus file.

Both sides read the same range the same way (`binlake.spark.read.batches`); the
pure side runs with the native core switched off (`core.use_pure`), so its
values come from binlake/read/values.py and their texts from spark/exact.py.
Batches must be equal one by one (same boundaries), and a file that fails
must fail the same way on both sides (error class, offset, row).
"""

from __future__ import annotations

import pytest

pa = pytest.importorskip("pyarrow")

from binlake import core  # noqa: E402
from binlake.spark.read.batches import CHANGES, _native_change_batches, _python_change_batches  # noqa: E402
from binlake.spark.read.ranges import Split  # noqa: E402
from differential.loop_checks import View, corpus_binlogs, corpus_path  # noqa: E402

native = core.native()
pytestmark = pytest.mark.skipif(native is None, reason="native core not built")

VIEW = View(CHANGES, _python_change_batches, _native_change_batches)


@pytest.mark.parametrize("path", corpus_binlogs())
def test_native_change_batches_equal_pure(path):
    VIEW.assert_same(Split(corpus_path(path), 1), {})
