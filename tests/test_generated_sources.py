"""The generated operator tables in csrc/aten match what their generator makes
from the installed torch's native_functions.yaml: a torch upgrade or an edit
to the generator that was not followed by a regeneration fails here."""

import os
import subprocess
import sys

import pytest

ATEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "csrc", "aten")


@pytest.mark.parametrize("command, generated", [("ops", "StructuredOps.cpp"),
                                                ("device-checks", "DeviceCheckTable.cpp"),
                                                ("sparse", "SparseOps.cpp"),
                                                ("stubs", "QueuedStubList.cpp"),
                                                ("host", "HostOps.cpp")])
def test_generated_file_is_current(command, generated):
    made = subprocess.run([sys.executable, os.path.join(ATEN, "gen_structured_ops.py"), command],
                          capture_output=True, text=True, check=True).stdout
    with open(os.path.join(ATEN, generated)) as f:
        checked_in = f.read()
    assert made == checked_in, (f"csrc/aten/{generated} is stale: rerun "
                                f"python csrc/aten/gen_structured_ops.py {command} > csrc/aten/{generated}")
