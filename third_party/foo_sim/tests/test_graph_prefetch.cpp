// fooLaunchHostFuncOwnedWithPrefetch: the hint a graph replay gives ahead
// of the nodes it is about to run (foo_runtime.h).
#include <mutex>
#include <utility>
#include <vector>

#include "foo_sim/foo_graph.h"
#include "harness.h"

namespace {

// What the kernels and their prefetches did, in the order they did it.
struct Journal {
  struct Entry {
    bool run;   // false: a prefetch
    int node;
    int stage;  // a prefetch's
  };
  std::mutex mutex;
  std::vector<Entry> entries;
  void add(Entry e) {
    std::lock_guard<std::mutex> lock(mutex);
    entries.push_back(e);
  }
  std::vector<Entry> take() {
    std::lock_guard<std::mutex> lock(mutex);
    return std::exchange(entries, {});
  }
};

struct Node {
  Journal* journal;
  int index;
};
void node_run(void* p) {
  auto* n = static_cast<Node*>(p);
  n->journal->add({true, n->index, -1});
}
void node_prefetch(void* p, int stage) {
  auto* n = static_cast<Node*>(p);
  n->journal->add({false, n->index, stage});
}
void node_release(void* p) { delete static_cast<Node*>(p); }

// Index in `entries` of node's run (-1 if it did not run).
int run_of(const std::vector<Journal::Entry>& entries, int node) {
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].run && entries[i].node == node) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

TEST(a_replay_prefetches_each_node_stage_by_stage_before_it_runs) {
  constexpr int kNodes = 20, kWithout = 9;  // node 9 has no prefetch
  Journal journal;
  fooStream_t s;
  CHECK_OK(fooStreamCreate(&s));
  auto launch = [&](int i) {
    return fooLaunchHostFuncOwnedWithPrefetch(s, node_run, new Node{&journal, i}, node_release,
                                              i == kWithout ? nullptr : node_prefetch, "prefetched");
  };
  // Eager launches never prefetch.
  CHECK_OK(launch(0));
  CHECK_OK(fooStreamSynchronize(s));
  std::vector<Journal::Entry> eager = journal.take();
  CHECK(eager.size() == 1 && eager[0].run);

  CHECK_OK(fooStreamBeginCapture(s, fooStreamCaptureModeGlobal));
  for (int i = 0; i < kNodes; ++i) CHECK_OK(launch(i));
  fooGraph_t g;
  CHECK_OK(fooStreamEndCapture(s, &g));
  CHECK(journal.take().empty());  // capturing runs and prefetches nothing
  fooGraphExec_t exec;
  CHECK_OK(fooGraphInstantiate(&exec, g, 0));
  for (int replay = 0; replay < 2; ++replay) {
    CHECK_OK(fooGraphLaunch(exec, s));
    CHECK_OK(fooStreamSynchronize(s));
    std::vector<Journal::Entry> log = journal.take();
    for (int node = 0; node < kNodes; ++node) {
      int run = run_of(log, node);
      CHECK(run >= 0);
      if (node > 0) CHECK(run_of(log, node - 1) < run);  // in capture order
      std::vector<int> stages;
      int first_prefetch = -1;
      for (int i = 0; i < static_cast<int>(log.size()); ++i) {
        if (log[i].run || log[i].node != node) continue;
        CHECK(i < run);  // ahead of the node's run
        if (first_prefetch < 0) first_prefetch = i;
        stages.push_back(log[i].stage);
      }
      if (node == kWithout) {
        CHECK(stages.empty());
        continue;
      }
      // Every stage once, in order.
      CHECK(static_cast<int>(stages.size()) == FOO_SIM_PREFETCH_STAGES);
      for (int k = 0; k < static_cast<int>(stages.size()); ++k) CHECK(stages[k] == k);
      // Ahead of the node before it too: a hint that came only just before
      // the node ran would be too late to help.
      if (node > 0) CHECK(first_prefetch < run_of(log, node - 1));
    }
    CHECK(static_cast<int>(log.size()) == kNodes + (kNodes - 1) * FOO_SIM_PREFETCH_STAGES);
  }
  CHECK_OK(fooGraphExecDestroy(exec));
  CHECK_OK(fooGraphDestroy(g));
  CHECK_OK(fooStreamDestroy(s));
}

TEST(a_prefetched_launch_checks_its_arguments_and_releases_on_error) {
  static int releases = 0;
  auto release = [](void* p) {
    ++releases;
    delete static_cast<int*>(p);
  };
  CHECK_ERR(fooLaunchHostFuncOwnedWithPrefetch(nullptr, nullptr, new int(0), release, node_prefetch, nullptr),
            fooErrorInvalidValue);
  CHECK(releases == 1);
}
