"""Everything a kernel reads that is not foo memory is taken when the operator is
called: a busy stream and a host that keeps going must not change results."""

import pytest
import torch
import torch.nn.functional as F

from conftest import held_stream
from torch_foo import _C


BINARY_WITH_CPU_SCALAR = {
    "mul": lambda x, s: x * s,
    "rmul": lambda x, s: s * x,
    "add": lambda x, s: x + s,
    "rsub": lambda x, s: s - x,
    "div": lambda x, s: x / s,
    "rdiv": lambda x, s: s / x,
    "pow": lambda x, s: x ** s,
    "rpow": lambda x, s: torch.pow(s, x),
    "gt": lambda x, s: x > s,
    "rlt": lambda x, s: s < x,
    "maximum": lambda x, s: torch.maximum(x, s),
    "mul_": lambda x, s: x.clone().mul_(s),
    "add_alpha": lambda x, s: torch.add(x, s, alpha=3),
}


@pytest.mark.parametrize("name", sorted(BINARY_WITH_CPU_SCALAR))
def test_cpu_scalar_tensor_is_read_at_launch(foo, name):
    op = BINARY_WITH_CPU_SCALAR[name]
    x_cpu = torch.rand(64) + 0.5
    x = x_cpu.to("foo")
    s = torch.tensor(2.0)
    expected = op(x_cpu, torch.tensor(2.0))
    with held_stream() as still_held:
        y = op(x, s)
        s.fill_(5.0)                  # the host moves on before the kernel ran
        assert still_held() and not foo.current_stream().query()
    torch.testing.assert_close(y.cpu(), expected)


def test_where_copies_a_cpu_scalar_to_the_device_at_the_call(foo):
    # ATen's where (shared by CPU and CUDA) moves a 0-dim CPU operand to the
    # output's device with a blocking copy, which on CUDA waits for the
    # stream: the value is taken at the call, and the host has waited.
    x_cpu = torch.rand(64) + 0.5
    x = x_cpu.to("foo")
    s = torch.tensor(2.0)
    expected = torch.where(x_cpu > 0.75, x_cpu, torch.tensor(2.0))
    cond = x > 0.75
    _C._take_op_counts()
    y = torch.where(cond, x, s)
    _, host_syncs = _C._take_op_counts()
    s.fill_(5.0)
    torch.testing.assert_close(y.cpu(), expected)
    assert host_syncs.get("aten::copy_ (host to device)") == 1, host_syncs


def test_foreach_ops_read_cpu_tensors_at_launch(foo):
    params = [torch.ones(8, device="foo"), torch.ones(3, device="foo")]
    lr = torch.tensor(0.5)
    with held_stream() as still_held:
        torch._foreach_mul_(params, lr)
        lr.fill_(100.0)
        assert still_held()
    assert [p.cpu().tolist() for p in params] == [[0.5] * 8, [0.5] * 3]


def test_optimizer_with_a_cpu_learning_rate_tensor(foo):
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 4)
    data = torch.randn(16, 8)
    reference = torch.nn.Linear(8, 4)
    reference.load_state_dict(model.state_dict())
    ref_opt = torch.optim.SGD(reference.parameters(), lr=torch.tensor(0.1), momentum=0.9)
    for _ in range(2):
        ref_opt.zero_grad()
        reference(data).square().mean().backward()
        ref_opt.step()

    model.to("foo")
    lr = torch.tensor(0.1)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    on_foo = data.to("foo")
    for _ in range(2):
        opt.zero_grad()
        model(on_foo).square().mean().backward()
        with held_stream() as still_held:
            opt.step()
            lr.fill_(1000.0)          # the steps already queued keep lr=0.1
            assert still_held()
        foo.synchronize()
        lr.fill_(0.1)
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p.cpu(), q)


def test_cpu_index_tensors_are_read_at_launch(foo):
    x_cpu = torch.arange(10.0)
    x = x_cpu.to("foo")
    idx = torch.tensor([7, 2, 9])
    foo._sleep(150)
    picked = x[idx]  # waits for the stream to copy idx, as CUDA's does
    idx.fill_(0)
    assert picked.cpu().tolist() == [7.0, 2.0, 9.0]

    idx = torch.tensor([1, 3])
    values = torch.tensor([-1.0, -3.0], device="foo")
    foo._sleep(150)
    x.index_put_((idx,), values)
    idx.fill_(0)
    x[torch.tensor([5])] = torch.tensor(50.0)   # a CPU value tensor, read at launch too
    expected = x_cpu.clone()
    expected[[1, 3]] = torch.tensor([-1.0, -3.0])
    expected[5] = 50.0
    assert x.cpu().tolist() == expected.tolist()


def test_foo_index_tensors_are_read_when_the_kernel_runs(foo):
    # The other half of the rule: foo operands are read in stream order, so
    # an index still being computed on the busy stream is used once ready.
    x = torch.zeros(6, device="foo")
    base = torch.tensor([0, 2, 2], device="foo")
    values = torch.tensor([1.0, 2.0, 3.0], device="foo")
    with held_stream() as still_held:
        idx = base + 1                              # queued behind the gate
        x.index_put_((idx,), values, accumulate=True)
        assert still_held()
    assert x.cpu().tolist() == [0.0, 1.0, 0.0, 5.0, 0.0, 0.0]


