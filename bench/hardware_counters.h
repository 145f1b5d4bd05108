// Hardware event counts around one stretch of code, read with
// perf_event_open(2): what `perf stat -e cycles,instructions,cache-misses,
// dTLB-load-misses` would count, but for the timed loop alone rather than
// the whole process (whose setup, making and sorting millions of keys,
// would swamp a lookup's counts).
//
// Virtual machines often expose no performance-monitoring unit; then
// opening fails, and `unavailable()` says why instead of a count.
#pragma once

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

namespace bbtree::bench {

class hardware_counters {
 public:
  struct event {
    const char* name;  // as perf stat names it
    std::uint32_t type;
    std::uint64_t config;
  };
  static constexpr std::array<event, 4> events{{
      {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
      {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
      {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
      {"dTLB-load-misses", PERF_TYPE_HW_CACHE,
       PERF_COUNT_HW_CACHE_DTLB | (PERF_COUNT_HW_CACHE_OP_READ << 8) |
           (PERF_COUNT_HW_CACHE_RESULT_MISS << 16)},
  }};

  // Opens one group of the four events, stopped, for this thread.
  hardware_counters() {
    for (std::size_t at = 0; at < events.size(); ++at) {
      perf_event_attr attributes;
      std::memset(&attributes, 0, sizeof attributes);
      attributes.size = sizeof attributes;
      attributes.type = events[at].type;
      attributes.config = events[at].config;
      attributes.disabled = at == 0;  // the group starts and stops with its leader
      attributes.exclude_kernel = 1;  // as perf_event_paranoid 2 requires
      attributes.exclude_hv = 1;
      attributes.read_format = PERF_FORMAT_GROUP;
      const long descriptor =
          ::syscall(SYS_perf_event_open, &attributes, 0, -1, at == 0 ? -1 : descriptors_[0], 0);
      if (descriptor < 0) {
        failure_ = std::string(events[at].name) + ": " + std::strerror(errno);
        close_all();
        return;
      }
      descriptors_[at] = static_cast<int>(descriptor);
    }
  }
  ~hardware_counters() { close_all(); }
  hardware_counters(const hardware_counters&) = delete;
  hardware_counters& operator=(const hardware_counters&) = delete;

  // Empty when the counters work; else the event that failed, and why.
  const std::string& unavailable() const noexcept { return failure_; }

  void start() {
    if (!failure_.empty()) return;
    ::ioctl(descriptors_[0], PERF_EVENT_IOC_RESET, PERF_IOC_FLAG_GROUP);
    ::ioctl(descriptors_[0], PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
  }

  // The counts since start(), in the order of `events`; false when they
  // could not be read.
  bool stop(std::array<std::uint64_t, events.size()>& counts) {
    if (!failure_.empty()) return false;
    ::ioctl(descriptors_[0], PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP);
    std::array<std::uint64_t, 1 + events.size()> group{};  // count, then the values
    const ssize_t got = ::read(descriptors_[0], group.data(), sizeof group);
    if (got != static_cast<ssize_t>(sizeof group) || group[0] != events.size()) {
      failure_ = "reading the group: " + std::string(got < 0 ? std::strerror(errno) : "short read");
      return false;
    }
    for (std::size_t at = 0; at < events.size(); ++at) counts[at] = group[1 + at];
    return true;
  }

 private:
  void close_all() noexcept {
    for (int& descriptor : descriptors_) {
      if (descriptor >= 0) ::close(descriptor);
      descriptor = -1;
    }
  }

  // -1 where no event is open, so that close_all closes only what opened.
  std::array<int, events.size()> descriptors_ = [] {
    std::array<int, events.size()> closed;
    closed.fill(-1);
    return closed;
  }();
  std::string failure_;
};

}  // namespace bbtree::bench
