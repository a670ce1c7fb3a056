#include "config.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <thread>

#include "error.h"

namespace foo_sim {
namespace {

constexpr int kMaxDevices = FOO_SIM_MAX_DEVICES;
constexpr int kMaxExecutors = 64;
constexpr int kMaxCopyThreads = 256;
constexpr uint64_t kMaxDelayUs = 10'000'000;

// Parses a whole string as a decimal integer in [lo, hi].
std::optional<uint64_t> parse_uint(const std::string& text, uint64_t lo, uint64_t hi) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return std::nullopt;
  return v;
}

std::string trimmed(const char* raw) {
  std::string s(raw);
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

}  // namespace

std::optional<size_t> parse_byte_size(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == 0) return std::nullopt;
  auto number = parse_uint(text.substr(0, i), 1, std::numeric_limits<uint64_t>::max());
  if (!number) return std::nullopt;
  std::string unit;
  for (char c : text.substr(i)) unit += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  int shift;
  if (unit.empty() || unit == "b") shift = 0;
  else if (unit == "k" || unit == "kib") shift = 10;
  else if (unit == "m" || unit == "mib") shift = 20;
  else if (unit == "g" || unit == "gib") shift = 30;
  else if (unit == "t" || unit == "tib") shift = 40;
  else return std::nullopt;
  if (*number > (std::numeric_limits<size_t>::max() >> shift)) return std::nullopt;
  return static_cast<size_t>(*number << shift);
}

int default_copy_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(std::min<unsigned>(n, kMaxCopyThreads));
}

std::optional<std::string> read_config_from_env(Config* config) {
  if (const char* raw = std::getenv("FOO_SIM_DEVICE_COUNT")) {
    auto v = parse_uint(trimmed(raw), 0, kMaxDevices);
    if (!v) return format("FOO_SIM_DEVICE_COUNT='%s' is invalid: expected an integer from 0 to %d", raw, kMaxDevices);
    config->device_count = static_cast<int>(*v);
  }
  if (const char* raw = std::getenv("FOO_SIM_DEVICE_MEMORY")) {
    auto v = parse_byte_size(trimmed(raw));
    if (!v) return format("FOO_SIM_DEVICE_MEMORY='%s' is invalid: expected a positive size such as 512MiB, 8GiB or 1048576", raw);
    config->device_memory = *v;
  }
  if (const char* raw = std::getenv("FOO_SIM_DEVICE_EXECUTORS")) {
    auto v = parse_uint(trimmed(raw), 1, kMaxExecutors);
    if (!v) return format("FOO_SIM_DEVICE_EXECUTORS='%s' is invalid: expected an integer from 1 to %d", raw, kMaxExecutors);
    config->executors_per_device = static_cast<int>(*v);
  }
  if (const char* raw = std::getenv("FOO_SIM_LAUNCH_BLOCKING")) {
    std::string s = trimmed(raw);
    if (s.empty() || s == "0") config->launch_blocking = false;
    else if (s == "1") config->launch_blocking = true;
    else return format("FOO_SIM_LAUNCH_BLOCKING='%s' is invalid: expected 0 or 1", raw);
  }
  if (const char* raw = std::getenv("FOO_SIM_LAUNCH_DELAY_US")) {
    auto v = parse_uint(trimmed(raw), 0, kMaxDelayUs);
    if (!v) return format("FOO_SIM_LAUNCH_DELAY_US='%s' is invalid: expected an integer from 0 to %llu", raw,
                          static_cast<unsigned long long>(kMaxDelayUs));
    config->launch_delay_us = *v;
  }
  if (const char* raw = std::getenv("FOO_SIM_COPY_THREADS")) {
    auto v = parse_uint(trimmed(raw), 1, kMaxCopyThreads);
    if (!v) return format("FOO_SIM_COPY_THREADS='%s' is invalid: expected an integer from 1 to %d", raw, kMaxCopyThreads);
    config->copy_threads = static_cast<int>(*v);
  }
  if (const char* raw = std::getenv("FOO_SIM_RACE_CHECK")) {
    std::string s = trimmed(raw);
    if (s.empty() || s == "0") config->race_check = 0;
    else if (s == "1" || s == "warn") config->race_check = 1;
    else if (s == "raise") config->race_check = 2;
    else return format("FOO_SIM_RACE_CHECK='%s' is invalid: expected 0, 1, warn or raise", raw);
  }
  return std::nullopt;
}

}  // namespace foo_sim
