#include "io/interrupt.hpp"

#include <atomic>
#include <memory>
#include <thread>

#include "io/live_files.hpp"
#include "tlio/error.hpp"
#include "tlio/interrupt.hpp"

namespace tlio {
namespace {

struct ThreadCheck {
  InterruptCheck check = nullptr;
  void* context = nullptr;
};
thread_local ThreadCheck t_check;

}  // namespace

InterruptScope::InterruptScope(InterruptCheck check, void* context) noexcept
    : previous_check_(t_check.check), previous_context_(t_check.context) {
  t_check = {check, context};
}

InterruptScope::~InterruptScope() { t_check = {previous_check_, previous_context_}; }

void remove_temporary_files() noexcept { detail::unlink_live_temporaries(); }

bool stop_uploads() noexcept { return detail::stop_live_uploads(); }

bool mapped_file_name(const void* address, char* name, size_t size) noexcept {
  return detail::live_mapping_name(address, name, size);
}

namespace detail {

std::function<bool()> upload_stop_check() {
  const ThreadCheck c = t_check;
  const std::thread::id owner = std::this_thread::get_id();
  auto asked = std::make_shared<std::atomic<bool>>(false);
  return [c, owner, asked] {
    if (uploads_stopped()) return true;
    // The scope's check runs on its own thread only (Python's needs the interpreter there).
    if (std::this_thread::get_id() == owner && c.check && c.check(c.context)) asked->store(true);
    return asked->load();
  };
}

void throw_interrupted() {
  throw Error(ErrorCode::interrupted, Rule::none, {}, std::nullopt, "interrupted");
}

void poll_stop(const std::function<bool()>& should_stop) {
  if (should_stop && should_stop()) throw_interrupted();
}

void poll_interrupt() {
  const ThreadCheck c = t_check;
  if (c.check && c.check(c.context)) throw_interrupted();
}

}  // namespace detail
}  // namespace tlio
