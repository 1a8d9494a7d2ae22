#include "io/interrupt.hpp"

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

bool mapped_file_name(const void* address, char* name, size_t size) noexcept {
  return detail::live_mapping_name(address, name, size);
}

namespace detail {

void poll_interrupt() {
  const ThreadCheck c = t_check;
  if (c.check && c.check(c.context))
    throw Error(ErrorCode::interrupted, Rule::none, {}, std::nullopt, "interrupted");
}

}  // namespace detail
}  // namespace tlio
