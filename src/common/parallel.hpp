// common/parallel.hpp: splitting a range of independent work items over the machine's cores.
// The calling thread takes the first part; exceptions from any part are rethrown (the first
// part's first).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

namespace tlio::detail {

/// The thread limit set with tlio::set_conversion_threads (0: one per core).
inline std::atomic<unsigned>& configured_threads_setting() {
  static std::atomic<unsigned> threads{0};
  return threads;
}
inline unsigned configured_threads() {
  return configured_threads_setting().load(std::memory_order_relaxed);
}

/// The machine's cores, asked once: glibc reads /sys/devices/system/cpu/online at each
/// hardware_concurrency() (a conversion per row asked 460,000 times, 1.6 s of system time).
inline unsigned core_count() {
  static const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return cores;
}

/// Threads to use: `wanted`, or one per core when it is 0.
inline unsigned thread_count(unsigned wanted) { return wanted ? wanted : core_count(); }

/// Calls fn(begin, end) on consecutive parts of [0, count) on up to `threads` threads. Part
/// boundaries are multiples of `align`; ranges shorter than `min_items` stay on this thread.
template <class Fn>
void parallel_for(uint64_t count, uint64_t min_items, uint64_t align, unsigned threads, Fn&& fn) {
  if (count == 0) return;
  if (count < min_items || threads <= 1) {
    fn(uint64_t{0}, count);
    return;
  }
  const uint64_t per = ((count + threads - 1) / threads + align - 1) / align * align;
  std::vector<std::thread> helpers;
  std::vector<std::exception_ptr> errors(threads);
  for (unsigned t = 1; t < threads; ++t) {
    const uint64_t b = std::min<uint64_t>(count, per * t), e = std::min<uint64_t>(count, b + per);
    if (b == e) break;
    helpers.emplace_back([&, t, b, e] {
      try {
        fn(b, e);
      } catch (...) {
        errors[t] = std::current_exception();
      }
    });
  }
  try {
    fn(uint64_t{0}, std::min(per, count));
  } catch (...) {
    errors[0] = std::current_exception();
  }
  for (auto& h : helpers) h.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace tlio::detail
