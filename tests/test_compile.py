"""torch.compile on foo: dynamo's device interface and the inductor backend.

Compiled code must equal eager foo, run asynchronously on the current foo
stream in order with eager work, and not recompile for a stream change.
Models are small: every test pays inductor's C++ compile time.
"""

import copy
import time

import pytest
import torch
import torch._dynamo
import torch._inductor.config
from torch._dynamo.utils import counters


@pytest.fixture(autouse=True)
def _inductor(tmp_path_factory, monkeypatch):
    # One cache per test process, under pytest's tmp dir: never the user's.
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "inductor"))
    # Kernels compile in the test process: starting inductor's worker pool
    # costs more than it saves for these small graphs (see parallel_compile).
    monkeypatch.setattr(torch._inductor.config, "compile_threads", 1)
    torch._dynamo.reset()
    counters.clear()
    yield
    torch.foo.synchronize()
    torch._dynamo.reset()


@pytest.fixture
def parallel_compile(monkeypatch):
    """Inductor's default: kernels compile in its worker pool."""
    monkeypatch.setattr(torch._inductor.config, "compile_threads", 2)


def _frames() -> int:
    return counters["stats"]["unique_graphs"]


def _close(a, b, atol=1e-4, rtol=1e-4):
    torch.testing.assert_close(a.cpu(), b.cpu(), atol=atol, rtol=rtol)


def mlp() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 32),
                               torch.nn.LayerNorm(32), torch.nn.ReLU(), torch.nn.Linear(32, 4))


def cnn() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                               torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(4 * 4 * 4, 3))


def transformer_block() -> torch.nn.Module:
    return torch.nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, dropout=0.0,
                                            batch_first=True)


MODELS = {
    "mlp": (mlp, (8, 16)),
    "cnn": (cnn, (4, 2, 8, 8)),
    "transformer": (transformer_block, (2, 6, 16)),
}


# --- dynamo's device interface ----------------------------------------------------------------


def test_device_interface():
    from torch._dynamo.device_interface import get_interface_for_device
    from torch._inductor.runtime.hints import DeviceProperties

    iface = get_interface_for_device("foo")
    assert get_interface_for_device(torch.device("foo", 1)) is iface
    assert get_interface_for_device("foo:1") is iface
    assert iface.is_available() and iface.device_count() == torch.foo.device_count() == 2
    assert iface.current_device() == torch.foo.current_device()
    props = iface.get_device_properties(0)
    assert props.multi_processor_count == props.executor_count > 0
    major, minor = torch.foo.get_device_capability(0)
    assert iface.get_compute_capability(0) == major * 10 + minor
    assert iface.Worker.get_device_properties("foo:1").name == torch.foo.get_device_name(1)
    assert iface.Worker.current_device() == torch.foo.current_device()
    dp = DeviceProperties.create(torch.device("foo", 0))
    assert dp.type == "foo" and dp.multi_processor_count == props.multi_processor_count
    assert iface.is_bf16_supported() and iface.is_dtype_supported(torch.bfloat16)
    assert not iface.is_triton_capable()
    with pytest.raises(RuntimeError, match="Triton"):
        iface.raise_if_triton_unavailable()

    prev = iface.exchange_device(1)
    assert iface.current_device() == 1
    assert iface.maybe_exchange_device(prev) == 1
    assert iface.current_device() == prev
    with iface.device(1):
        assert iface.current_device() == 1
    assert iface.current_device() == prev

    s = iface.Stream()
    assert isinstance(s, torch.Stream) and s.device.type == "foo"
    with iface.stream(s):
        assert iface.current_stream() == s
        assert iface.get_raw_stream(iface.current_device()) == s.foo_stream
    assert iface.current_stream() != s
    default = iface.current_stream()
    iface._set_stream_by_id(s.stream_id, s.device_index, s.device_type)
    assert iface.current_stream() == s
    iface.set_stream(default)
    assert iface.current_stream() == default
    e = iface.Event()
    assert isinstance(e, torch.Event)
    e.record()
    iface.synchronize()
    assert e.query()
    assert iface.memory_allocated(0) == torch.foo.memory_allocated(0)


