// io/atomic_file.hpp: every output file tlio writes, and sets of them. An AtomicFile is what the
// store of its destination stages (Store::stage, io/staged_file.hpp); nothing here asks what kind
// of location that is.
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
//    commit uploads it whole (io/s3_client.hpp: one PUT or a multipart upload, aborted on failure),
//    so the object appears only complete and an existing one stays as it was until then.
//  - The destination "-" is standard output: the bytes go to an unnamed temporary file (it
//    vanishes with the process) and commit copies them to stdout, in order, so a pipe gets the
//    whole file or, on failure, nothing.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "io/location.hpp"
#include "io/os_file.hpp"
#include "io/staged_file.hpp"

namespace tlio::detail {

class AtomicFile {
 public:
  explicit AtomicFile(const Location& dest);
  /// The location `dest` names (Location::parse).
  explicit AtomicFile(const std::filesystem::path& dest);
  /// A file staged already (adopt_local_file).
  explicit AtomicFile(std::unique_ptr<StagedFile> staged) : staged_(std::move(staged)) {}
  AtomicFile(AtomicFile&&) = delete;
  ~AtomicFile();
  int fd() const noexcept { return staged_->fd(); }
  /// True when the temporary becomes the file (and is fsynced): writers start its writeback
  /// early. False for a staging copy (standard output, an upload) that is only read back.
  bool lands_on_disk() const noexcept { return staged_->lands_on_disk(); }
  /// True when commit() is a rename (a set renames all its files with the stop signals held).
  bool publishes_by_rename() const noexcept { return staged_->publishes_by_rename(); }
  /// The destination as messages name it.
  const std::string& name() const noexcept { return staged_->name(); }
  /// Makes the temporary complete and durable (mode, fsync) and closes it; commit() then only
  /// renames. For sets of files, whose renames are done together.
  void prepare() { staged_->prepare(); }
  /// prepare() if not done, checks the target is still not a special file, renames the
  /// temporary over it, fsyncs the folder (or uploads it, or copies it to standard output).
  void commit() { staged_->publish(); }
  void abort() noexcept { staged_->discard(); }

 private:
  std::unique_ptr<StagedFile> staged_;
};

/// Files published together: each is written whole to its temporary first; commit() renames
/// them in the order they were added with SIGINT, SIGTERM and SIGHUP held back on this thread,
/// so a handler that ends the process cannot stop a set half-published. A set of files that are
/// not published by renames (object-store files) is uploaded in that order instead (each file
/// whole; the index, added last, goes last), with the signals free to stop an upload. A set
/// destroyed before commit() removes every temporary and leaves the destinations as they were.
class OutputSet {
 public:
  OutputSet() = default;
  OutputSet(OutputSet&&) = default;
  /// Takes a complete file (prepare() is called on it).
  void add(std::unique_ptr<AtomicFile> file);
  /// Adds a small file with this content.
  void add_text(const Location& dest, std::string_view text);
  /// Adds a copy of the local file `src` (side files such as config.json), copied in the kernel.
  void add_copy(const std::filesystem::path& src, const Location& dest);
  /// Adds the complete local file `staged` (written by a job's unit), renamed to `dest`, a local
  /// location in the same file system.
  void add_adopted(const std::filesystem::path& staged, const Location& dest);
  /// Publishes every file, then runs `then` (e.g. removing what the set replaces); the set is
  /// empty afterwards. Renames run with the stop signals held; uploads with them free (a
  /// handler cannot undo an upload: each aborts itself when asked to stop).
  void commit(const std::function<void()>& then = {});
  bool empty() const noexcept { return files_.empty(); }

 private:
  std::vector<std::unique_ptr<AtomicFile>> files_;
};

}  // namespace tlio::detail
