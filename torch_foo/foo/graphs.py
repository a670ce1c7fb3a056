"""Graph capture and replay on foo, shaped like torch.cuda's graphs API.

``FooGraph`` is ``torch.accelerator.Graph`` on foo (both run FooGraphImpl);
``graph`` captures on a side stream; ``make_graphed_callables`` turns
callables into ones that replay captured forward and backward graphs.
"""

import gc
from typing import Any, Callable, Optional, Union

import torch
from torch.utils import _pytree

from torch_foo import _C
from torch_foo.foo._graph_liveness import InputLivenessTracker
from torch_foo.foo._lazy import _lazy_init

PoolHandle = tuple[int, int]


class FooGraph(torch.accelerator.Graph):
    """A foo graph: capture work queued on a stream once, replay it at will.

    ``capture_begin(pool=None, capture_error_mode=None,
    check_input_liveness=False)`` takes the arguments of
    ``torch.cuda.CUDAGraph.capture_begin``; a pool or mode it is not given
    comes from the constructor's (``FooGraph(keep_graph, pool=None,
    capture_error_mode="global")``, as ``torch.accelerator.Graph``'s).
    ``pool`` shares the memory pool of another graph (``other.pool()``) or
    of ``graph_pool_handle()``.
    ``check_input_liveness=True`` notes the tensors the capture reads from
    outside the graph, and each replay raises if one of them has been freed
    since (it would read memory that belongs to something else).
    """

    def __new__(cls, keep_graph: bool = False, *, pool: Optional[PoolHandle] = None,
                capture_error_mode: str = "global") -> "FooGraph":
        _lazy_init()
        return super().__new__(cls, keep_graph)

    def __init__(self, keep_graph: bool = False, *, pool: Optional[PoolHandle] = None,
                 capture_error_mode: str = "global") -> None:
        # As torch.accelerator.Graph: the pool and mode of captures that do
        # not name their own (its ``with stream, graph:`` form).
        super().__init__(keep_graph, pool=pool, capture_error_mode=capture_error_mode)
        self._liveness: Optional[InputLivenessTracker] = None

    def __del__(self) -> None:
        try:
            self._stop_watching()
        except Exception:  # noqa: BLE001 - never raise from a finalizer
            pass

    def _stop_watching(self) -> None:
        if self._liveness is not None:
            self._liveness.stop()

    def capture_begin(self, pool: Optional[PoolHandle] = None, capture_error_mode: Optional[str] = None,
                      check_input_liveness: bool = False) -> None:
        self._stop_watching()
        self._liveness = None
        torch._C._acceleratorGraph.capture_begin(
            self, pool=pool if pool is not None else self.graph_pool,
            capture_error_mode=capture_error_mode if capture_error_mode is not None else self.capture_error_mode)
        if check_input_liveness:
            self._liveness = InputLivenessTracker()
            self._liveness.start()

    def capture_end(self) -> None:
        # The watch ends with the capture, even one that fails to end.
        self._stop_watching()
        super().capture_end()

    def replay(self) -> None:
        if self._liveness is not None:
            self._liveness.check(self.pool())
        super().replay()

    def reset(self) -> None:
        self._stop_watching()
        self._liveness = None
        super().reset()


def graph_pool_handle() -> PoolHandle:
    """An id for a memory pool that several graphs share (pass it as ``pool``)."""
    _lazy_init()
    return _C._graph_pool_handle()


def is_current_stream_capturing() -> bool:
    """Whether the current foo stream of the current device is capturing a graph."""
    if not torch.foo.is_initialized():
        return False
    return _C._is_current_stream_capturing()


