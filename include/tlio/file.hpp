// tlio/file.hpp: opening a safetensors file and reading its tensors.
//
// File::open maps the file read-only (or privately copy-on-write with Backend::mmap_private, or,
// with Backend::pread, reads it with positional reads), validates the whole header before
// anything is handed out, and then gives zero-copy views, typed copies and slices.
//
// Lifetime rule: a TensorView holds a shared reference to the bytes it views (the chunks
// slice_chunks gives point into them, valid while that view lives).
// Destroying the File does not invalidate views; the mapping is released when the File and all
// views of it are gone. The one exception is File::from_buffer, which borrows the caller's
// memory: the caller keeps that buffer alive while the File or any view of it is in use
// (File::from_bytes takes ownership instead).
//
// With the mmap backend a file truncated by another process after opening makes the kernel
// raise SIGBUS on access; the pread backend reports Error{io} instead (see docs/format.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tlio/dtype.hpp"
#include "tlio/error.hpp"
#include "tlio/export.hpp"
#include "tlio/header.hpp"

namespace tlio {

enum class Backend {
  mmap,   ///< read-only shared mapping; views are zero-copy
  pread,  ///< positional reads; views own a copy of the tensor bytes
  /// Private copy-on-write mapping: views are zero-copy and writable (TensorView::
  /// writable_bytes); a written page becomes this process's own copy, the file never changes.
  /// Reserves no swap up front (MAP_NORESERVE), so a 100 GB file maps on a small machine.
  mmap_private,
  /// A source read by ranges over HTTP: http(s)://, s3://, gs://, and hf:// files not in the
  /// local cache (File::open chooses it for them): the header in one or two
  /// range requests, each tensor's bytes by range when asked for; views own their bytes.
  http,
  /// Reads past the page cache, for data read once (a whole load, a hash, a copy): O_DIRECT
  /// reads of aligned windows of up to 1 MiB, 16 in flight through io_uring (worker threads
  /// where the kernel refuses io_uring, or with TLIO_IO_URING=0 in the environment); views own
  /// their bytes, as with pread. A file system that refuses O_DIRECT (tmpfs before Linux 6.6)
  /// is read through the page cache. hash_file reads with it too.
  direct,
};

/// A direct file's reads land in a caller's buffer without a bounce copy where the buffer's
/// address is congruent to the file offset of its bytes modulo this (ReadPlan's item offsets).
inline constexpr uint64_t kDirectAlignment = 4096;

struct OpenOptions {
  Backend backend = Backend::mmap;
  /// For http(s):// and hf:// URLs: a bearer token, sent to the URL's own origin (scheme, host,
  /// port) only, never after a redirect to another one, never in a message. Empty: $HF_TOKEN, if
  /// set.
  std::string token = {};
  /// Called with a warning about how the input is read (a server that ignores Range requests,
  /// so the file is downloaded whole once); may be called from another thread. Empty: none.
  std::function<void(std::string_view)> warning = {};
};

/// One index per dimension: a single position (drops the dimension) or a [start, stop) range.
struct SliceIndex {
  enum class Kind { index, range } kind = Kind::range;
  uint64_t start = 0;
  uint64_t stop = UINT64_MAX;  ///< UINT64_MAX means "to the end of the dimension"

