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

// The stages prefetched for `node`, in order; checks that they all came
// before log[deadline].
std::vector<int> stages_before(const std::vector<Journal::Entry>& log, int node, int deadline) {
  std::vector<int> stages;
  for (int i = 0; i < static_cast<int>(log.size()); ++i) {
    if (log[i].run || log[i].node != node) continue;
    CHECK(i < deadline);
    stages.push_back(log[i].stage);
  }
  return stages;
}

std::vector<int> every_stage() {
  std::vector<int> all;
  for (int k = 0; k < FOO_SIM_PREFETCH_STAGES; ++k) all.push_back(k);
  return all;
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
      // Ahead of the node before it: a hint that came only just before the
      // node ran would be too late to help.
      int deadline = node > 0 ? run_of(log, node - 1) : run;
      std::vector<int> stages = stages_before(log, node, deadline);
      if (node == kWithout) {
        CHECK(stages.empty());
      } else {
        CHECK(stages == every_stage());
      }
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

// Where lanes synchronize, a lane's nodes fall into groups: each group of
// two or more is prefetched on its own, and a node alone is not.
TEST(groups_end_where_lanes_synchronize) {
  Journal journal;
  fooStream_t s1, s2;
  CHECK_OK(fooStreamCreate(&s1));
  CHECK_OK(fooStreamCreate(&s2));
  fooEvent_t fork, join;
  CHECK_OK(fooEventCreate(&fork));
  CHECK_OK(fooEventCreate(&join));
  auto launch = [&](fooStream_t s, int i) {
    CHECK_OK(fooLaunchHostFuncOwnedWithPrefetch(s, node_run, new Node{&journal, i}, node_release, node_prefetch,
                                                "prefetched"));
  };
  // s1: 0 1 2 | 3 4 5 (s2 waits for node 2); s2: 100 alone, joined back.
  CHECK_OK(fooStreamBeginCapture(s1, fooStreamCaptureModeGlobal));
  for (int i = 0; i < 3; ++i) launch(s1, i);
  CHECK_OK(fooEventRecord(fork, s1));
  CHECK_OK(fooStreamWaitEvent(s2, fork, 0));
  launch(s2, 100);
  CHECK_OK(fooEventRecord(join, s2));
  for (int i = 3; i < 6; ++i) launch(s1, i);
  CHECK_OK(fooStreamWaitEvent(s1, join, 0));
  fooGraph_t g;
  CHECK_OK(fooStreamEndCapture(s1, &g));
  fooGraphExec_t exec;
  CHECK_OK(fooGraphInstantiate(&exec, g, 0));
  CHECK_OK(fooGraphLaunch(exec, s1));
  CHECK_OK(fooStreamSynchronize(s1));
  std::vector<Journal::Entry> log = journal.take();
  for (int node : {0, 1, 2, 3, 4, 5}) {
    // A group's first two nodes are prefetched at its start, the others
    // before the node before them runs.
    bool leads = node == 0 || node == 1 || node == 3 || node == 4;
    int deadline = run_of(log, leads ? node : node - 1);
    CHECK(deadline >= 0);
    CHECK(stages_before(log, node, deadline) == every_stage());
  }
  // Node 3's group starts after node 2 ran: it is not prefetched before.
  int run2 = run_of(log, 2);
  for (int i = 0; i < run2; ++i) CHECK(log[i].run || log[i].node < 3 || log[i].node == 100);
  CHECK(run_of(log, 100) >= 0);
  CHECK(stages_before(log, 100, static_cast<int>(log.size())).empty());
  CHECK_OK(fooGraphExecDestroy(exec));
  CHECK_OK(fooGraphDestroy(g));
  CHECK_OK(fooEventDestroy(fork));
  CHECK_OK(fooEventDestroy(join));
  CHECK_OK(fooStreamDestroy(s1));
  CHECK_OK(fooStreamDestroy(s2));
}
