"""Operators on foo: asynchrony, stream order, missing synchronization,
kernel errors, the fallback, several devices."""

import json
import warnings

import pytest
import torch

from conftest import held_stream, run_python, run_python_json


def test_host_returns_before_the_kernel_finishes(foo):
    x = torch.ones(1000, device="foo")
    with held_stream() as still_held:
        y = (x + 1).relu().sum()                 # queued behind the gate, not run
        assert still_held() and not foo.current_stream().query()
    assert y.item() == 2000.0                    # the read waits for it
    assert foo.current_stream().query()


def test_work_on_a_stream_runs_in_order(foo):
    x = torch.zeros(100, device="foo")
    for i in range(1, 51):
        x.mul_(0).add_(i)                        # each result depends on the order
    assert x.cpu().eq(50).all()


def test_missing_synchronization_is_real_and_wait_stream_fixes_it():
    code = """
        import json, torch
        foo = torch.foo
        def read_on_side_stream(wait):
            x = torch.zeros(1000, device="foo")
            foo.synchronize()
            x.add_(1)
            x.add_(1)                            # x becomes 2 on the default stream, 400 ms from now
            side = foo.Stream()
            if wait:
                side.wait_stream(foo.current_stream())
            with foo.stream(side):
                y = x.clone()                    # starts 200 ms from now without the wait
            foo.synchronize()                    # y is written on side, read here on the default stream
            return y.cpu().max().item()
        print(json.dumps([read_on_side_stream(False), read_on_side_stream(True)]))
    """
    stale, synced = run_python_json(code, env={"FOO_SIM_LAUNCH_DELAY_US": "200000"})
    assert stale < 2.0    # read before the default stream's second add
    assert synced == 2.0


def test_launch_blocking_makes_launches_synchronous():
    out = run_python_json("""
        import json, torch
        x = torch.ones(10, device="foo")
        torch.foo._sleep(200)                # returns only once the kernel ran
        done = [torch.foo.current_stream().query()]
        y = x * 2
        done.append(torch.foo.current_stream().query())
        print(json.dumps(done))
    """, env={"FOO_SIM_LAUNCH_BLOCKING": "1"})
    assert out == [True, True]


def test_a_kernel_error_surfaces_at_synchronization_naming_the_operator(foo):
    x = torch.arange(3.0, device="foo")
    index = torch.tensor([10], device="foo")
    y = torch.gather(x, 0, index)                # checked only when the kernel runs
    with pytest.raises(RuntimeError, match=r"aten::gather.*out of bounds"):
        foo.synchronize()
    assert (x + 1).cpu().tolist() == [1.0, 2.0, 3.0]   # the device stays usable
    del y


def test_shape_errors_are_raised_at_the_call(foo):
    with pytest.raises(RuntimeError, match="must match the size"):
        torch.ones(3, device="foo") + torch.ones(4, device="foo")
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        torch.ones(2, 3, device="foo") @ torch.ones(2, 3, device="foo")


def test_fallback_lists_and_warns_once_per_operator():
    out = run_python("""
        import warnings, torch
        x = torch.arange(6.0, device="foo").reshape(2, 3)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            a = torch.roll(x, 1, 0)
            b = torch.roll(x, 1, 1)
        print(sum("aten::roll" in str(w.message) for w in caught))
        print("aten::roll" in torch.foo.fallback_ops(), "aten::add.Tensor" in torch.foo.fallback_ops())
        print(a.cpu().tolist(), b.cpu().tolist())
    """, env={"FOO_WARN_FALLBACK": "1"})
    assert out.splitlines() == ["1", "True False", "[[3.0, 4.0, 5.0], [0.0, 1.0, 2.0]] [[2.0, 0.0, 1.0], [5.0, 3.0, 4.0]]"]


def test_malformed_fallback_warning_switch_is_reported_and_off():
    out = run_python("""
        import json, warnings, torch
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            x = torch.arange(6.0, device="foo")
            torch.histc(x, bins=3).cpu()  # no foo kernel: the fallback
        print(json.dumps([str(w.message) for w in caught]))
    """, env={"FOO_WARN_FALLBACK": "yes"})
    warned = json.loads(out)
    assert len(warned) == 1, warned  # the switch's own warning, none per operator
    assert warned[0].startswith("FOO_WARN_FALLBACK='yes' is invalid: expected 0 or 1; fallback warnings stay off")


def test_data_dependent_shapes_go_through_the_fallback(foo):
    x = torch.tensor([0.0, 3.0, 0.0, 5.0], device="foo")
    assert torch.nonzero(x).cpu().flatten().tolist() == [1, 3]
    assert x[x > 1].cpu().tolist() == [3.0, 5.0]
    values, counts = torch.unique(torch.tensor([2, 1, 2, 2], device="foo"), return_counts=True)
    assert values.cpu().tolist() == [1, 2] and counts.cpu().tolist() == [1, 3]


