// io/interrupt.hpp: where long operations ask whether to stop (tlio/interrupt.hpp).
#pragma once

#include <functional>

namespace tlio::detail {

/// A stop check for an upload started on this thread, callable from any thread: true once
/// stop_uploads() was called, or once this thread's InterruptScope (asked only when the check
/// is called on this thread) said stop.
std::function<bool()> upload_stop_check();

/// Throws Error{interrupted} when this thread's InterruptScope says stop; else returns.
void poll_interrupt();
/// Throws Error{interrupted} when `should_stop` is set and says stop (upload_stop_check's).
void poll_stop(const std::function<bool()>& should_stop);
[[noreturn]] void throw_interrupted();

}  // namespace tlio::detail