class graph:
    """Context manager that captures the work in its body into ``foo_graph``.

    As ``torch.cuda.graph``: the capture runs on ``stream``, or on a side
    stream of its own (capturing on the current stream would order the
    graph's work after whatever that stream still has queued); before it,
    the device is synchronized and unused cached device and pinned memory
    is released.
    """

    _default_capture_streams: dict[int, torch.Stream] = {}

    def __init__(
        self,
        foo_graph: FooGraph,
        pool: Optional[PoolHandle] = None,
        stream: Optional[torch.Stream] = None,
        capture_error_mode: str = "global",
        check_input_liveness: bool = False,
    ) -> None:
        _lazy_init()
        device = torch.foo.current_device()
        if stream is None:
            stream = self._default_capture_streams.get(device)
            if stream is None:
                stream = torch.foo.Stream(device)
                self._default_capture_streams[device] = stream
        self.foo_graph = foo_graph
        self.pool = pool
        self.capture_stream = stream
        self.capture_error_mode = capture_error_mode
        self.check_input_liveness = check_input_liveness
        self._stream_ctx = torch.foo.stream(stream)

    def __enter__(self) -> None:
        torch.foo.synchronize()
        if torch.compiler.config.force_cudagraph_gc:
            gc.collect()
        torch.foo.empty_cache()
        # As torch.cuda.graph: the pinned cache too, which also frees the
        # private host pools of graphs that are gone.
        torch.accelerator.empty_host_cache()
        self._stream_ctx.__enter__()
        try:
            # (Named only when asked for: a torch.accelerator.Graph takes no such argument.)
            liveness = {"check_input_liveness": True} if self.check_input_liveness else {}
            self.foo_graph.capture_begin(pool=self.pool, capture_error_mode=self.capture_error_mode, **liveness)
        except BaseException:
            self._stream_ctx.__exit__(None, None, None)
            raise

    def __exit__(self, *exc_info: object) -> None:
        try:
            self.foo_graph.capture_end()
        finally:
            self._stream_ctx.__exit__(*exc_info)


def _check_callable(func: Any, args: tuple) -> None:
    if isinstance(func, torch.nn.Module):
        if func._backward_hooks or func._forward_hooks or func._forward_pre_hooks:
            raise RuntimeError("make_graphed_callables: modules must have no hooks when they are graphed")
        if any(b.requires_grad for b in func.buffers()):
            raise RuntimeError("make_graphed_callables: only parameters may require grad, not buffers")
    if not all(isinstance(a, torch.Tensor) for a in args):
        raise TypeError("make_graphed_callables: sample_args must contain only tensors")


def _grads(outputs: tuple, inputs: tuple, grad_outputs: tuple, allow_unused: bool) -> Optional[tuple]:
    wanted = tuple(o for o in outputs if o.requires_grad)
    if not wanted:
        return None
    return torch.autograd.grad(
        outputs=wanted,
        inputs=tuple(i for i in inputs if i.requires_grad),
        grad_outputs=tuple(g for o, g in zip(outputs, grad_outputs) if o.requires_grad),
        only_inputs=True,
        allow_unused=allow_unused,
    )