def test_fallback_results_follow_each_calls_arguments(foo):
    # The fallback remembers an operator's meta results by the call's
    # signature: each call must still get outputs of its own shape, dtype
    # and device (im2col and histc have no foo kernel).
    for device in ("foo:0", "foo:1"):
        for dtype in (torch.float32, torch.float64):
            for size, kernel, stride in ((5, 2, 1), (5, 3, 1), (6, 2, 2), (5, 2, 1)):
                x = torch.arange(2 * size * size, dtype=dtype).reshape(1, 2, size, size)
                got = torch.nn.functional.unfold(x.to(device), kernel, stride=stride)
                want = torch.nn.functional.unfold(x, kernel, stride=stride)
                assert got.device == torch.device(device) and got.dtype == dtype
                assert torch.equal(got.cpu(), want)
    x = torch.arange(10.0)
    for bins in (3, 7, 3):
        assert torch.equal(torch.histc(x.to("foo"), bins=bins).cpu(), torch.histc(x, bins=bins))


def test_fallback_raises_for_bad_arguments_on_every_call(foo):
    x = torch.ones(1, 1, 3, 3, device="foo")
    torch.nn.functional.unfold(x, 2)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="im2col|kernel"):
            torch.nn.functional.unfold(x, 4)  # a kernel larger than the input
    foo.synchronize()


def test_fallback_uses_a_redefined_custom_operators_new_meta_function(foo):
    # Custom operators' meta functions may be redefined (and may count their
    # calls): the fallback asks each one every time.
    calls = []
    for factor in (1, 2):
        lib = torch.library.Library("foo_test_meta", "DEF")
        try:
            lib.define("stretch(Tensor x) -> Tensor")
            lib.impl("stretch", lambda x, f=factor: x.repeat(f), "CPU")
            lib.impl("stretch", lambda x, f=factor: (calls.append(f), x.new_empty(x.shape[0] * f))[1], "Meta")
            for _ in range(2):
                out = torch.ops.foo_test_meta.stretch(torch.arange(3.0, device="foo"))
                assert out.shape == (3 * factor,)
                assert out.cpu().tolist() == [0.0, 1.0, 2.0] * factor
        finally:
            lib._destroy()
    assert calls == [1, 1, 2, 2]


def test_in_place_and_out_variants_write_in_place(foo):
    x = torch.zeros(4, device="foo")
    ptr = x.data_ptr()
    torch.add(torch.ones(4, device="foo"), 2, out=x)
    assert x.data_ptr() == ptr and x.cpu().tolist() == [3.0] * 4
    out = torch.empty(0, device="foo")
    torch.cumsum(torch.ones(3, device="foo"), 0, out=out)   # resized to fit
    assert out.cpu().tolist() == [1.0, 2.0, 3.0]
    y = torch.arange(6.0, device="foo").reshape(2, 3)
    y.t_()
    assert y.shape == (3, 2)


def test_each_device_computes_on_its_own_stream(foo):
    on0 = torch.ones(5, device="foo:0")
    on1 = torch.ones(5, device="foo:1")
    with held_stream() as still_held:             # device 0's current stream is held
        with foo.device(1):
            r0 = on0 * 2                          # runs on foo:0 although foo:1 is current
            r1 = on1 * 3
        assert r0.device == torch.device("foo:0") and r1.device == torch.device("foo:1")
        assert r1.cpu().tolist() == [3.0] * 5     # device 1 does not wait for device 0
        assert still_held() and not foo.current_stream(0).query()
    assert r0.cpu().tolist() == [2.0] * 5


def test_results_match_cpu_for_common_operators(foo):
    torch.manual_seed(0)
    a, b = torch.randn(8, 16), torch.randn(16, 4)
    fa, fb = a.foo(), b.foo()
    checks = {
        "matmul": (fa @ fb, a @ b),
        "softmax": (torch.softmax(fa, 1), torch.softmax(a, 1)),
        "layer_norm": (torch.nn.functional.layer_norm(fa, (16,)), torch.nn.functional.layer_norm(a, (16,))),
        "where": (torch.where(fa > 0, fa, -fa), torch.where(a > 0, a, -a)),
        "cat": (torch.cat([fa, fa], 1), torch.cat([a, a], 1)),
        "sum": (fa.sum(1), a.sum(1)),
        "clamp": (fa.clamp(-0.5, 0.5), a.clamp(-0.5, 0.5)),
        "gelu": (torch.nn.functional.gelu(fa), torch.nn.functional.gelu(a)),
        "index": (fa[torch.tensor([0, 3], device="foo")], a[torch.tensor([0, 3])]),
    }
    for name, (got, want) in checks.items():
        torch.testing.assert_close(got.cpu(), want, msg=name)