  static SliceIndex at(uint64_t i) { return {Kind::index, i, i + 1}; }
  static SliceIndex range(uint64_t start, uint64_t stop) { return {Kind::range, start, stop}; }
  static SliceIndex all() { return {}; }
};

/// Contiguous piece of a tensor's bytes: [offset, offset + length) relative to its first byte.
struct ByteRange {
  uint64_t offset = 0;
  uint64_t length = 0;
};

/// Where the bytes of a slice lie: its shape, and the row-major list of contiguous byte ranges
/// (adjacent ranges merged). Fewer indices than dimensions leave the rest whole.
struct SlicePlan {
  std::vector<uint64_t> shape;
  std::vector<ByteRange> ranges;
  uint64_t byte_size = 0;
};

/// One tensor to copy out with File::read_many: its name and exactly byte_size() bytes to fill.
struct TensorTarget {
  std::string_view name;
  std::span<std::byte> dst;
};

/// A byte range of the data buffer to copy out with File::read_data_many.
struct DataRange {
  uint64_t offset;  ///< data offset, as in TensorInfo::begin
  std::span<std::byte> dst;
};

/// Validates `indices` against `info` and computes the plan. Throws Error{invalid_argument} for
/// start > stop, an index or stop past the dimension, too many indices, or a sub-byte slice that
/// does not fall on byte boundaries.
TLIO_API SlicePlan plan_slice(const TensorInfo& info, std::span<const SliceIndex> indices);

namespace detail {
struct FileState;
struct FileAccess;
}  // namespace detail

/// The bytes of one tensor, with its info. Cheap to copy; keeps the bytes and the info alive
/// (the File may be gone). Only a File makes one, so there is no empty view to misuse.
class TLIO_API TensorView {
 public:
  const TensorInfo& info() const noexcept { return *info_; }
  const std::string& name() const noexcept { return info_->name; }
  Dtype dtype() const noexcept { return info_->dtype; }
  const Shape& shape() const noexcept { return info_->shape; }
  /// The raw little-endian bytes. Not necessarily aligned for the element type.
  std::span<const std::byte> bytes() const noexcept { return bytes_; }
  /// True when the bytes are this process's own (Backend::mmap_private, Backend::pread,
  /// File::from_bytes), so writable_bytes() may be used.
  bool writable() const noexcept { return writable_; }
  /// The same bytes, writable. Writes stay in this process and are seen by every view of the
  /// same File (with pread, a view owns its copy: by this view only). Throws
  /// Error{invalid_argument} for views of a read-only mapping or of a caller's buffer.
  std::span<std::byte> writable_bytes() const;

  /// A typed copy. T must be the tensor's type (float for F32, ...) or, for raw access to the
  /// bits, an unsigned integer of the same width (uint16_t for BF16/F16, uint8_t for F8_*).
  /// Throws Error{invalid_argument} otherwise. Safe for misaligned data.
  template <class T>
  std::vector<T> copy_as() const {
    check_element_type(dtype_of<T>::value, sizeof(T) * 8, std::is_unsigned_v<T>);
    std::vector<T> out(bytes_.size() / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), bytes_.data(), out.size() * sizeof(T));
    return out;
  }

  /// A slice of this view as byte chunks pointing into the same bytes.
  std::vector<std::span<const std::byte>> slice_chunks(
      std::span<const SliceIndex> indices, std::vector<uint64_t>* shape = nullptr) const;
  /// A slice of this view copied into one contiguous buffer.
  std::vector<std::byte> slice_copy(std::span<const SliceIndex> indices,
                                    std::vector<uint64_t>* shape = nullptr) const;

 private:
  friend class File;
  TensorView(std::shared_ptr<const void> keepalive, const TensorInfo& info,
             std::span<const std::byte> bytes, bool writable)
      : keepalive_(std::move(keepalive)), info_(&info), bytes_(bytes), writable_(writable) {}
  void check_element_type(Dtype requested, unsigned bits, bool raw_ok) const;
  std::shared_ptr<const void> keepalive_;
  const TensorInfo* info_;
  std::span<const std::byte> bytes_;
  bool writable_;
};

class TLIO_API File {
 public:
  /// Opens and validates `path`. Throws Error{io} when it cannot be read, Error{format} when it
  /// breaks a rule; messages start with the path. The path "-" is standard input, read once
  /// into an unnamed temporary file (named "<stdin>" in messages): its header is checked as soon
  /// as it has arrived, and input past the data the header describes is refused (rule 5).
  static File open(const std::filesystem::path& path, OpenOptions options = {});
  /// Validates a caller-owned buffer without copying it. The buffer must outlive the File and
  /// every view of it. `name` is used in error messages.
  static File from_buffer(std::span<const std::byte> bytes, std::string name = "<buffer>");
  /// Validates and takes ownership of `bytes`.
  static File from_bytes(std::vector<std::byte> bytes, std::string name = "<buffer>");