def test_registration_is_lazy_and_order_independent():
    from conftest import run_python

    out = run_python("""
        import sys
        import torch
        print(sorted(m for m in ("torch._dynamo", "torch._inductor") if m in sys.modules))
        from torch._dynamo.device_interface import get_interface_for_device
        print(get_interface_for_device("foo").__name__)
    """)
    assert out.split("\n")[:2] == ["[]", "FooInterface"]
    # Dynamo imported before torch_foo: registered at once.
    out = run_python("""
        import torch
        import torch._dynamo.device_interface as di
        import torch_foo
        print(di.get_interface_for_device("foo:1").__name__)
    """, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert out.strip() == "FooInterface"


# --- correctness -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(MODELS))
def test_forward_backward_equals_eager(name):
    make, shape = MODELS[name]
    torch.manual_seed(0)
    eager = make().foo()
    model = copy.deepcopy(eager)
    compiled = torch.compile(model)
    x = torch.randn(shape)
    xe, xc = x.foo().requires_grad_(), x.foo().requires_grad_()
    out_e, out_c = eager(xe), compiled(xc)
    assert out_c.device == torch.device("foo", 0)
    _close(out_c, out_e)
    out_e.square().sum().backward()
    out_c.square().sum().backward()
    _close(xc.grad, xe.grad)
    for (n, pe), pc in zip(eager.named_parameters(), model.parameters()):
        _close(pc.grad, pe.grad, atol=1e-3, rtol=1e-3), n
    assert _frames() == 1


@pytest.mark.parametrize("case", ["inference", "channels_last_training", "conv_transpose"])
def test_convolutions_in_the_layouts_inductor_expects(case):
    # Inductor lays convolutions out channels-last for inference, and users
    # train channels-last models: the fake tensors' prediction of each
    # convolution's layout must be the layout foo's kernel produces, or the
    # generated code's stride assertions fail.
    torch.manual_seed(0)
    conv = (torch.nn.ConvTranspose2d if case == "conv_transpose" else torch.nn.Conv2d)(3, 8, 3).foo()
    x = torch.randn(2, 3, 8, 8, device="foo")
    if case != "inference":
        conv = conv.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last).requires_grad_()
    with torch.set_grad_enabled(case != "inference"):
        got = torch.compile(conv)(x)
        want = conv(x.detach())
    _close(got, want)
    if case != "inference":
        got.square().sum().backward()
        assert x.grad.is_contiguous(memory_format=torch.channels_last)


def test_eager_convolution_layouts_follow_cudnn():
    # Channels-last in (input or weight), channels-last out, except double.
    x, w = torch.randn(2, 3, 8, 8, device="foo"), torch.randn(4, 3, 3, 3, device="foo")
    cl = torch.channels_last
    assert torch.nn.functional.conv2d(x, w).is_contiguous()
    assert torch.nn.functional.conv2d(x.contiguous(memory_format=cl), w).is_contiguous(memory_format=cl)
    assert torch.nn.functional.conv2d(x, w.contiguous(memory_format=cl)).is_contiguous(memory_format=cl)
    assert torch.nn.functional.conv2d(x.double().contiguous(memory_format=cl), w.double()).is_contiguous()


