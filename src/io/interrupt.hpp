// io/interrupt.hpp: where long operations ask whether to stop (tlio/interrupt.hpp).
#pragma once

namespace tlio::detail {

/// Throws Error{interrupted} when this thread's InterruptScope says stop; else returns.
void poll_interrupt();

}  // namespace tlio::detail
