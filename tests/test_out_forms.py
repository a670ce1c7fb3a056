"""out= forms on foo follow ATen's out= rules, as CPU and CUDA do.

The rules (ATen's resize_output and the structured kernels' resize_out):
an out= tensor of the result's sizes keeps its strides; one of other sizes
is resized, with the "An output with one or more elements was resized"
warning if it had elements, and gets the strides CPU's kernel gives it (a
fresh result's for structured kernels, contiguous where the kernel calls
resize_output); a result that cannot be cast to the out= tensor's dtype raises; an
out= tensor on another device raises. All at the call, as on CPU.

The sweep below is derived from the installed torch, not from a list: every
aten overload with out= arguments (its schema has keyword-only written
tensors), reached through its functional form's calls in PyTorch's OpInfo
samples, is called in each case on CPU and on foo and compared.
`python tests/test_out_forms.py` prints how many out= overloads the samples
reach, by the kernel that serves them on foo.
"""
import collections
import re
import warnings

import pytest
import torch
from torch.testing._internal.common_methods_invocations import op_db
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

import torch_foo  # noqa: F401  (already autoloaded; explicit for readers)

RESIZED = "An output with one or more elements was resized"
# What foo refuses as CUDA does (tests/test_dtypes.py); CPU may take it.
CUDA_REFUSES = "as on CUDA (CUDA has no kernel"


def _is_out(a) -> bool:
    return a.kwarg_only and a.alias_info is not None and a.alias_info.is_write


def _full_name(schema) -> str:
    return f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name


def _out_overloads():
    """{functional overload's full name: [its out= overloads' schemas]}, for every aten out= overload."""
    schemas = [s for s in torch._C._jit_get_all_schemas() if s.name.startswith("aten::")]
    by_name = collections.defaultdict(list)
    for s in schemas:
        by_name[s.name].append(s)
    outs_of = collections.defaultdict(list)
    for s in schemas:
        if not any(_is_out(a) for a in s.arguments):
            continue
        inputs = [(a.name, str(a.type)) for a in s.arguments if not _is_out(a)]
        for f in by_name[s.name]:
            pure = not any(a.alias_info is not None and a.alias_info.is_write for a in f.arguments)
            if pure and [(a.name, str(a.type)) for a in f.arguments] == inputs:
                outs_of[_full_name(f)].append(s)
    return outs_of


OUTS_OF = _out_overloads()
OUT_OVERLOADS = {_full_name(s): s for ss in OUTS_OF.values() for s in ss}


def serving_kernel(name: str) -> str:
    """What runs `name` for foo's dense tensors, from the dispatcher's table."""
    for line in torch._C._dispatch_dump_table(name).splitlines():
        key, _, rest = line.partition(": ")
        if key == "PrivateUse1":
            kind = rest[rest.rfind("[") + 1:-1]
            return {"backend fallback": "foo's CPU fallback", "kernel": "a foo kernel",
                    "default backend kernel": "a composite kernel",
                    "math kernel": "a decomposition"}.get(kind, kind)
    return "nothing"


class _Recorder(TorchDispatchMode):
    """Records the first calls of functional overloads that have out= forms."""

    def __init__(self, calls):
        super().__init__()
        self.calls = calls

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = _full_name(func._schema)
        if name in OUTS_OF and name not in self.calls:
            keep = lambda v: v.detach().clone() if isinstance(v, torch.Tensor) else v  # noqa: E731
            self.calls[name] = (tree_map(keep, args), tree_map(keep, kwargs))
        return func(*args, **kwargs)


def functional_calls(op, count=3):
    """{functional overload: (args, kwargs)} of the out=-capable calls an OpInfo's CPU samples make."""
    dtypes = op.supported_dtypes("cpu")
    dtype = torch.float32 if torch.float32 in dtypes else min(dtypes, key=str, default=None)
    calls = {}
    if dtype is None:
        return calls
    try:
        samples = list(op.sample_inputs("cpu", dtype, requires_grad=False))[:count]
    except Exception:
        return calls
    for s in samples:
        try:
            with warnings.catch_warnings(), _Recorder(calls):
                warnings.simplefilter("ignore")
                op(s.input, *s.args, **s.kwargs)
        except Exception:
            pass
    return calls