def test_training_loop_with_compiled_optimizer_step_equals_eager():
    torch.manual_seed(0)
    eager = mlp().foo()
    model = copy.deepcopy(eager)
    opt_e = torch.optim.AdamW(eager.parameters(), lr=1e-2)
    opt_c = torch.optim.AdamW(model.parameters(), lr=1e-2)
    compiled = torch.compile(model)
    step = torch.compile(opt_c.step)
    g = torch.Generator().manual_seed(1)
    batches = [(torch.randn(8, 16, generator=g).foo(), torch.randint(0, 4, (8,), generator=g).foo())
               for _ in range(5)]
    for x, y in batches:
        # Keeps the stream behind the host: the compiled step reads AdamW's
        # step counts (CPU tensors the host increments) when it runs, later.
        torch.foo._sleep(20)
        for m, o, s in ((eager, opt_e, opt_e.step), (compiled, opt_c, step)):
            o.zero_grad()
            torch.nn.functional.cross_entropy(m(x), y).backward()
            s()
    for pe, pc in zip(eager.parameters(), model.parameters()):
        _close(pc, pe, atol=1e-4, rtol=1e-4)


def test_dynamic_shapes_three_sizes_one_graph():
    def f(x):
        return torch.nn.functional.silu(x) * x.sum(0)

    compiled = torch.compile(f, dynamic=True)
    for n in (5, 9, 17):
        x = torch.randn(n, 7, device="foo")
        _close(compiled(x), f(x))
    assert _frames() == 1


def test_mark_dynamic_recompiles_once_then_not():
    def f(x):
        return (x * 2).softmax(-1)

    compiled = torch.compile(f)
    x = torch.randn(4, 8, device="foo")
    _close(compiled(x), f(x))
    for n in (6, 11):  # without mark_dynamic: one recompile, then dynamic
        y = torch.randn(n, 8, device="foo")
        _close(compiled(y), f(y))
    assert _frames() == 2
    counters.clear()
    torch._dynamo.reset()
    z = torch.randn(3, 8, device="foo")
    torch._dynamo.mark_dynamic(z, 0)
    compiled = torch.compile(f)
    _close(compiled(z), f(z))
    for n in (7, 13):
        y = torch.randn(n, 8, device="foo")
        _close(compiled(y), f(y))
    assert _frames() == 1


def test_fullgraph_max_autotune_autocast_and_reduce_overhead():
    def f(x, w):
        return torch.relu(x @ w + 1).sum(1)

    x, w = torch.randn(8, 16, device="foo"), torch.randn(16, 8, device="foo")
    _close(torch.compile(f, fullgraph=True, mode="max-autotune-no-cudagraphs")(x, w), f(x, w))
    _close(torch.compile(f, mode="reduce-overhead")(x, w), f(x, w))

    def g(x, w):
        with torch.autocast("foo", dtype=torch.bfloat16):
            y = x @ w
        return y, y.float().sum()

    (yc, sc), (ye, se) = torch.compile(g)(x, w), g(x, w)
    assert yc.dtype == ye.dtype == torch.bfloat16
    _close(yc.float(), ye.float(), atol=1e-2, rtol=1e-2)
    _close(sc, se, atol=0.5, rtol=1e-2)


def test_dropout_compiles_with_foo_random_numbers():
    def f(x):
        return torch.nn.functional.dropout(x, 0.5, training=True)

    x = torch.ones(64, 32, device="foo", requires_grad=True)
    y = torch.compile(f)(x)
    y.sum().backward()
    dropped = y == 0
    assert 0.4 < dropped.float().mean().item() < 0.6
    _close(y[~dropped], torch.full_like(y[~dropped], 2.0))
    assert torch.equal(x.grad == 0, dropped)


def test_graph_break_in_the_middle(parallel_compile):
    def f(x):
        y = torch.sin(x) + 1
        torch._dynamo.graph_break()
        return (y * x).cos()

    x = torch.randn(32, device="foo")
    _close(torch.compile(f)(x), f(x))
    assert _frames() == 2


# --- execution model: asynchronous, on the current stream, in order ----------------------------


def _chain(x):
    for _ in range(8):
        x = torch.sin(x) * 1.5 + 0.5
    return x


