// io/live_files.hpp: the files this process has in flight, readable from a signal handler.
//
// A program that must end at once (Ctrl-C in the CLI, SIGBUS from a shrunken mapping) can still
// remove the temporaries of unfinished writes and name the mapped file that failed: every
// named local temporary (io/staged_file) is registered here and every Mapping its address range.
// The table is a fixed set of slots, each guarded by a sequence counter, so a handler reads it
// without locks or allocation and never acts on a slot that changed while it was read.
#pragma once

#include <signal.h>

#include <cstddef>
#include <string_view>

namespace tlio::detail {

/// One registered entry; unregisters itself when destroyed. An entry that does not fit (the
/// table is full, or the name is longer than a slot holds) is simply not registered: the file
/// is then not cleaned up by a signal handler, and nothing else changes.
class LiveEntry {
 public:
  LiveEntry() = default;
  static LiveEntry temporary(std::string_view path) noexcept;
  static LiveEntry mapping(const void* address, size_t size, std::string_view name) noexcept;
  LiveEntry(LiveEntry&& o) noexcept : slot_(o.slot_) { o.slot_ = -1; }
  LiveEntry& operator=(LiveEntry&& o) noexcept;
  LiveEntry(const LiveEntry&) = delete;
  ~LiveEntry() { reset(); }
  void reset() noexcept;

 private:
  explicit LiveEntry(int slot) : slot_(slot) {}
  int slot_ = -1;
};

/// Marks an upload under way for as long as it lives (stop_uploads() asks it to stop).
class LiveUpload {
 public:
  LiveUpload() noexcept;
  ~LiveUpload();
  LiveUpload(const LiveUpload&) = delete;
  LiveUpload& operator=(const LiveUpload&) = delete;
};
/// Whether stop_uploads() was called while an upload was under way (it stays so for the rest of
/// the process). Async-signal-safe.
bool uploads_stopped() noexcept;
/// Sets uploads_stopped() if an upload is under way; returns whether one is. Async-signal-safe.
bool stop_live_uploads() noexcept;

/// Holds SIGINT, SIGTERM and SIGHUP back on this thread while it lives: what is registered or
/// published under it is never cut in half by a handler that ends the process.
class HeldStopSignals {
 public:
  HeldStopSignals() noexcept;
  ~HeldStopSignals();
  HeldStopSignals(const HeldStopSignals&) = delete;
  HeldStopSignals& operator=(const HeldStopSignals&) = delete;

 private:
  sigset_t old_;
};

/// Unlinks every registered temporary. Async-signal-safe.
void unlink_live_temporaries() noexcept;
/// Copies the name of the registered mapping holding `address` into `out` (NUL-terminated,
/// cut to `size`); false when none holds it. Async-signal-safe.
bool live_mapping_name(const void* address, char* out, size_t size) noexcept;
/// Whether `path` is a temporary registered by this process.
bool is_live_temporary(std::string_view path) noexcept;

}  // namespace tlio::detail