def test_cpu_tensor_where_cuda_rejects_it_raises_cudas_error(foo):
    x = torch.rand(5, device="foo")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.clamp(x, min=torch.tensor(0.2))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.index_select(x, 0, torch.tensor([0, 1]))


def test_cross_entropy_with_a_cpu_target_is_cudas_device_error_every_time(foo):
    logits = torch.randn(10, device="foo")
    for _ in range(20):               # never garbage from a freed CPU temporary
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            F.cross_entropy(logits, torch.tensor(3))
    loss = F.cross_entropy(logits, torch.tensor(3, device="foo"))
    torch.testing.assert_close(loss.cpu(), F.cross_entropy(logits.cpu(), torch.tensor(3)))


def test_grad_scaler_state_lives_on_foo(foo):
    model = torch.nn.Linear(4, 2).to("foo")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("foo")
    scaler.scale(model(torch.randn(3, 4, device="foo")).sum()).backward()
    scaler.unscale_(opt)
    found = scaler._per_optimizer_states[id(opt)]["found_inf_per_device"]
    assert found and all(t.device.type == "foo" for t in found.values())
    scaler.step(opt)
    scaler.update()
    assert scaler._scale.device.type == "foo" and scaler._growth_tracker.device.type == "foo"


def test_kernels_queued_behind_a_busy_stream_keep_what_they_carry_while_the_host_launches_on(foo):
    # Each launch destroys the closures of kernels that have already run
    # (handed back by the executors): the ones still queued behind the
    # gate must keep their CPU scalars while a side stream's
    # thousands of finished kernels are destroyed around them.
    x = torch.ones(256, device="foo")
    z = torch.zeros(1000, device="foo")
    foo.synchronize()  # z's fill is done before the side stream adds to it
    with held_stream() as still_held:
        queued = [x * torch.tensor(float(i)) for i in range(20)]
        side = foo.Stream()
        with foo.stream(side):
            for _ in range(3000):
                z.add_(torch.tensor(1.0))
        side.synchronize()
        assert still_held() and not foo.current_stream().query()
    assert [q.cpu()[0].item() for q in queued] == [float(i) for i in range(20)]
    assert z.cpu()[0].item() == 3000.0


# A 0-dim CPU tensor travels into the kernel as its value and dtype
# (uint16, which c10::Scalar cannot hold, as a copy of the tensor).
ZERO_DIM_CPU_VALUES = {
    torch.bool: True, torch.uint8: 200, torch.int8: -7, torch.int16: -300, torch.int32: -70000,
    torch.int64: -(2**40) - 1, torch.uint16: 60000, torch.float16: 1 / 3, torch.bfloat16: 1 / 3,
    torch.float32: 1 / 3, torch.float64: 1 / 3, torch.complex32: 1 / 3 - 0.25j,
    torch.complex64: 1 / 3 - 0.25j, torch.complex128: 1 / 3 - 0.25j,
}


@pytest.mark.parametrize("dtype", list(ZERO_DIM_CPU_VALUES), ids=str)
def test_a_zero_dim_cpu_tensor_keeps_its_exact_value_and_dtype_until_the_kernel_runs(foo, dtype):
    x_cpu = torch.tensor([0.5, -1.25, 3.0], dtype=torch.float64)
    s = torch.tensor(ZERO_DIM_CPU_VALUES[dtype], dtype=dtype)
    expected = x_cpu + s  # float64 or complex128: any rounding of s would show
    x = x_cpu.to("foo")
    with held_stream() as still_held:
        y = x + s
        s.zero_()
        assert still_held() and not foo.current_stream().query()
    assert y.dtype == expected.dtype
    torch.testing.assert_close(y.cpu(), expected, rtol=0, atol=0)


def test_a_zero_dim_cpu_tensor_takes_part_in_type_promotion_and_a_python_number_does_not(foo):
    # foo 0-dim float32 times CPU 0-dim float64 computes in float64; times a
    # Python float it computes in float32. The kernel must see which it got:
    # for 0.3, float32's product differs from float64's rounded to float32.
    x_cpu = torch.tensor(0.3, dtype=torch.float32)
    x = x_cpu.to("foo")
    with held_stream() as still_held:
        by_tensor = x * torch.tensor(1 / 3, dtype=torch.float64)
        by_number = x * (1 / 3)
        assert still_held() and not foo.current_stream().query()
    assert by_tensor.dtype == torch.float64 and by_number.dtype == torch.float32
    torch.testing.assert_close(by_tensor.cpu(), x_cpu * torch.tensor(1 / 3, dtype=torch.float64), rtol=0, atol=0)
    torch.testing.assert_close(by_number.cpu(), x_cpu * (1 / 3), rtol=0, atol=0)
    assert (x_cpu.double() * (1 / 3)).float() != x_cpu * (1 / 3)