# The Python bindings (torch.x, torch.nn.functional's, torch.linalg's, ...)
# turn ATen's warnings into Python warnings; torch.ops.aten's calls print them.
_BINDINGS = [torch._C._VariableFunctions, torch._C._nn, torch._C._linalg, torch._C._special, torch._C._fft]


def _call(name, args, kwargs, outs):
    """Calls out= overload `name`; True if through a Python binding (warnings seen)."""
    base = name[len("aten::"):].partition(".")[0]
    for module in _BINDINGS:
        if hasattr(module, base):
            try:
                getattr(module, base)(*args, **kwargs, **outs)
                return True
            except TypeError as e:
                if "argument" not in str(e):
                    raise
            break  # the binding takes other arguments (a Tensor method, say): call the overload
    _overload(name)(*args, **kwargs, **outs)
    return False


def _message(e) -> str:
    return re.sub(r"foo:\d|cpu", "DEVICE", str(e).split("\n")[0], flags=re.IGNORECASE)


def _results(result):
    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, (tuple, list)) and all(isinstance(r, (torch.Tensor, list, tuple)) for r in result):
        return list(result)
    return None


def _outs(case, want, names, device):
    def one(w):
        if case == "empty":
            return torch.empty(0, dtype=w.dtype, device=device)
        if case == "strided":    # the result's sizes, every stride doubled
            return torch.empty(*w.shape, 2, dtype=w.dtype, device=device)[..., 0]
        if case == "resize":     # elements, and sizes other than the result's
            return torch.empty(w.numel() + 1, dtype=w.dtype, device=device)
        if case == "dtype":      # a dtype the result cannot be cast to
            bad = torch.int64 if w.dtype.is_floating_point else torch.float32 if w.dtype.is_complex else torch.bool
            return torch.empty(0, dtype=bad, device=device)
        raise AssertionError(case)
    return {n: [one(x) for x in w] if isinstance(w, (list, tuple)) else one(w) for n, w in zip(names, want)}


def _flat(outs):
    return [t for v in outs.values() for t in (v if isinstance(v, list) else [v])]


class _Run:
    def __init__(self, name, args, kwargs, outs, device):
        move = lambda v: v.to(device) if isinstance(v, torch.Tensor) else v  # noqa: E731
        self.before = [(t.shape, t.numel()) for t in _flat(outs)]
        self.error = None
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            try:
                self.warned = _call(name, tree_map(move, args), tree_map(move, kwargs), outs)
            except Exception as e:
                self.error, self.warned = (type(e), _message(e)), True
            self.late = None
            if device == "foo":
                try:
                    torch.foo.synchronize()
                except RuntimeError as e:  # only the kernel found it: CPU raises at the call
                    self.late = _message(e)
        self.resize_warnings = sum(RESIZED in str(w.message) for w in seen)
        self.outs = _flat(outs)


def _overload(name):
    base, _, overload = name[len("aten::"):].partition(".")
    return getattr(getattr(torch.ops.aten, base), overload or "default")


def _unwritten(functional, args, kwargs, want):
    """Per flattened result, where CPU's kernel may write nothing (NaN in
    memory poisoned with NaN, for a result that is NaN there only when
    poisoned: ctc_loss's log_alpha past each target's length), or None."""
    deterministic = torch.are_deterministic_algorithms_enabled()
    fill = torch.utils.deterministic.fill_uninitialized_memory
    try:
        torch.use_deterministic_algorithms(True)
        torch.utils.deterministic.fill_uninitialized_memory = True
        poisoned = _results(_overload(functional)(*args, **kwargs))
    except Exception:
        return None
    finally:
        torch.use_deterministic_algorithms(deterministic)
        torch.utils.deterministic.fill_uninitialized_memory = fill
    flat = lambda r: [x for w in r for x in (w if isinstance(w, (list, tuple)) else [w])]  # noqa: E731
    masks = []
    for p, w in zip(flat(poisoned), flat(want)):
        exact = p.layout == torch.strided and (p.is_floating_point() or p.is_complex())
        # Where the kernel wrote nothing, the unpoisoned result may hold NaN too.
        unwritten = exact and p.shape == w.shape and bool((p.isnan() & ~w.isnan()).any())
        masks.append(p.isnan() if unwritten else None)
    return masks