  // References into the File: not on a temporary, which would leave them dangling
  // (File::open(p).header().at("x") does not compile; keep the File, or take a TensorView).
  const Header& header() const& noexcept;
  const Header& header() const&& = delete;
  const std::vector<TensorInfo>& tensors() const& noexcept { return header().tensors(); }
  const std::vector<TensorInfo>& tensors() const&& = delete;
  const Metadata& metadata() const& noexcept { return header().metadata(); }
  const Metadata& metadata() const&& = delete;
  /// Name used in messages (the path, or the buffer name).
  const std::string& name() const& noexcept;
  const std::string& name() const&& = delete;
  Backend backend() const noexcept;
  uint64_t file_size() const noexcept;
  /// N: the header length from the first 8 bytes. The data buffer starts at 8 + N.
  uint64_t header_size() const noexcept;
  /// The raw N header bytes as stored.
  std::vector<std::byte> raw_header() const;
  /// True when the file is byte-identical to what the canonical writer makes of it.
  bool is_canonical() const;

  /// True when view() is zero-copy (a mapping or a buffer); false when each view reads its
  /// tensor into memory of its own (pread, direct, a URL): a caller with memory of its own to
  /// fill had better read() into it.
  bool views_in_memory() const noexcept;
  /// Zero-copy with mmap and buffers; with pread, reads the tensor into memory the view owns.
  /// Throws Error{not_found}.
  TensorView view(std::string_view name) const;
  /// Copies the tensor's bytes into `dst` (exactly byte_size() bytes).
  void read(std::string_view name, std::span<std::byte> dst) const;
  template <class T>
  std::vector<T> copy_as(std::string_view name) const {
    return view(name).copy_as<T>();
  }
  /// Copies several tensors at once (loading a model's parameters), their bytes split evenly
  /// over up to `threads` threads (0: set_conversion_threads' setting, by default one per
  /// core); from a URL, tensors that touch in the file come in one request, with several
  /// requests in flight. Every target is checked (name, size) before any byte is copied.
  void read_many(std::span<const TensorTarget> targets, unsigned threads = 0) const;
  /// Copies a slice; with pread only the needed bytes are read.
  std::vector<std::byte> read_slice(std::string_view name, std::span<const SliceIndex> indices,
                                    std::vector<uint64_t>* shape = nullptr) const;
  /// Reads dst.size() bytes of the data buffer at data offset `offset` into `dst`.
  void read_data(uint64_t offset, std::span<std::byte> dst) const;
  /// Reads several ranges of the data buffer (all checked first), as read_many does: split
  /// over threads, or for a URL, touching ranges in one request and several requests in flight.
  void read_data_many(std::span<const DataRange> ranges, unsigned threads = 0) const;
  /// Whole data buffer when it is in memory (mmap or buffer); empty span with pread.
  std::span<const std::byte> mapped_data() const noexcept;
  /// The OS file descriptor (for copy_file_range and the like); -1 for buffers.
  int native_handle() const noexcept;

  /// Another handle on this open file: the same source, mapping and header, kept alive as long
  /// as any handle (or view) is.
  File share() const { return File(state_); }

  File(File&&) noexcept;
  File& operator=(File&&) noexcept;
  ~File();

 private:
  friend struct detail::FileAccess;
  explicit File(std::shared_ptr<const detail::FileState> state);
  std::shared_ptr<const detail::FileState> state_;
};

/// Reads tensor `name` of `f` converted to `to` into `dst` (exactly the converted size).
/// Throws Error{not_found}, Error{unsupported} (e.g. C64), Error{invalid_argument}.
TLIO_API void read_as(const File& f, std::string_view name, Dtype to, std::span<std::byte> dst);
/// Tensor `name` as F32 values (any floating, integer or BOOL tensor).
TLIO_API std::vector<float> read_f32(const File& f, std::string_view name);

}  // namespace tlio
