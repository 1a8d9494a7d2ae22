// io/staged_file.hpp: the output side of the byte-source seam. A store stages a new file at a
// location (Store::stage): the bytes go to a temporary of the store's kind, and publish() makes
// them the file, whole, or discard() leaves the location as it was. Three kinds serve every
// store: a local temporary renamed over its target, a staging copy uploaded on publish (object
// stores), and a staging copy written to a stream (standard output).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

namespace tlio::detail {

class StagedFile {
 public:
  virtual ~StagedFile() = default;
  /// Where the bytes are written (a regular file: positional writes, in-kernel copies).
  virtual int fd() const noexcept = 0;
  /// The destination as messages name it.
  virtual const std::string& name() const noexcept = 0;
  /// True when the temporary becomes the file (writers start its writeback early); false for a
  /// staging copy that is only read back (an upload, a stream).
  virtual bool lands_on_disk() const noexcept = 0;
  /// True when publish() is a rename, which a set of files does for all its files with the stop
  /// signals held; false when it is a transfer a signal must be able to stop.
  virtual bool publishes_by_rename() const noexcept = 0;
  /// Makes the staged bytes complete and durable; publish() then only moves them into place.
  /// Error{invalid_argument} for a stream, which cannot be one file of a set.
  virtual void prepare() = 0;
  /// prepare() if not done, then makes the bytes the file at the location. Once only.
  virtual void publish() = 0;
  /// Removes what was staged; the location stays as it was. No-op after publish().
  virtual void discard() noexcept = 0;
};

/// Where a write to the local path `dest` lands: `dest` itself, or the regular file a chain of
/// symbolic links ends at. Error{io} (ENOENT, ELOOP) for a dangling or looping link, Error{io,
/// EISDIR} for a directory, Error{invalid_argument} for any other node that is not a regular file.
std::filesystem::path output_target(const std::filesystem::path& dest);

/// A local file: a temporary beside output_target(dest), renamed over it (io/atomic_file.hpp
/// states the guarantees).
std::unique_ptr<StagedFile> stage_local_file(const std::filesystem::path& dest);

/// A complete local file written earlier (by this or another process) in dest's folder, renamed
/// over output_target(dest) on publish with the mode a replaced file had; discard() leaves it.
std::unique_ptr<StagedFile> adopt_local_file(const std::filesystem::path& staged,
                                             const std::filesystem::path& dest);

/// Sends a staged file's `size` bytes from `fd` to where they go; stops with Error{interrupted}
/// when `should_stop` says so, leaving nothing behind.
using UploadFunction =
    std::function<void(int fd, uint64_t size, const std::function<bool()>& should_stop)>;

/// A file of a store without renames: staged in an unnamed temporary, uploaded whole on publish
/// (a signal handler stops the upload through stop_uploads()).
std::unique_ptr<StagedFile> stage_upload(std::string name, UploadFunction upload);

/// A stream (standard output): staged in an unnamed temporary and copied to `out_fd` in order on
/// publish, so a pipe gets the whole file or, on failure, nothing.
std::unique_ptr<StagedFile> stage_stream(int out_fd, std::string name);

}  // namespace tlio::detail