def check_out_overload(name, functional, args, kwargs):
    """Every case of one out= overload on foo, against CPU and ATen's rules."""
    seeded = torch.Tag.nondeterministic_seeded in _overload(functional).tags
    names = [a.name for a in OUT_OVERLOADS[name].arguments if _is_out(a)]
    want = _results(_overload(functional)(*args, **kwargs))
    unwritten = None if seeded or want is None else _unwritten(functional, args, kwargs, want)
    if want is None or len(want) != len(names):
        return
    problems = {}
    for case in ("empty", "strided", "resize", "dtype"):
        if case == "strided" and any(isinstance(w, torch.Tensor) and w.dim() == 0 for w in want):
            continue
        for call in range(2 if case == "resize" else 1):  # the second call of a signature too
            torch.manual_seed(0)
            cpu = _Run(name, args, kwargs, _outs(case, want, names, "cpu"), "cpu")
            torch.manual_seed(0)
            foo = _Run(name, args, kwargs, _outs(case, want, names, "foo"), "foo")
            where = f"{case}#{call}"
            if foo.late:
                problems[where] = f"raised when the stream was synchronized, not at the call: {foo.late}"
                break
            if foo.error and CUDA_REFUSES in foo.error[1]:
                break
            if (cpu.error is None) != (foo.error is None) or (cpu.error and cpu.error[0] != foo.error[0]):
                problems[where] = f"CPU raised {cpu.error}, foo {foo.error}"
                break
            if cpu.error:
                break
            # As many as CPU's kernel gives: one per resized output that had
            # elements, or none from kernels that resize with resize_
            # (bernoulli.out, multinomial.out).
            if foo.warned and cpu.warned and foo.resize_warnings != cpu.resize_warnings:
                resized = sum(n > 0 and tuple(s) != tuple(t.shape) for (s, n), t in zip(foo.before, foo.outs))
                problems[where] = (f"{foo.resize_warnings} resize warnings for {resized} resized outputs, "
                                   f"CPU gives {cpu.resize_warnings}")
            fresh = [x for w in want for x in (w if isinstance(w, (list, tuple)) else [w])]
            for w, c, f, unset in zip(fresh, cpu.outs, foo.outs, unwritten or [None] * len(fresh)):
                if (f.shape, f.dtype) != (w.shape, c.dtype):
                    problems[where] = f"foo gave {f.shape} {f.dtype}, expected {w.shape} {c.dtype}"
                    continue
                # Right-sized outputs keep their strides; others take those
                # CPU's kernel gives them (a fresh result's for structured
                # kernels, contiguous for those that call resize_output).
                strides = [2 * s for s in torch.empty(w.shape).stride()] if case == "strided" else c.stride()
                if any(a != b for a, b, n in zip(f.stride(), strides, f.shape) if n > 1):
                    problems[where] = f"strides {f.stride()}, expected {tuple(strides)}"
                if seeded:
                    continue
                expected, c, got = w.to(f.dtype), c, f.cpu()
                if unset is not None:  # elements the kernel leaves unwritten hold anything
                    expected, c, got = expected[~unset], c[~unset], got[~unset]
                try:
                    torch.testing.assert_close(c, expected, equal_nan=True)
                except AssertionError:
                    continue  # CPU's own out= kernel gets this case wrong (gelu into strided outputs)
                try:
                    torch.testing.assert_close(got, expected, equal_nan=True)
                except AssertionError as e:
                    problems[where] = str(e).split("\n")[0]
    assert not problems, f"{name}: {problems}"


# out= overloads where foo still differs from CPU, with why. Their
# OpInfo's case xfails while these are its only problems.
KNOWN_DIFFERENCES = {}


def _op_name(op):
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


