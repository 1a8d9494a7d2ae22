// tlio/writer.hpp: the canonical, streaming, atomic writer.
//
// Declare every tensor (name, dtype, shape) and the metadata first; the canonical header and all
// offsets are then fixed, and tensor bytes may be supplied in any order, whole or in sequential
// parts, so memory stays bounded by what the caller holds. Output is byte-identical to the
// reference library for files with zero or one metadata key (several keys: ascending byte order;
// an empty map is omitted). Files are replaced atomically: the bytes go to a temporary file in the
// destination's directory, which is fsynced and renamed over the destination on commit(); until
// then the old file is untouched, and a Writer destroyed without commit() removes its temporary.
// Only a regular file is replaced: a device, FIFO, socket or directory is refused when the
// writer is made, and a symbolic link is followed to the file it names (docs/security.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tlio/dtype.hpp"
#include "tlio/export.hpp"
#include "tlio/header.hpp"

namespace tlio {

namespace detail {
struct WriterState;
struct WriterAccess;  // the library's own ways to make writers (sets of files)
}  // namespace detail

class File;

/// Progress of a long file operation: bytes of output data done so far, and in all. Called from
/// the calling thread, often; may be empty.
using ProgressCallback = std::function<void(uint64_t done, uint64_t total)>;

class TLIO_API Writer {
 public:
  /// A writer that replaces `path` atomically on commit(). Error{invalid_argument} when `path`
  /// is a device, FIFO or socket, Error{io} for a directory or a dangling or looping link.
  /// The path "-" is standard output: the file is built in an unnamed temporary file and
  /// copied to stdout, in order, on commit (a pipe gets all of it, or nothing on failure).
  /// An s3:// or gs:// location is built the same way and uploaded whole on commit (one PUT,
  /// or a multipart upload aborted on failure: the object is the new file or what it was);
  /// other URL schemes are Error{unsupported}.
  static Writer to_file(const std::filesystem::path& path);
  /// A writer that builds the file in memory; take_bytes() after commit().
  static Writer to_memory();

  /// Metadata entries (string to string). Must be called before the first write.
  void set_metadata(std::string key, std::string value);
  void set_metadata(const Metadata& metadata);
  /// Declares a tensor. Throws Error{invalid_argument} for a duplicate or `__metadata__` name,
  /// invalid UTF-8, or a shape whose size overflows or is not a whole number of bytes.
  void declare(std::string name, Dtype dtype, Shape shape);

  /// Fixes the layout (called by the first write); the tensors in canonical file order with
  /// their offsets. Throws Error{invalid_argument} when the header would exceed kMaxHeaderSize.
  const std::vector<TensorInfo>& layout();

  /// Supplies a tensor's bytes whole (size must equal its byte size).
  void write(std::string_view name, std::span<const std::byte> data);
  /// Supplies the next part of a tensor's bytes; parts of one tensor come in order.
  void append(std::string_view name, std::span<const std::byte> part);
  /// Supplies a tensor's bytes from a callback that fills `buffer` with the bytes at tensor
  /// offset `offset` (buffer.size() bytes, at most `buffer_bytes` at a time; offsets are
  /// multiples of buffer_bytes, which must be a multiple of 8).
  void write_from(std::string_view name,
                  const std::function<void(uint64_t offset, std::span<std::byte> buffer)>& fill,
                  size_t buffer_bytes = size_t{1} << 20);
  /// Copies tensor `src_name` of `src` as tensor `name` (same dtype and shape), using in-kernel
  /// copies where the OS allows.
  void copy_from(std::string_view name, const File& src, std::string_view src_name);
  /// Copies several tensors of `src` (`src_names[k]` as `names[k]`; empty `src_names`: the same
  /// names), all checked before any byte is copied. From a URL, tensors come in file order,
  /// touching ones in one request, several requests in flight, the next batch fetched while
  /// this one is written. `copied(bytes)` is called as bytes land (progress).
  void copy_many_from(const File& src, std::span<const std::string_view> names,
                      std::span<const std::string_view> src_names = {},
                      const std::function<void(uint64_t bytes)>& copied = {});
  /// Copies all of tensor `name`'s bytes from offset `offset` of the open file `fd` (bytes kept
  /// in another format, e.g. a checkpoint's storage), in the kernel where the OS allows: they
  /// never pass through this process's memory. Error{io} when the file is too short.
  void copy_from_fd(std::string_view name, int fd, uint64_t offset);

  /// Checks every tensor was supplied whole, then publishes the file (fsync + rename + directory
  /// fsync). After commit() the Writer is finished.
  void commit();
  /// Discards everything written; the destination is left as it was.
  void abort() noexcept;

  /// The file's bytes (to_memory writers, after commit()).
  std::vector<std::byte> take_bytes();

  Writer(Writer&&) noexcept;
  Writer& operator=(Writer&&) noexcept;
  ~Writer();

 private:
  friend struct detail::WriterAccess;
  explicit Writer(std::unique_ptr<detail::WriterState> impl);
  std::unique_ptr<detail::WriterState> impl_;
};

/// One tensor for the convenience functions below.
struct TensorData {
  std::string name;
  Dtype dtype;
  Shape shape;
  std::span<const std::byte> bytes;
};

/// Writes `tensors` canonically to `path` (atomically).
TLIO_API void save_file(const std::filesystem::path& path, std::span<const TensorData> tensors,
                        const Metadata& metadata = {});
/// Serializes `tensors` canonically to memory.
TLIO_API std::vector<std::byte> serialize(std::span<const TensorData> tensors,
                                          const Metadata& metadata = {});
/// Rewrites a valid file canonically (same tensors, metadata and bytes) to `path`.
TLIO_API void rewrite_canonical(const File& src, const std::filesystem::path& path);

}  // namespace tlio
