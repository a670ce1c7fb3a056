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
  c10::DataPtr data = on_device(device, [&] { return storage->allocator()->allocate(size_bytes); });
  size_t keep = std::min(storage->nbytes(), size_bytes);
  if (keep > 0) {
    FOO_CHECK(fooMemcpyAsync(data.get(), storage->data(), keep, fooMemcpyDeviceToDevice,
                             getCurrentFooStream(device).stream()));
  }
  storage->set_data_ptr_noswap(std::move(data));
  storage->set_nbytes(size_bytes);
}

}  // namespace foo