@pytest.mark.parametrize("deterministic", [False, True])
def test_index_put_accumulates_duplicate_indices_as_on_cpu(foo, deterministic):
    # The accumulating (or deterministic) form, which ATen's host code hands
    # on a GPU to a kernel of its own; masks, CPU indices and a broadcast value.
    def run(device):
        x = torch.arange(12.0, device=device).reshape(3, 4)
        x.index_put_((torch.tensor([0, 2, 0, 0]).to(device),), torch.tensor([1.0, 2.0, 3.0, 4.0], device=device),
                     accumulate=True)
        x.index_put_((torch.tensor([True, False, True], device=device), torch.tensor([1, 1])),
                     torch.tensor(0.5, device=device), accumulate=True)
        x.index_put_((torch.tensor([1, 1]), torch.tensor([3, 3])), torch.tensor([7.0, 7.0], device=device),
                     accumulate=deterministic)
        return x.cpu()

    previous = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(deterministic)
    try:
        torch.testing.assert_close(run("foo"), run("cpu"))
    finally:
        torch.use_deterministic_algorithms(previous)


def test_tensor_split_takes_cpu_indices_as_on_cuda(foo):
    x = torch.arange(6.0, device="foo")
    parts = torch.tensor_split(x, torch.tensor([1, 4]))
    assert [p.cpu().tolist() for p in parts] == [[0.0], [1.0, 2.0, 3.0], [4.0, 5.0]]
    with pytest.raises(RuntimeError, match="to be on cpu"):
        torch.tensor_split(x, torch.tensor([1, 4], device="foo"))


def test_convolutions_match_cpu(foo):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    conv = torch.nn.Conv2d(3, 4, 3, stride=2, padding=1)
    fx = x.detach().foo().requires_grad_()
    fconv = torch.nn.Conv2d(3, 4, 3, stride=2, padding=1).foo()
    fconv.load_state_dict(conv.state_dict())
    want, got = conv(x), fconv(fx)
    torch.testing.assert_close(got.cpu(), want)
    want.sum().backward()
    got.sum().backward()
    torch.testing.assert_close(fx.grad.cpu(), x.grad)
    torch.testing.assert_close(fconv.weight.grad.cpu(), conv.weight.grad)
    torch.testing.assert_close(fconv.bias.grad.cpu(), conv.bias.grad)


def test_dropout_backward_of_an_integer_gradient_is_refused_at_the_call_as_on_cuda(foo):
    # CPU would return a float result here; CUDA has no integer kernel and
    # says so when called. foo follows CUDA, before anything is queued.
    grad = torch.ones(4, dtype=torch.int64, device="foo")
    mask = torch.ones(4, dtype=torch.bool, device="foo")
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        torch.ops.aten.native_dropout_backward(grad, mask, 2.0)
    foo.synchronize()                  # nothing failed later on the stream
    ok = torch.ops.aten.native_dropout_backward(grad.float(), mask, 2.0)
    assert ok.cpu().tolist() == [2.0] * 4


@pytest.mark.parametrize("args", [(9,), (8, False), (7, True, 4.0)])
def test_kaiser_window_is_made_on_foo_as_on_cpu(foo, args):
    # ATen's kaiser_window calls its device's stub itself, past the dispatcher.
    for dtype in (torch.float32, torch.float64):
        got = torch.kaiser_window(*args, device="foo:1", dtype=dtype)
        assert got.device == torch.device("foo:1")
        torch.testing.assert_close(got.cpu(), torch.kaiser_window(*args, dtype=dtype))


def test_kernels_queued_behind_a_busy_stream_read_their_operands_as_they_were_at_the_call(foo):
    # Operators whose kernels run ATen's CPU impl alone (their output made by
    # foo as the meta function asked), each queued behind a held stream; the
    # host then overwrites their inputs and frees a temporary whose memory
    # the next allocation takes, all queued behind them.
    a_cpu, b_cpu = torch.randn(8, 8), torch.randn(8, 8)
    a, b = a_cpu.to("foo"), b_cpu.to("foo")
    with held_stream() as still_held:
        t = a * 3
        results = [a.sum(dim=1), torch.mm(a, b), a.cumsum(0), torch.softmax(a, 1), a.amax(0),
                   torch.addmv(a[0], a, b[0], beta=0.5), t.sum(dim=0)]
        del t
        reused = torch.full((8, 8), 7.0, device="foo")
        a.mul_(2)
        b.add_(1)
        assert still_held()
    expected = [a_cpu.sum(dim=1), torch.mm(a_cpu, b_cpu), a_cpu.cumsum(0), torch.softmax(a_cpu, 1), a_cpu.amax(0),
                torch.addmv(a_cpu[0], a_cpu, b_cpu[0], beta=0.5), (a_cpu * 3).sum(dim=0)]
    for got, want in zip(results, expected):
        torch.testing.assert_close(got.cpu(), want)
    assert torch.equal(reused.cpu(), torch.full((8, 8), 7.0))
    torch.testing.assert_close(a.cpu(), a_cpu * 2)
