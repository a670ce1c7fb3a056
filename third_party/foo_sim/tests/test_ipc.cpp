// Interprocess handles (foo_ipc.h): this program runs itself as the other
// process. A case whose name starts with "peer_" is that other process: it
// does nothing unless FOO_IPC_PEER is set, reads handles as hex from its
// environment, talks to the parent over stdin/stdout and reports by its
// exit status.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "harness.h"

extern char** environ;

namespace {

std::string to_hex(const void* bytes, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<const unsigned char*>(bytes)[i];
    s += digits[c >> 4];
    s += digits[c & 15];
  }
  return s;
}

template <class Handle>
Handle from_hex(const char* s) {
  Handle h;
  std::memset(&h, 0, sizeof h);
  for (size_t i = 0; i < sizeof h && s[2 * i] && s[2 * i + 1]; ++i) {
    h.reserved[i] = static_cast<char>(std::stoi(std::string(s + 2 * i, 2), nullptr, 16));
  }
  return h;
}

const char* peer_env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// The other process, running case `name` with `env` added; its stdin and
// stdout are pipes to us.
struct Peer {
  pid_t pid = -1;
  FILE* to = nullptr;
  FILE* from = nullptr;

  Peer(const char* name, std::vector<std::string> env) {
    int in[2], out[2];
    CHECK(pipe(in) == 0 && pipe(out) == 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_addclose(&actions, in[1]);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    env.push_back("FOO_IPC_PEER=1");
    for (char** e = environ; *e; ++e) env.push_back(*e);
    std::vector<char*> envp;
    for (auto& s : env) envp.push_back(s.data());
    envp.push_back(nullptr);
    char self[] = "/proc/self/exe";
    std::string case_name = name;
    char* argv[] = {self, case_name.data(), nullptr};
    CHECK(posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv, envp.data()) == 0);
    posix_spawn_file_actions_destroy(&actions);
    close(in[0]);
    close(out[1]);
    to = fdopen(in[1], "w");
    from = fdopen(out[0], "r");
  }
  std::string read_line() {
    char buf[512] = {0};
    if (!fgets(buf, sizeof buf, from)) return "";
    std::string s(buf);
    if (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  }
  void say(const char* line) {
    fprintf(to, "%s\n", line);
    fflush(to);
  }
  // Exit status of the peer (a harness failure prints to stderr).
  int finish() {
    fclose(to);
    // The rest of its output (its harness's report), shown with ours.
    char buf[512];
    while (fgets(buf, sizeof buf, from)) fprintf(stderr, "  peer: %s", buf);
    fclose(from);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
};

void tell_parent(const std::string& line) {
  printf("%s\n", line.c_str());
  fflush(stdout);
}

std::string hear_parent() {
  char buf[64] = {0};
  if (!fgets(buf, sizeof buf, stdin)) return "";
  return buf;
}

}  // namespace

// ---- the other process's sides ----

TEST(peer_reads_and_writes) {
  if (!std::getenv("FOO_IPC_PEER")) return;
  void* p = nullptr;
  CHECK_OK(fooIpcOpenMemHandle(&p, from_hex<fooIpcMemHandle_t>(peer_env("MEM")), fooIpcMemLazyEnablePeerAccess));
  int values[4];
  CHECK_OK(fooMemcpy(values, static_cast<char*>(p) + 4096, sizeof values, fooMemcpyDeviceToHost));
  CHECK(values[0] == 1 && values[3] == 4);
  // Opening again maps nothing new; each open has its close.
  void* again = nullptr;
  CHECK_OK(fooIpcOpenMemHandle(&again, from_hex<fooIpcMemHandle_t>(peer_env("MEM")), fooIpcMemLazyEnablePeerAccess));
  CHECK(again == p);
  CHECK_OK(fooIpcCloseMemHandle(again));
  CHECK_ERR(fooFree(p), fooErrorInvalidValue);
  int mine[4] = {10, 20, 30, 40};
  CHECK_OK(fooMemcpy(static_cast<char*>(p) + 4096, mine, sizeof mine, fooMemcpyHostToDevice));
  CHECK_OK(fooIpcCloseMemHandle(p));
  CHECK_ERR(fooIpcCloseMemHandle(p), fooErrorInvalidValue);
}

TEST(peer_opens_a_handle) {
  if (!std::getenv("FOO_IPC_PEER")) return;
  void* p = nullptr;
  fooError_t e = fooIpcOpenMemHandle(&p, from_hex<fooIpcMemHandle_t>(peer_env("MEM")), fooIpcMemLazyEnablePeerAccess);
  tell_parent(std::string(fooGetErrorName(e)) + " " + fooGetErrorDetail());
}

TEST(peer_makes_a_handle_and_exits) {
  if (!std::getenv("FOO_IPC_PEER")) return;
  void* p = nullptr;
  CHECK_OK(fooMalloc(&p, 1 << 20));
  fooIpcMemHandle_t h;
  CHECK_OK(fooIpcGetMemHandle(&h, p));
  tell_parent(to_hex(&h, sizeof h));
}

TEST(peer_waits_for_the_parents_event) {
  if (!std::getenv("FOO_IPC_PEER")) return;
  fooEvent_t ev;
  CHECK_OK(fooIpcOpenEventHandle(&ev, from_hex<fooIpcEventHandle_t>(peer_env("EVENT"))));
  void* p = nullptr;
  CHECK_OK(fooIpcOpenMemHandle(&p, from_hex<fooIpcMemHandle_t>(peer_env("MEM")), fooIpcMemLazyEnablePeerAccess));
  CHECK_ERR(fooEventQuery(ev), fooErrorNotReady);  // the parent's kernel is held
  fooStream_t s;
  CHECK_OK(fooStreamCreate(&s));
  int* value = nullptr;  // pinned, so that the copy is queued, not waited for
  CHECK_OK(fooMallocHost(reinterpret_cast<void**>(&value), sizeof(int)));
  *value = -1;
  CHECK_OK(fooStreamWaitEvent(s, ev, 0));
  CHECK_OK(fooMemcpyAsync(value, p, sizeof(int), fooMemcpyDeviceToHost, s));
  CHECK_ERR(fooStreamQuery(s), fooErrorNotReady);
  tell_parent("waiting");  // the parent releases its kernel now
  CHECK_OK(fooStreamSynchronize(s));
  CHECK(*value == 7);
  CHECK_OK(fooFreeHost(value));
  CHECK_OK(fooEventQuery(ev));
  CHECK_OK(fooEventDestroy(ev));
  CHECK_OK(fooIpcCloseMemHandle(p));
}

TEST(peer_records_work_that_never_runs_and_exits) {
  if (!std::getenv("FOO_IPC_PEER")) return;
  fooEvent_t ev;
  CHECK_OK(fooEventCreateWithFlags(&ev, fooEventDisableTiming | fooEventInterprocess));
  static std::atomic<bool> never{false};
  CHECK_OK(harness::launch(nullptr, [] {
    while (!never.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }));
  CHECK_OK(fooEventRecord(ev, nullptr));
  fooIpcEventHandle_t h;
  CHECK_OK(fooIpcGetEventHandle(&h, ev));
  tell_parent(to_hex(&h, sizeof h));
  hear_parent();
  _exit(0);  // with the kernel still running
}

// ---- the cases ----

TEST(writes_in_either_process_are_seen_by_the_other) {
  void* p = nullptr;
  CHECK_OK(fooMalloc(&p, 1 << 20));
  int values[4] = {1, 2, 3, 4};
  CHECK_OK(fooMemcpy(static_cast<char*>(p) + 4096, values, sizeof values, fooMemcpyHostToDevice));
  fooIpcMemHandle_t h;
  CHECK_OK(fooIpcGetMemHandle(&h, p));
  Peer peer("peer_reads_and_writes", {"MEM=" + to_hex(&h, sizeof h)});
  CHECK(peer.finish() == 0);
  CHECK_OK(fooMemcpy(values, static_cast<char*>(p) + 4096, sizeof values, fooMemcpyDeviceToHost));
  CHECK(values[0] == 10 && values[3] == 40);
  CHECK_OK(fooFree(p));
}

TEST(a_handle_needs_the_start_of_a_device_allocation) {
  void* p = nullptr;
  fooIpcMemHandle_t h;
  CHECK_OK(fooMalloc(&p, 4096));
  CHECK_ERR(fooIpcGetMemHandle(&h, static_cast<char*>(p) + 256), fooErrorInvalidValue);
  CHECK_DETAIL_HAS("not its start");
  void* host = nullptr;
  CHECK_OK(fooMallocHost(&host, 4096));
  CHECK_ERR(fooIpcGetMemHandle(&h, host), fooErrorInvalidValue);
  CHECK_ERR(fooIpcGetMemHandle(&h, &h), fooErrorInvalidValue);
  CHECK_OK(fooFreeHost(host));
  CHECK_OK(fooFree(p));
}

TEST(a_process_cannot_open_its_own_handle) {
  void* p = nullptr;
  CHECK_OK(fooMalloc(&p, 4096));
  fooIpcMemHandle_t h;
  CHECK_OK(fooIpcGetMemHandle(&h, p));
  void* opened = nullptr;
  CHECK_ERR(fooIpcOpenMemHandle(&opened, h, fooIpcMemLazyEnablePeerAccess), fooErrorDeviceUninitialized);
  CHECK_DETAIL_HAS("made by this process");
  CHECK(opened == nullptr);
  CHECK_ERR(fooIpcOpenMemHandle(&opened, h, 0), fooErrorInvalidValue);
  CHECK_OK(fooFree(p));
}

TEST(garbage_is_no_handle) {
  fooIpcMemHandle_t h;
  std::memset(&h, 0x5a, sizeof h);
  void* opened = nullptr;
  CHECK_ERR(fooIpcOpenMemHandle(&opened, h, fooIpcMemLazyEnablePeerAccess), fooErrorInvalidResourceHandle);
  CHECK_DETAIL_HAS("not a foo_sim memory handle");
  fooEvent_t ev;
  fooIpcEventHandle_t eh;
  std::memset(&eh, 0, sizeof eh);
  CHECK_ERR(fooIpcOpenEventHandle(&ev, eh), fooErrorInvalidResourceHandle);
  CHECK_DETAIL_HAS("not a foo_sim event handle");
}

TEST(a_freed_allocations_handle_no_longer_opens) {
  void* p = nullptr;
  CHECK_OK(fooMalloc(&p, 4096));
  fooIpcMemHandle_t h;
  CHECK_OK(fooIpcGetMemHandle(&h, p));
  CHECK_OK(fooFree(p));
  CHECK_OK(fooMalloc(&p, 4096));  // may take the same descriptor number
  Peer peer("peer_opens_a_handle", {"MEM=" + to_hex(&h, sizeof h)});
  std::string said = peer.read_line();
  CHECK(said.rfind("fooErrorInvalidResourceHandle", 0) == 0);
  CHECK(said.find("no longer has the memory") != std::string::npos);
  CHECK(peer.finish() == 0);
  CHECK_OK(fooFree(p));
}

TEST(the_handle_of_a_process_that_exited_does_not_open) {
  Peer peer("peer_makes_a_handle_and_exits", {});
  std::string hex = peer.read_line();
  CHECK(peer.finish() == 0);
  void* opened = nullptr;
  CHECK_ERR(fooIpcOpenMemHandle(&opened, from_hex<fooIpcMemHandle_t>(hex.c_str()), fooIpcMemLazyEnablePeerAccess),
            fooErrorInvalidResourceHandle);
  CHECK_DETAIL_HAS("has exited");
}

TEST(an_interprocess_event_needs_timing_disabled_and_its_own_flag_for_a_handle) {
  fooEvent_t ev;
  CHECK_ERR(fooEventCreateWithFlags(&ev, fooEventInterprocess), fooErrorInvalidValue);
  CHECK_OK(fooEventCreateWithFlags(&ev, fooEventDisableTiming));
  fooIpcEventHandle_t h;
  CHECK_ERR(fooIpcGetEventHandle(&h, ev), fooErrorInvalidResourceHandle);
  CHECK_OK(fooEventDestroy(ev));
}

TEST(another_process_waits_for_the_work_before_an_interprocess_record) {
  void* p = nullptr;
  CHECK_OK(fooMalloc(&p, 4096));
  CHECK_OK(fooMemset(p, 0, 4096));
  fooEvent_t ev;
  CHECK_OK(fooEventCreateWithFlags(&ev, fooEventDisableTiming | fooEventInterprocess));
  CHECK_OK(fooEventQuery(ev));  // nothing recorded yet
  fooStream_t s;
  CHECK_OK(fooStreamCreate(&s));
  static std::atomic<bool> gate{false};
  CHECK_OK(harness::launch(s, [] {
    while (!gate.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }));
  CHECK_OK(harness::launch(s, [p] { *static_cast<int*>(p) = 7; }));
  CHECK_OK(fooEventRecord(ev, s));
  CHECK_ERR(fooEventQuery(ev), fooErrorNotReady);
  fooIpcEventHandle_t eh;
  fooIpcMemHandle_t mh;
  CHECK_OK(fooIpcGetEventHandle(&eh, ev));
  CHECK_OK(fooIpcGetMemHandle(&mh, p));
  Peer peer("peer_waits_for_the_parents_event", {"EVENT=" + to_hex(&eh, sizeof eh), "MEM=" + to_hex(&mh, sizeof mh)});
  CHECK(peer.read_line() == "waiting");
  gate.store(true);
  CHECK(peer.finish() == 0);
  CHECK_OK(fooEventSynchronize(ev));
  CHECK_OK(fooEventDestroy(ev));
  CHECK_OK(fooStreamDestroy(s));
  CHECK_OK(fooFree(p));
}

TEST(a_wait_for_a_record_of_a_process_that_exited_fails_instead_of_hanging) {
  Peer peer("peer_records_work_that_never_runs_and_exits", {});
  std::string hex = peer.read_line();
  fooEvent_t ev;
  CHECK_OK(fooIpcOpenEventHandle(&ev, from_hex<fooIpcEventHandle_t>(hex.c_str())));
  CHECK_ERR(fooEventQuery(ev), fooErrorNotReady);
  peer.say("exit");
  CHECK(peer.finish() == 0);
  CHECK_ERR(fooEventSynchronize(ev), fooErrorLaunchFailure);
  CHECK_DETAIL_HAS("exited before the recorded work ran");
  fooStream_t s;
  CHECK_OK(fooStreamCreate(&s));
  CHECK_OK(fooStreamWaitEvent(s, ev, 0));
  CHECK_ERR(fooStreamSynchronize(s), fooErrorLaunchFailure);
  CHECK_OK(fooEventDestroy(ev));
  CHECK_OK(fooStreamDestroy(s));
}
