"""Compiles foo's C++ kernels: inductor's C++ code cache, with its
precompiled prefix header, loading each kernel as a plain shared library."""

from typing import Any

from torch._inductor.async_compile import get_compile_threads
from torch._inductor.codecache import CppCodeCache, LambdaFuture, _get_cpp_prefix_header, clear_on_fresh_cache

from torch_foo.compile.runtime import CompiledKernel


@clear_on_fresh_cache
class FooKernelCodeCache(CppCodeCache):
    """Like inductor's CPU kernel cache (``cpp_prefix.h`` precompiled), without Python bindings.

    The library's ``kernel`` symbol is the packed entry point foo's launcher calls.
    """

    cache: dict = {}
    cache_clear = staticmethod(cache.clear)

    @classmethod
    def _get_uncompiled_header(cls, device: str) -> str | None:
        return _get_cpp_prefix_header(device)


def compile_kernel(async_compile: Any, name: str, source: str, writes: list[bool]) -> Any:
    """The kernel ``source`` defines (a ``CompiledKernel``), or a future of it.

    Compiles in inductor's worker pool when it has one; the generated module's
    ``async_compile.wait(globals())`` resolves the future. ``name`` is the
    kernel's name in errors it reports while running; ``writes`` says which
    of its arguments it writes.
    """
    if get_compile_threads() <= 1:
        return CompiledKernel(FooKernelCodeCache.load(source).kernel, name, writes)
    get_library = FooKernelCodeCache.load_async(source, submit_fn=async_compile.submit)
    return LambdaFuture(lambda: CompiledKernel(get_library().kernel, name, writes))