def test_compiled_call_is_asynchronous_and_in_stream_order():
    compiled = torch.compile(_chain)
    x = torch.zeros(1000, device="foo")
    compiled(x)  # compile outside the timed call
    torch.foo.synchronize()
    torch.foo._sleep(400)  # the stream is busy for 400 ms
    x.fill_(1.0)  # queued behind the sleep
    start = time.perf_counter()
    out = compiled(x)
    elapsed = time.perf_counter() - start
    assert elapsed < 0.2, f"compiled call took {elapsed * 1e3:.0f} ms: it waited for the stream"
    assert not torch.foo.current_stream().query()
    torch.foo.synchronize()
    _close(out, _chain(torch.ones(1000)))


def test_cpu_scalar_tensor_first_keeps_the_kernel_on_foo():
    # A CPU 0-dim tensor is a scalar beside foo tensors, wherever it stands:
    # the kernel runs on foo, in stream order, and returns a foo tensor.
    def f(s, x):
        # addcmul has a lowering of its own, which placed the kernel on s's device.
        return s + x, torch.maximum(s, x), s - x.exp(), torch.addcmul(s, x, x), torch.addcmul(s, x, x, value=0.5)

    compiled = torch.compile(f)
    s = torch.tensor(1.0)
    x = torch.zeros(4, device="foo")
    compiled(s, x)
    torch.foo._sleep(200)
    x.fill_(5.0)  # queued behind the sleep: the kernel must see it
    got = compiled(s, x)
    want = f(s, torch.full((4,), 5.0))
    for g, w in zip(got, want):
        assert g.device.type == "foo"
        _close(g, w)


def test_compiled_on_side_stream_with_wait_stream():
    compiled = torch.compile(_chain)
    x = torch.randn(4096, device="foo")
    compiled(x)
    frames = _frames()
    main = torch.foo.current_stream()
    side = torch.foo.Stream()
    x.fill_(2.0)
    side.wait_stream(main)  # the side stream sees x = 2
    torch.foo._sleep(300)  # then the main stream is busy
    with torch.foo.stream(side):
        out = compiled(x)  # queued on the side stream, not behind the sleep
        result = out.cpu()  # waits for the side stream only
    assert not main.query()
    _close(result, _chain(torch.full((4096,), 2.0)))
    main.wait_stream(side)
    out.record_stream(main)
    with torch.foo.device(1):  # another current device, same tensors
        _close(compiled(x), _chain(torch.full((4096,), 2.0)))
    assert _frames() == frames, "a stream or current-device change recompiled"


def test_compiled_function_using_streams_and_events():
    def f(x):
        s = torch.foo.Stream()
        e = torch.foo.Event()
        y = x * 2
        e.record()
        with torch.foo.stream(s):
            e.wait()
            z = y.sin()
        torch.foo.current_stream().wait_stream(s)
        return z + 1

    x = torch.randn(256, device="foo")
    _close(torch.compile(f)(x), f(x))  # torch.foo's stream calls are graph breaks


def test_fullgraph_with_a_user_stream_and_events():
    side = torch.foo.Stream()

    def f(x):
        y = x * 2
        e = torch.accelerator.current_stream().record_event()
        with side:
            side.wait_event(e)
            z = y.sin()
        torch.accelerator.current_stream().wait_stream(side)
        return z + 1

    x = torch.randn(256, device="foo")
    compiled = torch.compile(f, fullgraph=True)
    _close(compiled(x), f(x))
    torch.foo._sleep(200)  # the main stream is busy; the graph queues behind it
    x.fill_(1.0)
    out = compiled(x)
    assert not torch.foo.current_stream().query()
    _close(out, f(torch.ones(256)))
    assert _frames() == 1


