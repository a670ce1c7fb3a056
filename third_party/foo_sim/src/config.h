// The runtime's configuration, read from FOO_SIM_* environment variables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace foo_sim {

// One per hardware thread, as CPU PyTorch's intra-op default.
int default_copy_threads();

struct Config {
  int device_count = 2;
  size_t device_memory = size_t{8} << 30;  // 8 GiB
  int executors_per_device = 4;
  bool launch_blocking = false;
  uint64_t launch_delay_us = 0;
  int copy_threads = default_copy_threads();  // threads that move one large copy
  int race_check = 0;  // fooRaceMode: the race detector's initial mode
};

// Fills `config` from the environment. On a malformed value returns a message
// that names the variable and the accepted forms; `config` is then unusable.
std::optional<std::string> read_config_from_env(Config* config);

// "512MiB", "8GiB", "1048576", "64K": binary units, optional "B"/"iB".
std::optional<size_t> parse_byte_size(const std::string& text);

}  // namespace foo_sim
