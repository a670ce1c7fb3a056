// foo's device activity for torch.profiler: a Kineto activity-profiler
// plugin, registered for PrivateUse1 with REGISTER_PRIVATEUSE1_PROFILER.
//
// torch.profiler.profile(activities=[..., ProfilerActivity.PrivateUse1])
// makes Kineto open a session of this plugin. While it is open, foo_sim
// traces every kernel, copy and memset (foo_sim/foo_profiler.h): the launch
// time on the host, and the start and end times the executor took when the
// work really ran. Kineto tells the session the correlation id of each
// operator as it starts on a host thread; the session hands it to foo_sim,
// which stamps it on the work that thread launches. At the end each traced
// piece of work becomes two Kineto activities, as a CUDA kernel does:
//   - the launch, on the launching thread's row (PRIVATEUSE1_RUNTIME);
//   - the kernel (CONCURRENT_KERNEL, GPU_MEMCPY or GPU_MEMSET) on its own
//     row per device and stream, linked to the operator that launched it
//     (so key_averages() gives operators their device time) and joined to
//     the launch by a flow arrow in the chrome trace;
// and each record_function range gets a GPU_USER_ANNOTATION span on every
// stream row its work ran on, as CUDA's ranges do.
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <GenericTraceActivity.h>
#include <IActivityProfiler.h>
#include <ThreadUtil.h>
#include <libkineto.h>  // CpuTraceBuffer
#include <output_base.h>

#include <foo_sim/foo_profiler.h>

namespace foo::profiler {
namespace {

using libkineto::ActivityType;

// The operators and record_function ranges open on this thread, innermost
// last: what Kineto pushed and has not popped yet. Work is stamped with the
// innermost; the innermost range (user correlation) open around each id is
// kept, to draw the ranges on the device rows.
thread_local std::vector<uint64_t> t_correlations;
thread_local std::vector<uint64_t> t_ranges;

std::mutex g_range_mutex;
std::unordered_map<uint64_t, uint64_t> g_range_of;  // correlation id -> its innermost range

void push_correlation(uint64_t id, bool is_range) {
  if (is_range) t_ranges.push_back(id);
  uint64_t range = t_ranges.empty() ? 0 : t_ranges.back();
  if (range != 0) {
    std::lock_guard<std::mutex> lock(g_range_mutex);
    g_range_of[id] = range;
  }
  t_correlations.push_back(id);
  fooProfilerSetCorrelationId(id);
}

void pop_correlation(bool is_range) {
  if (is_range && !t_ranges.empty()) t_ranges.pop_back();
  if (!t_correlations.empty()) t_correlations.pop_back();
  fooProfilerSetCorrelationId(t_correlations.empty() ? 0 : t_correlations.back());
}

uint64_t range_of(uint64_t correlation) {
  std::lock_guard<std::mutex> lock(g_range_mutex);
  auto it = g_range_of.find(correlation);
  return it == g_range_of.end() ? 0 : it->second;
}

ActivityType device_type_of(fooActivityKind kind) {
  switch (kind) {
    case fooActivityKindMemcpy: return ActivityType::GPU_MEMCPY;
    case fooActivityKindMemset: return ActivityType::GPU_MEMSET;
    case fooActivityKindKernel: break;
  }
  return ActivityType::CONCURRENT_KERNEL;
}

const char* launch_name(fooActivityKind kind) {
  switch (kind) {
    case fooActivityKindMemcpy: return "fooMemcpyAsync";
    case fooActivityKindMemset: return "fooMemsetAsync";
    case fooActivityKindKernel: break;
  }
  return "fooLaunchKernel";
}

// A kernel is named after the operator that launched it, marked so that
// key_averages() keeps the two apart (it groups events by name).
std::string device_name(const fooActivity& a) {
  if (a.kind != fooActivityKindKernel) return a.name;
  return std::string("foo_kernel<") + a.name + ">";
}

// The span every foo activity names. Kineto's logger copies activities and
// keeps their span pointer, possibly beyond this session: so it is never freed.
const libkineto::TraceSpan& foo_span() {
  static const auto* span = new libkineto::TraceSpan(0, 0, "foo");
  return *span;
}

class FooProfilerSession final : public libkineto::IActivityProfilerSession {
 public:
  void start() override {
    {
      std::lock_guard<std::mutex> lock(g_range_mutex);
      g_range_of.clear();
    }
    // Ids left open by an earlier session (a range it did not see close)
    // must not label this one's work; other threads' stacks empty as their
    // operators close.
    t_correlations.clear();
    t_ranges.clear();
    fooProfilerSetCorrelationId(0);
    fooProfilerStart();
    status_ = libkineto::TraceStatus::RECORDING;
  }