def test_fullgraph_stream_block_runs_its_kernel_on_that_stream():
    # Inside `with side:` the kernel must be queued on `side`, after the work
    # the host put there (a fill behind a sleep), and the kernel outside the
    # block on the current stream, which does not wait for `side`.
    side = torch.foo.Stream()

    def f(x):
        with side:
            y = x * 2
        z = x + 1
        return y, z

    compiled = torch.compile(f, fullgraph=True)
    compiled(torch.ones(1000, device="foo"))
    torch.foo.synchronize()
    x = torch.ones(1000, device="foo")
    torch.foo.synchronize()
    with torch.foo.stream(side):
        torch.foo._sleep(300)
        x.fill_(5.0)
    y, z = compiled(x)
    z_now = z.cpu()  # the current stream's kernel does not wait behind `side`
    torch.foo.synchronize()
    _close(y, torch.full((1000,), 10.0))
    _close(z_now, torch.full((1000,), 2.0))


def test_second_device():
    model = mlp().to("foo:1")
    compiled = torch.compile(model)
    x = torch.randn(8, 16, device="foo:1", requires_grad=True)
    out = compiled(x)
    assert out.device == torch.device("foo", 1)
    _close(out, model(x))
    out.sum().backward()
    assert x.grad.device == torch.device("foo", 1)

    # With foo:0 current, the kernels go to foo:1's current stream, in order:
    # behind a sleep and a fill queued there.
    chain = torch.compile(_chain)
    y = torch.zeros(512, device="foo:1")
    chain(y)
    torch.foo.synchronize(1)
    assert torch.foo.current_device() == 0
    with torch.foo.device(1):
        torch.foo._sleep(200)
    y.fill_(1.0)
    out = chain(y)
    assert out.device == torch.device("foo", 1)
    assert not torch.foo.current_stream(1).query()
    torch.foo.synchronize(1)
    _close(out, _chain(torch.ones(512)))


def test_backend_failure_is_an_inductor_error_naming_the_node(monkeypatch):
    from torch._inductor.exc import InductorError

    import torch_foo.compile.inductor as foo_inductor

    def fail(arg_types, kernel_name):
        raise RuntimeError("no launcher for this kernel")

    monkeypatch.setattr(foo_inductor, "packed_entry_point", fail)

    def f(x):
        return torch.tanh(x) + 1

    with pytest.raises(InductorError, match=r"cannot define the kernel for node\(s\) op0 \(from FX node\(s\) .*tanh.*no launcher"):
        torch.compile(f)(torch.randn(8, device="foo"))


def test_kernel_failing_while_it_runs_is_reported_at_synchronize_naming_it():
    def f(a, b):
        return a // b + 1

    side = torch.foo.Stream()
    a = torch.arange(8, device="foo")
    b = torch.tensor([1, 2, 0, 1, 1, 1, 1, 1], device="foo")
    side.wait_stream(torch.foo.current_stream())
    with torch.foo.stream(side):
        torch.compile(f)(a, b)  # queued: nothing raised yet
        with pytest.raises(RuntimeError, match=r"torch.compile kernel cpp_fused_\w*floor_divide\w*: .*ZeroDivisionError"):
            side.synchronize()


def test_compiled_kernels_are_released_with_their_modules():
    # foo keeps a compiled kernel only as long as the module inductor
    # generated holds it: a long-running process that drops its compiled
    # modules keeps none of their kernels.
    import gc
    import sys

    from torch._inductor.codecache import PyCodeCache

    from torch_foo.compile.runtime import live_kernels

    x = torch.ones(8, device="foo")

    def drop_compiled():
        torch._dynamo.reset()
        # Inductor's own holds on the generated modules (as for CPU code):
        # its code cache and sys.modules.
        PyCodeCache.cache_clear()
        for name in [n for n in sys.modules if n.startswith("torch._inductor.runtime.compile_tasks.")]:
            del sys.modules[name]
        gc.collect()

    drop_compiled()
    base = live_kernels()
    for k in (1.5, 2.5, 3.5):  # distinct constants: distinct modules and kernels
        f = torch.compile(lambda t: t * k + 1)
        torch.testing.assert_close(f(x).cpu(), torch.full((8,), k + 1))
        assert live_kernels() > base  # counted while its module lives
        del f
        drop_compiled()
        assert live_kernels() == base
