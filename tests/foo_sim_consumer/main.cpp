// Copies a value through device memory on a stream and prints it.
#include <cstdio>

#include <foo_sim/foo_runtime.h>

int main() {
  int count = 0;
  if (fooGetDeviceCount(&count) != fooSuccess) return 1;
  int host_in = 1234, host_out = 0;
  void* dev = nullptr;
  fooStream_t stream = nullptr;
  if (fooMalloc(&dev, sizeof(int)) != fooSuccess || fooStreamCreate(&stream) != fooSuccess) return 2;
  fooMemcpyAsync(dev, &host_in, sizeof(int), fooMemcpyHostToDevice, stream);
  fooMemcpyAsync(&host_out, dev, sizeof(int), fooMemcpyDeviceToHost, stream);
  if (fooStreamSynchronize(stream) != fooSuccess) return 3;
  std::printf("devices=%d value=%d\n", count, host_out);
  fooStreamDestroy(stream);
  fooFree(dev);
  return 0;
}