  void stop() override {
    // Waits for the work launched while tracing, so that it is all in the trace.
    if (fooProfilerStop() != fooSuccess) errors_.push_back(fooGetErrorDetail());
    status_ = libkineto::TraceStatus::PROCESSING;
  }

  std::vector<std::string> errors() override { return errors_; }

  void processTrace(libkineto::ActivityLogger& logger) override { processTrace(logger, nullptr, 0, 0); }

  void processTrace(libkineto::ActivityLogger& logger, libkineto::getLinkedActivityCallback linked, int64_t start,
                    int64_t end) override {
    std::vector<fooActivity> taken;
    fooProfilerFlush([](const fooActivity* a, void* out) { static_cast<std::vector<fooActivity>*>(out)->push_back(*a); },
                     &taken);
    const int32_t pid = libkineto::processId();
    for (const fooActivity& a : taken) {
      const libkineto::ITraceActivity* op = nullptr;
      if (linked && a.correlationId != 0) op = linked(static_cast<int32_t>(a.correlationId));
      int32_t flow = static_cast<int32_t>(++flow_ids_);

      auto launch = std::make_unique<libkineto::GenericTraceActivity>(foo_span(), ActivityType::PRIVATEUSE1_RUNTIME,
                                                                      launch_name(a.kind));
      launch->startTime = a.launchNs;
      launch->endTime = a.launchNs;  // foo_sim stamps the instant the work was queued
      launch->id = static_cast<int32_t>(a.correlationId);
      launch->device = pid;
      launch->resource = a.launchThread;
      launch->threadId = a.launchThread;
      launch->linked = op;
      launch->flow.id = static_cast<uint32_t>(flow);
      launch->flow.type = libkineto::kLinkAsyncCpuGpu;
      launch->flow.start = 1;
      launch->addMetadata("correlation", a.correlationId);

      auto work = std::make_unique<libkineto::GenericTraceActivity>(foo_span(), device_type_of(a.kind), device_name(a));
      work->startTime = a.startNs;
      work->endTime = a.endNs;
      work->id = static_cast<int32_t>(a.correlationId);
      work->device = a.device;
      work->resource = stream_row(a.device, a.stream);
      work->threadId = work->resource;
      work->linked = op;
      work->flow.id = static_cast<uint32_t>(flow);
      work->flow.type = libkineto::kLinkAsyncCpuGpu;
      work->flow.start = 0;
      work->addMetadata("device", a.device);
      work->addMetadata("stream", work->resource);
      work->addMetadata("correlation", a.correlationId);
      work->addMetadata("queued_us", static_cast<double>(a.startNs - a.launchNs) / 1000.0);
      if (a.kind != fooActivityKindKernel) work->addMetadata("bytes", a.bytes);

      if (uint64_t range = range_of(a.correlationId)) extend_range(range, a.device, work->resource, a);
      launch->log(logger);
      work->log(logger);
      activities_.push_back(std::move(launch));
      activities_.push_back(std::move(work));
    }
    // record_function ranges on the device rows (CUDA's gpu_user_annotation):
    // from the first start to the last end of the work launched inside each,
    // per stream.
    for (auto& [key, span] : ranges_) {
      const auto& [range, device, row] = key;
      const libkineto::ITraceActivity* op = linked ? linked(static_cast<int32_t>(range)) : nullptr;
      auto annotation = std::make_unique<libkineto::GenericTraceActivity>(
          foo_span(), ActivityType::GPU_USER_ANNOTATION, op ? op->name() : std::string("record_function"));
      annotation->startTime = span.first;
      annotation->endTime = span.second;
      annotation->id = static_cast<int32_t>(range);
      annotation->device = device;
      annotation->resource = row;
      annotation->threadId = row;
      // Not linked to the range's CPU event: torch would count its time
      // again for the range, on top of the kernels' (CUDA's are not linked).
      annotation->log(logger);
      activities_.push_back(std::move(annotation));
    }
    ranges_.clear();
    {
      // Processed: the ranges of this profile's operators are not needed
      // again (they would otherwise stay until the next profile starts).
      std::lock_guard<std::mutex> lock(g_range_mutex);
      g_range_of.clear();
    }
    // A process row per device, a thread row per stream, below the CPU rows.
    for (const auto& [key, row] : rows_) {
      const auto& [device, stream] = key;
      if (named_devices_.insert(device).second) {
        logger.handleDeviceInfo(device_info(device), start);
      }
      logger.handleResourceInfo({row, row, device, stream_label(device, stream, row)}, start);
    }
  }

