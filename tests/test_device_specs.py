"""The device specs for transformers, diffusers and PyTorch's own test machinery, and
``python -m torch_foo testing-paths``, which says where they are."""

import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from conftest import FOO_SIM_DEFAULTS
from torch_foo.testing import SPEC_FILES


def _run(args, cwd, env=None, timeout=600):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "FOO_SIM_"))}
    full_env.update(FOO_SIM_DEFAULTS)
    full_env.update(env or {})
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=full_env)


def test_testing_paths_prints_the_spec_files(tmp_path, capsys):
    result = _run(["-P", "-m", "torch_foo", "testing-paths"], tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split()[:2] for line in lines] == [["transformers", "TRANSFORMERS_TEST_DEVICE_SPEC"],
                                                    ["diffusers", "DIFFUSERS_TEST_DEVICE_SPEC"],
                                                    ["torch", "TORCH_TEST_DEVICES"]]
    for line in lines:
        assert os.path.isfile(line.split()[2])
    # The other forms through the same entry, in this process (a child costs a torch import).
    from torch_foo._cli.main import main

    capsys.readouterr()
    assert main(["testing-paths", "torch"]) == 0
    assert capsys.readouterr().out.strip() == SPEC_FILES["TORCH_TEST_DEVICES"]
    assert main(["testing-paths", "jax"]) == 2
    assert "expected one of transformers, diffusers, torch" in capsys.readouterr().err


TINY_MODEL_TEST = """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.testing_utils import (backend_device_count, backend_empty_cache, backend_manual_seed,
                                            backend_memory_allocated, backend_synchronize,
                                            require_torch_accelerator, torch_device)


    def test_the_spec_makes_foo_the_test_device():
        assert torch_device == "foo"
        assert backend_device_count(torch_device) == 2
        backend_manual_seed(torch_device, 3)
        a = torch.randn(4, device=torch_device)
        backend_manual_seed(torch_device, 3)
        assert torch.equal(a, torch.randn(4, device=torch_device))
        held = torch.empty(1 << 20, device=torch_device)
        backend_synchronize(torch_device)
        assert backend_memory_allocated(torch_device) >= 4 << 20
        del held
        backend_empty_cache(torch_device)


    @require_torch_accelerator
    def test_a_tiny_llama_on_foo_matches_the_cpu():
        config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
        torch.manual_seed(0)
        model = LlamaForCausalLM(config).eval()
        ids = torch.randint(0, 64, (2, 10))
        with torch.no_grad():
            expected = model(ids).logits
            model.to(torch_device)
            logits = model(ids.to(torch_device)).logits
            generated = model.generate(ids.to(torch_device), max_new_tokens=5, do_sample=False)
        torch.testing.assert_close(logits.cpu(), expected, rtol=1e-4, atol=1e-4)
        assert generated.shape == (2, 15) and generated.device.type == "foo"
"""


