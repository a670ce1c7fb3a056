"""Builds foo_sim on its own with CMake and runs its C++ tests with ctest,
plain and under AddressSanitizer and ThreadSanitizer; the plain build is
then installed and a separate project is built against the package."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # three CMake builds of foo_sim

ROOT = Path(__file__).resolve().parents[1]
FOO_SIM = ROOT / "third_party" / "foo_sim"


def _run(cmd, **kwargs):
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kwargs)
    assert result.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def _configure_and_build(build_dir: Path, *options: str) -> None:
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    # With ccache, a rerun of the suite compiles only what changed (the
    # three builds are most of the full run's time otherwise).
    launcher = ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"] if shutil.which("ccache") else []
    _run(["cmake", "-S", FOO_SIM, "-B", build_dir, *generator, *launcher, *options])
    _run(["cmake", "--build", build_dir, "--parallel", "2"])


@pytest.mark.parametrize("sanitizer", ["", "address", "thread"])
def test_foo_sim_ctest(tmp_path, sanitizer):
    build, prefix = tmp_path / "build", tmp_path / "prefix"
    # Sanitized builds unoptimized: they compile in a third of the time,
    # and the sanitizers see the same accesses. The plain build optimized,
    # without debug information (a fifth faster to build than with it).
    build_type = "Debug" if sanitizer else "Release"
    _configure_and_build(build, f"-DFOO_SIM_SANITIZER={sanitizer}", f"-DCMAKE_BUILD_TYPE={build_type}",
                         f"-DCMAKE_INSTALL_PREFIX={prefix}")
    env = dict(os.environ)
    if sanitizer == "address":
        env["ASAN_OPTIONS"] = "detect_leaks=1:abort_on_error=1"
    if sanitizer == "thread":
        env["TSAN_OPTIONS"] = "halt_on_error=1:second_deadlock_stack=1"
    out = _run(["ctest", "--test-dir", build, "--output-on-failure", "--parallel", "4"], env=env)
    assert "100% tests passed" in out
    assert "WARNING: ThreadSanitizer" not in out and "ERROR: AddressSanitizer" not in out
    if not sanitizer:
        _check_installed_package_works_with_find_package(build, prefix, tmp_path)


def _check_installed_package_works_with_find_package(build, prefix, tmp_path):
    """The plain build, installed, serves a separate project through find_package(foo_sim)."""
    _run(["cmake", "--install", build])
    consumer_build = tmp_path / "consumer"
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    _run(["cmake", "-S", ROOT / "tests" / "foo_sim_consumer", "-B", consumer_build, *generator,
          f"-DCMAKE_PREFIX_PATH={prefix}"])
    _run(["cmake", "--build", consumer_build])
    env = dict(os.environ, FOO_SIM_DEVICE_COUNT="3")
    assert _run([consumer_build / "consumer"], env=env).strip() == "devices=3 value=1234"