  // Every device's row was named in processTrace; Kineto asks for one device,
  // and names rows "GPU n" of its own if it gets none.
  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    int device = named_devices_.empty() ? 0 : *named_devices_.begin();
    return std::make_unique<libkineto::DeviceInfo>(device_info(device));
  }
  std::vector<libkineto::ResourceInfo> getResourceInfos() override { return {}; }       // logged in processTrace
  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override { return nullptr; }

  void pushCorrelationId(uint64_t id) override { push_correlation(id, false); }
  void popCorrelationId() override { pop_correlation(false); }
  // record_function ranges: a kernel launched directly inside one (no
  // operator in between) is attributed to the range.
  void pushUserCorrelationId(uint64_t id) override { push_correlation(id, true); }
  void popUserCorrelationId() override { pop_correlation(true); }

 private:
  void extend_range(uint64_t range, int device, int32_t row, const fooActivity& a) {
    auto [it, inserted] = ranges_.try_emplace({range, device, row}, a.startNs, a.endNs);
    if (!inserted) {
      it->second.first = std::min<int64_t>(it->second.first, a.startNs);
      it->second.second = std::max<int64_t>(it->second.second, a.endNs);
    }
  }

  // Streams get small row numbers per device, in order of first use; the
  // device's default stream is row 0.
  int32_t stream_row(int device, fooStream_t stream) {
    auto key = std::make_pair(device, reinterpret_cast<uintptr_t>(stream));
    auto it = rows_.find(key);
    if (it != rows_.end()) return it->second;
    fooStream_t default_stream = nullptr;
    bool is_default = fooDeviceGetDefaultStream(device, &default_stream) == fooSuccess && default_stream == stream;
    int32_t row = is_default ? 0 : ++next_row_[device];
    rows_.emplace(key, row);
    return row;
  }

  static libkineto::DeviceInfo device_info(int device) {
    std::string name = "foo " + std::to_string(device);
    return {device, libkineto::kExceedMaxPid + device, name, name};
  }

  static std::string stream_label(int device, uintptr_t stream, int32_t row) {
    fooStream_t default_stream = nullptr;
    bool is_default = fooDeviceGetDefaultStream(device, &default_stream) == fooSuccess &&
                      reinterpret_cast<uintptr_t>(default_stream) == stream;
    return "foo stream " + std::to_string(row) + (is_default ? " (default)" : "");
  }

  std::vector<std::unique_ptr<libkineto::GenericTraceActivity>> activities_;  // the logger keeps pointers
  std::map<std::pair<int, uintptr_t>, int32_t> rows_;
  std::map<std::tuple<uint64_t, int, int32_t>, std::pair<int64_t, int64_t>> ranges_;  // (range, device, row) -> span
  std::map<int, int32_t> next_row_;
  std::set<int> named_devices_;
  std::vector<std::string> errors_;
  uint64_t flow_ids_ = 0;
};

class FooActivityProfiler final : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }

  const std::set<ActivityType>& availableActivities() const override { return activities_; }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(const std::set<ActivityType>& activity_types,
                                                                 const libkineto::Config& config) override {
    // A session only when device activity was asked for
    // (ProfilerActivity.PrivateUse1): PRIVATEUSE1_RUNTIME alone is one of
    // the host-side types torch selects for ProfilerActivity.CPU.
    for (ActivityType type : {ActivityType::CONCURRENT_KERNEL, ActivityType::GPU_MEMCPY, ActivityType::GPU_MEMSET}) {
      if (activity_types.count(type) != 0) return std::make_unique<FooProfilerSession>();
    }
    return nullptr;
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(int64_t /*ts_ms*/, int64_t /*duration_ms*/,
                                                                 const std::set<ActivityType>& activity_types,
                                                                 const libkineto::Config& config) override {
    return configure(activity_types, config);
  }

 private:
  std::string name_{"foo"};
  std::set<ActivityType> activities_{ActivityType::CONCURRENT_KERNEL, ActivityType::GPU_MEMCPY,
                                     ActivityType::GPU_MEMSET, ActivityType::PRIVATEUSE1_RUNTIME};
};

REGISTER_PRIVATEUSE1_PROFILER(FooActivityProfiler);

}  // namespace
}  // namespace foo::profiler