# The quick run (``-m "not slow"``) sweeps these only: out= overloads served
# by a foo kernel, a composite kernel and foo's CPU fallback; one and several
# outputs; results that resize_output sizes (nonzero); a seeded operator
# (normal).
QUICK_OPS = {"add", "sum", "cumsum", "matmul", "mode", "sort", "nonzero", "linalg.qr", "nn.functional.max_pool2d",
             "fft.fft", "index_put", "normal"}


@pytest.mark.parametrize("op", [pytest.param(op, id=_op_name(op),
                                             marks=() if _op_name(op) in QUICK_OPS else pytest.mark.slow)
                                for op in op_db])
def test_out_forms_reached_by_opinfo_samples_follow_aten_rules(op):
    calls = functional_calls(op)
    reached = [(s, f) for f in calls for s in (_full_name(x) for x in OUTS_OF[f])]
    if not reached:
        pytest.skip("its samples reach no operator with an out= form")
    failures, known = [], []
    for name, functional in reached:
        try:
            check_out_overload(name, functional, *calls[functional])
        except AssertionError as e:
            if name in KNOWN_DIFFERENCES:
                known.append(f"{name}: {KNOWN_DIFFERENCES[name]}")
            else:
                failures.append(str(e).split("\n")[0])
    assert not failures, "\n".join(failures)
    if known:
        pytest.xfail("; ".join(known))


def test_the_derivation_finds_the_out_forms_users_call():
    assert {"aten::mode.values", "aten::normal.Tensor_float_out", "aten::nonzero.out",
            "aten::mul.out"} <= set(OUT_OVERLOADS)
    assert "aten::mode.values" in [_full_name(s) for s in OUTS_OF["aten::mode"]]


def test_out_to_a_cpu_tensor_raises_at_the_call():
    x = torch.randn(3, 4, device="foo")
    for call in (lambda out: torch.mode(x, 1, out=out), lambda out: torch.nonzero(x, out=out[1]),
                 lambda out: torch.logit(x, out=out[0]), lambda out: torch.linalg.qr(x, out=out)):
        with pytest.raises(RuntimeError, match="device"):
            call((torch.empty(0), torch.empty(0, dtype=torch.long)))


# ---------------------------------------------------------------- the repros

def test_mode_out_equals_cpu():
    x = torch.tensor([[1., 2, 2, 3], [3, 3, 1, 0]])
    values, indices = torch.empty(0), torch.empty(0, dtype=torch.long)
    torch.mode(x, 1, out=(values, indices))
    got = (torch.empty(0, device="foo"), torch.empty(0, dtype=torch.long, device="foo"))
    torch.mode(x.to("foo"), 1, out=got)
    assert torch.equal(got[0].cpu(), values) and torch.equal(got[1].cpu(), indices)


def test_normal_out_takes_the_shape_of_its_out_tensor():
    mean = torch.zeros(2, 3, device="foo")
    out = torch.empty(2, 3, device="foo")
    assert torch.normal(mean, 1.0, out=out) is out
    assert out.shape == (2, 3) and out.std().item() > 0
    torch.normal(mean, torch.ones(2, 3, device="foo"), out=out)
    torch.normal(0.0, torch.ones(2, 3, device="foo"), out=out)
    torch.foo.synchronize()


