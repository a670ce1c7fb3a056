"""Compiles foo's C++ kernels: inductor's C++ code cache, with its
precompiled prefix header, loading each kernel as a plain shared library."""

from typing import Any

from torch._inductor.async_compile import get_compile_threads
from torch._inductor.codecache import CppCodeCache, LambdaFuture, _get_cpp_prefix_header, clear_on_fresh_cache

from torch_foo.compile.runtime import name_kernel


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


def compile_kernel(async_compile: Any, name: str, source: str) -> Any:
    """The packed entry point of ``source`` (a ctypes function), or a future of it.

    Compiles in inductor's worker pool when it has one; the generated module's
    ``async_compile.wait(globals())`` resolves the future. ``name`` is the
    kernel's name in errors it reports while running.
    """
    if get_compile_threads() <= 1:
        return name_kernel(FooKernelCodeCache.load(source).kernel, name)
    get_library = FooKernelCodeCache.load_async(source, submit_fn=async_compile.submit)
    return LambdaFuture(lambda: name_kernel(get_library().kernel, name))