def test_transformers_model_tests_run_on_foo_with_the_spec(tmp_path):
    # Not in requirements-dev.txt: it would double the packages a CI install
    # resolves. Checked against transformers 5.24.0.
    pytest.importorskip("transformers", reason="transformers is not installed (pip install transformers==5.24.0)")
    # As docs/guide/testing-your-library.md says: a file beside the tests that imports the spec.
    (tmp_path / "foo_spec.py").write_text("from torch_foo.testing.transformers_device_spec import *  # noqa\n")
    (tmp_path / "test_tiny_model.py").write_text(textwrap.dedent(TINY_MODEL_TEST))
    result = _run(["-m", "pytest", "-p", "no:cacheprovider", "-q", "--foo"], tmp_path,
                  env={"TRANSFORMERS_TEST_DEVICE_SPEC": "foo_spec.py"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout


def _load_spec(variable):
    spec = importlib.util.spec_from_file_location(f"foo_spec_{variable.lower()}", SPEC_FILES[variable])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_transformers_spec_works_outside_transformers(foo):
    # Imported with transformers' testing_utils absent (where transformers is
    # not installed, say), its functions still act on foo.
    module = _load_spec("TRANSFORMERS_TEST_DEVICE_SPEC")
    assert module.DEVICE_NAME == "foo" and module.DEVICE_COUNT_FN() == 2
    module.MANUAL_SEED_FN(5)
    a = torch.rand(3, device="foo")
    module.MANUAL_SEED_FN(5)
    assert torch.equal(a, torch.rand(3, device="foo"))
    module.EMPTY_CACHE_FN()
    assert sorted(module.__all__) == ["DEVICE_COUNT_FN", "DEVICE_NAME", "EMPTY_CACHE_FN", "MANUAL_SEED_FN"]


def test_the_diffusers_spec_has_the_keys_diffusers_reads(foo):
    module = _load_spec("DIFFUSERS_TEST_DEVICE_SPEC")
    assert module.DEVICE_NAME == "foo" and module.SUPPORTS_TRAINING is True
    assert module.DEVICE_COUNT_FN() == 2
    module.MANUAL_SEED_FN(0)
    held = torch.ones(1 << 18, device="foo")
    module.RESET_PEAK_MEMORY_STATS_FN()
    module.RESET_MAX_MEMORY_ALLOCATED_FN()
    assert module.MAX_MEMORY_ALLOCATED_FN() >= 1 << 20
    del held
    module.EMPTY_CACHE_FN()
    assert sorted(module.__all__) == sorted(
        ["DEVICE_NAME", "MANUAL_SEED_FN", "EMPTY_CACHE_FN", "DEVICE_COUNT_FN", "SUPPORTS_TRAINING",
         "RESET_PEAK_MEMORY_STATS_FN", "RESET_MAX_MEMORY_ALLOCATED_FN", "MAX_MEMORY_ALLOCATED_FN"])


# An upstream-style device-generic test file (ours): per-device dtypes, CUDA-only tests, CUDA skips,
# device-type branches, an OpInfo test.
GENERIC_TESTS = """
    import torch
    from torch.testing._internal.common_device_type import (
        dtypes, dtypesIfCUDA, expectedFailureCUDA, instantiate_device_type_tests, onlyCPU, onlyCUDA, ops,
        skipCUDAIf)
    from torch.testing._internal.common_methods_invocations import op_db
    from torch.testing._internal.common_utils import TestCase

    BILINEAR = [op for op in op_db if op.name == "nn.functional.interpolate" and op.variant_test_name == "bilinear"]
    HALF_FFT = [op for op in op_db if op.name == "fft.fft"]


    class TestGeneric(TestCase):
        @dtypes(torch.float32, torch.uint8)
        @dtypesIfCUDA(torch.float32, torch.half)
        def test_dtypes(self, device, dtype):
            torch.ones(2, device=device, dtype=dtype)

        @onlyCUDA
        def test_cuda_only(self, device):
            self.assertEqual(torch.ones(2, device=device).sum().item(), 2)

        @onlyCPU
        def test_cpu_only(self, device):
            pass

        @skipCUDAIf(True, "not on CUDA")
        def test_skipped_on_cuda(self, device):
            pass

        @expectedFailureCUDA
        def test_fails_on_cuda(self, device):
            raise RuntimeError("as CUDA does")

        def test_branches(self, device):
            self.assertTrue(self.device_type == "cuda" and self.device_type == "foo")
            self.assertEqual(torch.device(device).type, "foo")

        @onlyCUDA
        def test_uses_torch_cuda(self, device):
            torch.cuda.synchronize()

        @ops(BILINEAR)
        def test_bilinear(self, device, dtype, op):
            sample = next(iter(op.sample_inputs(device, dtype)))
            op(sample.input, *sample.args, **sample.kwargs)

        @ops(HALF_FFT, allowed_dtypes=(torch.half, torch.float32))
        def test_fft(self, device, dtype, op):
            sample = next(iter(op.sample_inputs(device, dtype)))
            op(sample.input, *sample.args, **sample.kwargs)


    instantiate_device_type_tests(TestGeneric, globals())
"""


def test_torch_test_devices_judges_foo_by_cudas_rules(tmp_path):
    (tmp_path / "test_generic.py").write_text(textwrap.dedent(GENERIC_TESTS))
    result = _run(["-m", "pytest", "-p", "no:cacheprovider", "-rA", "-q"], tmp_path,
                  env={"TORCH_TEST_DEVICES": SPEC_FILES["TORCH_TEST_DEVICES"], "PYTORCH_TESTING_DEVICE_ONLY_FOR": "foo"})
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    outcomes = {}
    for line in out.splitlines():
        for word in ("PASSED", "SKIPPED", "XFAIL", "FAILED"):
            if line.startswith(word + " "):
                outcomes[line.split("::")[-1].split(" ")[0]] = word
    assert "PRIVATEUSE1" not in out  # the generic class, by CPU's rules, is replaced
    assert outcomes["test_dtypes_foo_float32"] == outcomes["test_dtypes_foo_float16"] == "PASSED"
    assert "test_dtypes_foo_uint8" not in outcomes  # CPU's dtype, which CUDA's run never asks for
    assert outcomes["test_cuda_only_foo"] == "PASSED" and outcomes["test_branches_foo"] == "PASSED"
    assert "test_cpu_only_foo" not in outcomes or outcomes["test_cpu_only_foo"] == "SKIPPED"
    assert "not on CUDA" in out and "Only runs on cpu" in out
    assert "uses torch.cuda or a 'cuda' device itself" in out
    bilinear = sorted(name for name in outcomes if name.startswith("test_bilinear"))
    assert bilinear and not any(name.endswith("uint8") for name in bilinear)
    assert all(outcomes[name] == "PASSED" for name in bilinear)
    assert "foo has no half or complex32 FFT" in out  # a known difference, skipped with its reason
    assert outcomes["test_fft_fft_fft_foo_float32"] == "PASSED"
