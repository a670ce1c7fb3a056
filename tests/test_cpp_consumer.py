"""C++ programs on foo: examples/cpp is configured with find_package(Torch)
and find_package(TorchFoo) from the installed package, built with Ninja,
and run without Python."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

import torch_foo

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "cpp"


def _run(cmd, env=None, check=True):
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=900, env=env)
    if check:
        assert result.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{result.stdout}\n{result.stderr}"
    return result


def _configure(source: Path, build: Path, prefix_path: str, check=True):
    launcher = ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"] if shutil.which("ccache") else []
    return _run(["cmake", "-S", source, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                 f"-DCMAKE_PREFIX_PATH={prefix_path}", *launcher], check=check)


def _program_env() -> dict:
    env = dict(os.environ)
    # libtorch_foo finds torch's libraries beside itself (RUNPATH
    # $ORIGIN/../../torch/lib), as pip installs them. In an environment that
    # takes torch from another site-packages (a venv with
    # --system-site-packages), the program is told where torch's are.
    torch_lib = Path(torch.__file__).parent / "lib"
    if Path(torch_foo.__file__).parent.parent != Path(torch.__file__).parent.parent:
        env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(torch_lib), env.get("LD_LIBRARY_PATH")]))
    return env


@pytest.fixture(scope="module")
def example_build(tmp_path_factory):
    build = tmp_path_factory.mktemp("cpp_example") / "build"
    _configure(EXAMPLE, build, f"{torch.utils.cmake_prefix_path};{torch_foo.cmake_prefix_path}")
    _run(["cmake", "--build", build, "--parallel", "2"])
    return build


def test_linking_the_package_registers_foo_without_naming_it(example_build):
    # devices.cpp uses only c10 and ATen: the backend's name, guard, hooks,
    # allocators and generator come from loading libtorch_foo.
    out = _run([example_build / "devices"], env=_program_env()).stdout
    for piece in ("name", "guard", "hooks", "allocator", "pinned", "generator", "accelerator"):
        assert f"{piece} " in out and "MISSING" not in out, out
    assert "foo:0 is ready" in out


def test_training_on_foo_matches_cpu(example_build):
    out = _run([example_build / "train_mlp"], env=_program_env()).stdout
    assert out.count("step ") == 5 and "MISMATCH" not in out, out
    assert out.strip().endswith("foo matches cpu"), out


def test_the_program_sees_the_simulated_machine(example_build):
    env = dict(_program_env(), FOO_SIM_DEVICE_COUNT="3")
    assert "training on foo:0 (3 foo devices)" in _run([example_build / "train_mlp"], env=env).stdout


def test_package_refuses_another_torch_version(tmp_path):
    # A program that found another torch: TorchFoo fails at configure time,
    # naming the version it needs, instead of building a program that
    # would load two torches.
    fake = tmp_path / "fake_torch" / "share" / "cmake" / "Torch"
    fake.mkdir(parents=True)
    (fake / "TorchConfig.cmake").write_text("set(TORCH_LIBRARIES torch)\n")
    (fake / "TorchConfigVersion.cmake").write_text(
        'set(PACKAGE_VERSION "2.0.0")\n'
        'set(PACKAGE_VERSION_COMPATIBLE TRUE)\n'
        'if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)\n  set(PACKAGE_VERSION_EXACT TRUE)\nendif()\n')
    consumer = tmp_path / "consumer"
    consumer.mkdir()
    (consumer / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.21)\nproject(consumer LANGUAGES CXX)\n"
        "find_package(Torch REQUIRED)\nfind_package(TorchFoo REQUIRED)\n")
    result = _configure(consumer, tmp_path / "build", f"{fake.parents[2]};{torch_foo.cmake_prefix_path}", check=False)
    assert result.returncode != 0
    assert torch.__version__.split("+")[0] in result.stdout + result.stderr


@pytest.fixture(scope="module")
def consumer_build(tmp_path_factory):
    build = tmp_path_factory.mktemp("cpp_consumer") / "build"
    # Only torch_foo's prefix: TorchFoo finds the torch it needs, beside
    # itself or, in a split environment, on the prefix path given here.
    prefix = torch_foo.cmake_prefix_path
    if Path(torch_foo.__file__).parent.parent != Path(torch.__file__).parent.parent:
        prefix += f";{torch.utils.cmake_prefix_path}"
    _configure(ROOT / "tests" / "cpp_consumer", build, prefix)
    _run(["cmake", "--build", build, "--parallel", "2"])
    return build


def test_the_race_detector_checks_cpp_programs(consumer_build, example_build):
    # FOO_SIM_RACE_CHECK alone, as for a Python program: the operator hooks
    # that declare accesses come with libtorch_foo.
    env = dict(_program_env(), FOO_SIM_RACE_CHECK="raise")
    out = _run([consumer_build / "unordered_read"], env=env).stdout
    assert out.startswith("race: torch_foo found a stream race"), out
    # The example orders its streams with events: no race there.
    assert _run([example_build / "train_mlp"], env=env).stdout.strip().endswith("foo matches cpu")