def make_graphed_callables(
    callables: Union[Callable, tuple[Callable, ...]],
    sample_args: Union[tuple[torch.Tensor, ...], tuple[tuple[torch.Tensor, ...], ...]],
    num_warmup_iters: int = 3,
    allow_unused_input: bool = False,
    pool: Optional[PoolHandle] = None,
) -> Union[Callable, tuple[Callable, ...]]:
    """Graphed versions of ``callables`` (functions or modules), as ``torch.cuda.make_graphed_callables``.

    Each callable's forward and backward are captured once from
    ``sample_args`` (after ``num_warmup_iters`` eager runs on a side stream)
    into graphs sharing one memory pool; the returned callables copy their
    tensor arguments into the captured inputs, replay the forward graph,
    and replay the backward graph in autograd's backward. Arguments must
    have the sample's shapes, dtypes and requires_grad; control flow must
    not depend on data.
    """
    if torch.is_autocast_enabled() and torch.is_autocast_cache_enabled():
        raise RuntimeError("make_graphed_callables does not support autocast's cache: use cache_enabled=False")
    single = not isinstance(callables, tuple)
    funcs = (callables,) if single else callables
    all_args = (sample_args,) if single else sample_args
    if len(funcs) != len(all_args):
        raise ValueError(f"make_graphed_callables: {len(funcs)} callables but {len(all_args)} sample_args")
    flat_args = [tuple(_pytree.arg_tree_leaves(*args)) for args in all_args]
    for func, args in zip(funcs, flat_args):
        _check_callable(func, args)
    params = [tuple(f.parameters()) if isinstance(f, torch.nn.Module) else () for f in funcs]
    surfaces = [args + p for args, p in zip(flat_args, params)]
    mempool = graph_pool_handle() if pool is None else pool

    # Warm-up outside any capture, so that lazy initializations and first-call
    # allocations do not end up in the graphs.
    torch.foo.synchronize()
    with torch.foo.stream(torch.foo.Stream()):
        for func, args, surface in zip(funcs, all_args, surfaces):
            for _ in range(num_warmup_iters):
                outputs = tuple(_pytree.tree_leaves(func(*args)))
                _grads(outputs, surface, tuple(torch.empty_like(o) for o in outputs), allow_unused_input)
    torch.foo.synchronize()

    # Captured in the order replays run: forwards first to last, then
    # backwards last to first, so that the shared pool serves them safely.
    fwd_graphs = [FooGraph() for _ in funcs]
    bwd_graphs = [FooGraph() for _ in funcs]
    static_outputs, specs = [], []
    for func, args, g in zip(funcs, all_args, fwd_graphs):
        with graph(g, pool=mempool):
            result = func(*args)
        flat, spec = _pytree.tree_flatten(result)
        static_outputs.append(tuple(flat))
        specs.append(spec)
    static_grad_outputs: list = [None] * len(funcs)
    static_grad_inputs: list = [None] * len(funcs)
    for i in reversed(range(len(funcs))):
        grad_outs = tuple(torch.empty_like(o) if o.requires_grad else None for o in static_outputs[i])
        grads = None
        if any(o.requires_grad for o in static_outputs[i]):
            with graph(bwd_graphs[i], pool=mempool):
                grads = _grads(static_outputs[i], surfaces[i], grad_outs, allow_unused_input)
        it = iter(grads or ())
        static_grad_inputs[i] = tuple(next(it) if t.requires_grad and grads is not None else None for t in surfaces[i])
        static_grad_outputs[i] = grad_outs

    graphed = [
        _graphed_function(
            funcs[i], fwd_graphs[i], bwd_graphs[i], len(flat_args[i]), surfaces[i], static_outputs[i], specs[i],
            static_grad_outputs[i], static_grad_inputs[i],
        )
        for i in range(len(funcs))
    ]
    return graphed[0] if single else tuple(graphed)


def _graphed_function(
    func: Callable,
    fwd_graph: FooGraph,
    bwd_graph: FooGraph,
    num_user_args: int,
    surface: tuple,
    static_outputs: tuple,
    spec: Any,
    static_grad_outputs: tuple,
    static_grad_inputs: tuple,
) -> Callable:
    class Graphed(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, *inputs: torch.Tensor) -> tuple:
            for static, given in zip(surface[:num_user_args], inputs[:num_user_args]):
                if static.data_ptr() != given.data_ptr():
                    static.copy_(given)
            fwd_graph.replay()
            return tuple(o.detach() for o in static_outputs)

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx: Any, *grads: torch.Tensor) -> tuple:
            for static, grad in zip(static_grad_outputs, grads):
                if static is not None and grad is not None and static.data_ptr() != grad.data_ptr():
                    static.copy_(grad)
            bwd_graph.replay()
            # Detached so that callers cannot keep the graph's static tensors alive through autograd.
            return tuple(g.detach() if g is not None else None for g in static_grad_inputs)

    def run(*user_args: Any) -> Any:
        flat = tuple(_pytree.arg_tree_leaves(*user_args))
        outputs = Graphed.apply(*(flat + surface[num_user_args:]))
        return _pytree.tree_unflatten(outputs, spec)

    if isinstance(func, torch.nn.Module):
        eager_forward = func.forward

        def forward(*user_args: Any) -> Any:
            # Graphs replay only in training mode; eval runs eagerly, as torch.cuda's.
            if func.training == graph_training_state:
                return run(*user_args)
            return eager_forward(*user_args)

        graph_training_state = func.training
        func.forward = forward
        return func
    return run
