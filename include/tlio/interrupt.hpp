// tlio/interrupt.hpp: stopping long operations, and cleaning up when a process must end now.
//
// The library installs no signal handlers; the program decides what a signal means. Two ways
// to stop a write that is under way, both leaving the destination as it was:
//  - Cooperative: an InterruptScope on the thread that runs the operation. Long operations ask
//    its check between I/O calls (at least every 64 MiB of data); when it says stop, they remove
//    their temporaries and throw Error{ErrorCode::interrupted}. Python's Ctrl-C works this way.
//  - At once, from a signal handler that ends the process: remove_temporary_files() unlinks the
//    temporary of every unfinished write, then the handler calls _exit(). The CLI works this way.
//    An upload to an object store cannot be undone from a handler (it takes a request), so
//    the handler first calls stop_uploads(): when one is under way it returns, and the upload
//    aborts itself and throws Error{ErrorCode::interrupted}.
#pragma once

#include <cstddef>

#include "tlio/export.hpp"

namespace tlio {

/// Returns true when the operation should stop. Called often (keep it cheap), on the thread
/// that installed it, with the context given with it.
using InterruptCheck = bool (*)(void* context);

/// Installs `check` for operations run by this thread while the scope lives (nested scopes
/// stack; the innermost one is asked). Other threads are not affected.
class TLIO_API InterruptScope {
 public:
  InterruptScope(InterruptCheck check, void* context) noexcept;
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  InterruptCheck previous_check_;
  void* previous_context_;
};

/// Unlinks the temporary file of every write of this process that is not yet committed.
/// Async-signal-safe: for a handler that then ends the process.
TLIO_API void remove_temporary_files() noexcept;

/// Asks every upload to an object store under way in this process to stop: each aborts (no
/// parts stay stored, the object is as it was) and throws Error{ErrorCode::interrupted}, and so
/// does every later upload of the process (it is meant to end). Returns whether any was under
/// way; if so, a handler should return instead of ending the process (a second signal can
/// still end it at once). Async-signal-safe.
TLIO_API bool stop_uploads() noexcept;

/// For a SIGBUS handler: when `address` lies in a file tlio has mapped, copies that file's name
/// into `name` (NUL-terminated, cut to `size`) and returns true. A mapped file that shrinks or
/// whose storage fails raises SIGBUS on access; library users who cannot rule that out open
/// files with Backend::pread instead. Async-signal-safe.
TLIO_API bool mapped_file_name(const void* address, char* name, size_t size) noexcept;

}  // namespace tlio