def _late_error_cases():
    """out= calls whose errors CPU's kernels find and the meta functions do not."""
    x = torch.rand(3, 4)
    upper = torch.rand(4, 4).triu() + 4 * torch.eye(4)
    pooled, indices = torch.nn.functional.max_pool3d(torch.rand(1, 2, 4, 4, 4), 2, return_indices=True)
    long_out = lambda d: torch.empty(0, dtype=torch.long, device=d)  # noqa: E731
    return {
        "mean": ((x,), lambda x, d: torch.mean(x, 1, out=long_out(d))),
        "norm": ((x,), lambda x, d: torch.norm(x, 2, 1, out=long_out(d))),
        "angle": ((x,), lambda x, d: torch.angle(x, out=long_out(d))),
        "nansum": ((x,), lambda x, d: torch.nansum(x, 1, out=long_out(d))),
        "solve_triangular": ((upper, x.t()), lambda a, b, d: torch.linalg.solve_triangular(a, b, upper=True,
                                                                                           out=long_out(d))),
        "normal_Tensor_Tensor": ((x, x), lambda m, s, d: torch.normal(m, s, out=long_out(d))),
        "normal_Tensor_float": ((x,), lambda m, d: torch.normal(m, 1.0, out=long_out(d))),
        "normal_float_Tensor": ((x,), lambda s, d: torch.normal(0.0, s, out=long_out(d))),
        "normal_Tensor_float_empty_out": ((x,), lambda m, d: torch.normal(m, 1.0, out=torch.empty(0, device=d))),
        "max_unpool3d_strided_out": ((pooled, indices), lambda p, i, d: torch._C._nn.max_unpool3d(
            p, i, (4, 4, 4), (2, 2, 2), (0, 0, 0), out=torch.empty(1, 2, 4, 4, 8, device=d)[..., ::2])),
    }


@pytest.mark.parametrize("case", list(_late_error_cases()))
def test_out_errors_only_cpu_kernels_find_raise_at_the_call(case):
    tensors, call = _late_error_cases()[case]
    with pytest.raises(Exception) as on_cpu:
        call(*tensors, "cpu")
    torch.foo.synchronize()
    with pytest.raises(type(on_cpu.value)) as on_foo:
        call(*(t.to("foo") for t in tensors), "foo")
    assert _message(on_foo.value) == _message(on_cpu.value)
    torch.foo.synchronize()  # nothing left queued that fails later


@pytest.mark.parametrize("rows", [3, 1], ids=["right-size", "resized"])
def test_nonzero_out_layout_equals_cpu(rows):
    x = torch.tensor([[1, 0, 2], [0, 3, 0]])
    want = torch.empty(2, rows, dtype=torch.long).t()     # non-contiguous
    got = torch.empty(2, rows, dtype=torch.long, device="foo").t()
    with warnings.catch_warnings(record=True) as cpu_warnings:
        warnings.simplefilter("always")
        torch.nonzero(x, out=want)
    with warnings.catch_warnings(record=True) as foo_warnings:
        warnings.simplefilter("always")
        torch.nonzero(x.to("foo"), out=got)
    assert (got.shape, got.stride()) == (want.shape, want.stride())
    assert torch.equal(got.cpu(), want)
    assert len(foo_warnings) == len(cpu_warnings) == (rows != 3)


DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
          torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128]


def _sparse_mul_(sparse_dtype, dense_dtype, device):
    s = torch.tensor([[0, 1], [2, 0]], device=device).to(sparse_dtype).to_sparse()
    d = torch.tensor([[1, 2], [3, 4]], device=device).to(dense_dtype)
    try:
        s.mul_(d)
    except RuntimeError as e:
        return type(e), str(e)
    return s.dtype, s.to_dense().cpu()


def test_sparse_mul_inplace_raises_where_cpu_raises():
    raised = 0
    for a in DTYPES:
        for b in DTYPES:
            want, got = _sparse_mul_(a, b, "cpu"), _sparse_mul_(a, b, "foo")
            if want[0] is RuntimeError:
                raised += 1
                assert got == want, (a, b)
            else:
                assert got[0] == want[0] and torch.equal(got[1], want[1]), (a, b)
    assert raised > 0  # the pairs CPU refuses are still among them


def coverage():
    """How many aten out= overloads the OpInfo samples reach, by what serves them on foo."""
    reached = set()
    for op in op_db:
        for f in functional_calls(op):
            reached.update(_full_name(s) for s in OUTS_OF[f])
    total = collections.Counter(serving_kernel(n) for n in OUT_OVERLOADS)
    hit = collections.Counter(serving_kernel(n) for n in reached)
    for kind in sorted(total):
        print(f"{kind}: {hit[kind]} of {total[kind]} out= overloads reached")
    print(f"all: {len(reached)} of {len(OUT_OVERLOADS)}")


if __name__ == "__main__":
    coverage()
