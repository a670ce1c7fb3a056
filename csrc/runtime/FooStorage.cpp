#include "runtime/FooStorage.h"

#include <algorithm>

#include <c10/util/Exception.h>

#include "runtime/FooException.h"
#include "runtime/FooFunctions.h"
#include "runtime/FooStream.h"

namespace foo {

void resize_bytes(c10::StorageImpl* storage, size_t size_bytes) {
  TORCH_CHECK(storage->resizable(), "Trying to resize storage that is not resizable");
  c10::DeviceIndex device = storage->device().has_index() ? storage->device().index() : current_device();
  auto previous = exchange_device(device);
  c10::DataPtr data;
  try {
    data = storage->allocator()->allocate(size_bytes);
  } catch (...) {
    set_device(previous);
    throw;
  }
  size_t keep = std::min(storage->nbytes(), size_bytes);
  fooError_t e = fooSuccess;
  if (keep > 0) {
    e = fooMemcpyAsync(data.get(), storage->data(), keep, fooMemcpyDeviceToDevice,
                       getCurrentFooStream(device).stream());
  }
  set_device(previous);
  FOO_CHECK(e);
  storage->set_data_ptr_noswap(std::move(data));
  storage->set_nbytes(size_bytes);
}

}  // namespace foo
