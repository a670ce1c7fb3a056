// Interprocess events (foo_ipc.h): an event made with fooEventInterprocess,
// or opened from another process's handle, is a scheduler event (its
// identity, device and local records) plus a state in a shared file that
// every process holding it maps: how many records were made and up to which
// one the work has run. The fooEvent* and fooStreamWaitEvent entry points
// hand such events to the functions here.
#pragma once

#include <memory>

#include "foo_sim/foo_runtime.h"
#include "runtime.h"

namespace foo_sim::ipc {

struct SharedEvent;

// The interprocess state of `event`, or null for an ordinary event.
std::shared_ptr<SharedEvent> shared_event(fooEvent_t event);

fooError_t create_shared_event(Runtime* rt, unsigned flags, fooEvent_t* out);
fooError_t open_shared_event(Runtime* rt, const fooIpcEventHandle_t& handle, fooEvent_t* out);
fooError_t shared_event_handle(fooEvent_t event, fooIpcEventHandle_t* handle);
// Forgets the state (queued records and waits keep it mapped until they ran).
void destroy_shared_event(fooEvent_t event);

fooError_t record(Runtime* rt, const std::shared_ptr<SharedEvent>& ev, fooEvent_t event, Stream* stream);
fooError_t query(const std::shared_ptr<SharedEvent>& ev);
fooError_t synchronize(const std::shared_ptr<SharedEvent>& ev);
fooError_t stream_wait(Runtime* rt, const std::shared_ptr<SharedEvent>& ev, fooEvent_t event, Stream* stream);

}  // namespace foo_sim::ipc
