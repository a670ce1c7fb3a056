"""python -m torch_foo: the front door (versions, machine, configuration,
self-check) and `profile script.py`, which writes a chrome trace and a
memory snapshot beside the script."""

import json
import os
from importlib import metadata
import pickle
import subprocess
import sys

import pytest
import torch

from conftest import FOO_SIM_DEFAULTS


def _run(args, env=None, cwd=None, timeout=240):
    full_env = dict(os.environ, **FOO_SIM_DEFAULTS)
    full_env.update(env or {})
    full_env = {k: v for k, v in full_env.items() if v is not None}
    return subprocess.run([sys.executable, "-P", "-m", "torch_foo", *args], capture_output=True, text=True,
                          timeout=timeout, env=full_env, cwd=cwd or os.path.expanduser("~"))


@pytest.mark.slow  # a child process; the quick run keeps one
def test_front_door_reports_machine_configuration_and_self_check():
    result = _run([], env={"FOO_SIM_DEVICE_MEMORY": "1GiB", "FOO_SIM_DEVICE_COUNT": None, "FOO_SIM_TYPO": "3"})
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert f"torch     {torch.__version__}" in out
    assert f"torch_foo {metadata.version('torch_foo')}" in out
    assert "2 foo devices" in out
    for d in (0, 1):
        assert f"foo:{d}  " in out and "1.00 GiB" in out
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip().startswith("FOO_SIM_")}
    assert "from the environment" in lines["FOO_SIM_DEVICE_MEMORY"]
    assert lines["FOO_SIM_DEVICE_COUNT"].split()[1:] == ["2", "default"]
    assert "IGNORED" in lines["FOO_SIM_TYPO"]
    checks = [line for line in out.splitlines() if " stream " in line and ("PASS" in line or "FAIL" in line)]
    assert len(checks) == 4 and all("PASS" in line and "ms" in line for line in checks)
    assert "Self-check: PASS" in out


def test_front_door_fails_clearly_on_bad_configuration():
    result = _run([], env={"FOO_SIM_DEVICE_COUNT": "many"})
    assert result.returncode == 1
    assert "FOO_SIM_DEVICE_COUNT='many' is invalid" in result.stdout
    assert "Self-check: FAIL" in result.stdout


SCRIPT = """
import sys
import torch

model = torch.nn.Linear(32, 4).to("foo")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(int(sys.argv[1])):
    loss = model(torch.randn(16, 32, device="foo")).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
print("final loss", loss.item())
sys.exit(int(sys.argv[2]))
"""


@pytest.mark.slow  # a child process; the quick run keeps one
def test_profile_writes_trace_and_memory_snapshot_beside_the_script(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    result = _run(["profile", str(script), "2", "3"], cwd=str(tmp_path.parent))
    assert result.returncode == 3, result.stderr  # the script's own exit status
    assert "final loss" in result.stdout

    trace = json.loads((tmp_path / "train.foo_trace.json").read_text())
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    assert any(e["name"] == "foo_kernel<aten::addmm>" for e in kernels)

    with open(tmp_path / "train.foo_memory.pickle", "rb") as f:
        snapshot = pickle.load(f)
    allocs = [e for e in snapshot["device_traces"][0] if e["action"] == "alloc"]
    assert allocs and any(f["filename"] == str(script) for e in allocs for f in e["frames"])
    assert "add_local_files" in (tmp_path / "train.foo_memory.html").read_text()
    assert "foo_kernel<aten::addmm>" in result.stderr  # the key_averages table


@pytest.mark.slow  # a child process; the quick run keeps one
def test_profile_without_a_script_is_a_usage_error(tmp_path):
    assert _run(["profile"]).returncode == 2
    result = _run(["profile", str(tmp_path / "missing.py")])
    assert result.returncode == 2 and "no such script" in result.stderr
    assert _run(["frobnicate"]).returncode == 2
