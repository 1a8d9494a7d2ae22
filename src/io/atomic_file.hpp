// io/atomic_file.hpp: every output file tlio writes, and sets of them.
//
// What a writer guarantees (docs/security.md, "What a write guarantees"):
//  - Only a regular file is ever replaced. A destination that is a device, FIFO, socket or
//    directory is refused before anything is created; a symbolic link is followed to the file it
//    names, which is replaced in its own folder (the link stays); a dangling or looping link is
//    refused.
//  - The bytes go to a temporary beside the target, `.<name>.tlio-tmp-<pid>-<start>-XXXXXX`
//    (pid and start time of the writing process), fsynced and renamed over the target on
//    commit; until then the old file is untouched. Failure, abort or destruction removes it, and
//    so does remove_temporary_files() from a signal handler.
//  - Leftovers of a killed process are removed by the next write to the same destination, once
//    that process is gone. Nothing else is ever removed.
//  - A destination in an object store (s3://, gs://) is built in an unnamed temporary file too;
//    commit uploads it whole (io/store.hpp: one PUT or a multipart upload, aborted on failure),
//    so the object appears only complete and an existing one stays as it was until then.
//  - The destination "-" is standard output: the bytes go to an unnamed temporary file (it
//    vanishes with the process) and commit copies them to stdout, in order, so a pipe gets the
//    whole file or, on failure, nothing.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/live_files.hpp"
#include "io/location.hpp"
#include "io/os_file.hpp"

namespace tlio::detail {

/// Where a write to `dest` lands: `dest` itself, or the regular file a chain of symbolic links
/// ends at. Error{io} (ENOENT, ELOOP) for a dangling or looping link, Error{io, EISDIR} for a
/// directory, Error{invalid_argument} for any other node that is not a regular file.
std::filesystem::path output_target(const std::filesystem::path& dest);

/// The destination that means standard output.
inline constexpr std::string_view kStdoutDestination = "-";

class AtomicFile {
 public:
  explicit AtomicFile(const std::filesystem::path& dest);
  AtomicFile(AtomicFile&&) = delete;
  ~AtomicFile();
  int fd() const noexcept { return fd_.get(); }
  /// True for a destination in an object store (commit uploads it).
  bool is_remote() const noexcept { return remote_.has_value(); }
  /// True when the temporary becomes the file (and is fsynced): writers start its writeback
  /// early. False for a staging copy (standard output, an upload) that is only read back.
  bool lands_on_disk() const noexcept { return !to_stdout_ && !remote_; }
  /// The destination as given (for messages).
  const std::string& name() const noexcept { return dest_name_; }
  /// The file that commit() replaces (dest, or where its links lead).
  const std::filesystem::path& target() const noexcept { return target_; }
  /// Makes the temporary complete and durable (mode, fsync) and closes it; commit() then only
  /// renames. For sets of files, whose renames are done together.
  void prepare();
  /// prepare() if not done, checks the target is still not a special file, renames the
  /// temporary over it, fsyncs the folder.
  void commit();
  void abort() noexcept;

 private:
  std::string dest_name_;
  std::filesystem::path target_;
  std::filesystem::path tmp_;
  Fd fd_;
  LiveEntry live_;
  bool prepared_ = false;
  bool done_ = false;
  bool to_stdout_ = false;  // dest "-": commit copies the temporary to standard output
  std::optional<Location> remote_;  // an object store's location: commit uploads the temporary
};

/// Files published together: each is written whole to its temporary first; commit() renames
/// them in the order they were added with SIGINT, SIGTERM and SIGHUP held back on this thread,
/// so a handler that ends the process cannot stop a set half-published. A set of object-store
/// files is uploaded in that order instead (each file whole; the index, added last, goes last),
/// with the signals free to stop an upload. A set destroyed before
/// commit() removes every temporary and leaves the destinations as they were.
class OutputSet {
 public:
  OutputSet() = default;
  OutputSet(OutputSet&&) = default;
  /// Takes a complete file (prepare() is called on it).
  void add(std::unique_ptr<AtomicFile> file);
  /// Adds a small file with this content.
  void add_text(const std::filesystem::path& dest, std::string_view text);
  /// Adds a copy of the file `src` (side files such as config.json), copied in the kernel.
  void add_copy(const std::filesystem::path& src, const std::filesystem::path& dest);
  /// Publishes every file, then runs `then` (e.g. removing what the set replaces), all with
  /// the stop signals held; the set is empty afterwards.
  void commit(const std::function<void()>& then = {});
  bool empty() const noexcept { return files_.empty(); }

 private:
  std::vector<std::unique_ptr<AtomicFile>> files_;
};

}  // namespace tlio::detail
