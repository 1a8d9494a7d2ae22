// io/os_file.hpp: the operating-system layer. Owns file descriptors, read-only mappings and
// positional reads and writes (output files: atomic_file.hpp). Everything above this module
// sees bytes and Error{io}, never errno. Reads, writes and copies ask the thread's
// InterruptScope between system calls, so a long one can be stopped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>

#include "io/live_files.hpp"

namespace tlio::detail {

/// Owns a file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  ~Fd();
  int get() const noexcept { return fd_; }
  int release() noexcept {
    int f = fd_;
    fd_ = -1;
    return f;
  }

 private:
  int fd_ = -1;
};

/// A new, empty file without a name in $TMPDIR (else /tmp), open for reading and writing: it
/// vanishes when closed, whatever happens to the process. Error{io} naming `purpose`.
Fd unnamed_temp_file(const std::string& purpose);

/// Error{io} for `name`: "what: <the OS's text for err>".
[[noreturn]] void throw_errno(const std::string& what, const std::string& name, int err);

/// O_DIRECT's alignment of offsets, sizes and buffers: a page covers every logical block size.
inline constexpr uint64_t kDirectAlign = 4096;
/// A second descriptor on the open file `fd` with O_DIRECT and `access` (O_RDONLY or O_WRONLY):
/// its own flags, the same file; none (-1) where the file system or /proc refuses.
Fd reopen_direct(int fd, int access);
/// Memory aligned for O_DIRECT (kDirectAlign), freed with free().
struct FreeAligned {
  void operator()(std::byte* p) const noexcept;
};
using AlignedBytes = std::unique_ptr<std::byte[], FreeAligned>;
/// `size` bytes aligned for O_DIRECT; Error{io} (ENOMEM) naming `name` when there are none.
AlignedBytes aligned_bytes(size_t size, const std::string& name);

/// Opens `path` read-only; Error{io} naming the path on failure (also for directories).
Fd open_read(const std::filesystem::path& path);
uint64_t fd_size(int fd, const std::string& name);
/// Reads exactly dst.size() bytes at `offset`; Error{io} on failure or a short read.
void pread_exact(int fd, uint64_t offset, std::span<std::byte> dst, const std::string& name);
/// pread_exact into memory likely never touched (a new tensor): each 64 MiB piece of 1 MiB or
/// more whose bytes are all in the page cache is faulted in first (populate_for_write).
void pread_into_new_memory(int fd, uint64_t offset, std::span<std::byte> dst,
                           const std::string& name);
/// Whether [offset, offset + length) of `fd` is all in the page cache (cachestat, Linux 6.5;
/// false where the kernel will not say: older kernels, files the caller may not write).
bool range_cached(int fd, uint64_t offset, uint64_t length) noexcept;
/// Faults in the whole pages of `dst` for writing in one call (MADV_POPULATE_WRITE, Linux
/// 5.14). Advice only: refusals are ignored (a read into bad memory reports it).
void populate_for_write(std::span<std::byte> dst) noexcept;
/// Writes all of `src` at `offset`; Error{io} on failure (disk full included).
void pwrite_all(int fd, uint64_t offset, std::span<const std::byte> src, const std::string& name);
/// Asks the kernel to start writing [offset, offset + length) to disk now, without waiting, so
/// a final fsync finds most of a large file already written. Best effort: errors are ignored
/// (the fsync reports them).
void start_writeback(int fd, uint64_t offset, uint64_t length) noexcept;
/// Tells the kernel this process is done with these pages of a read-only file mapping: they
/// leave its resident memory (the page cache keeps them). Best effort.
void drop_pages(std::span<const std::byte> mapped) noexcept;
/// Reads from a stream (a pipe, a terminal) until `dst` is full or the stream ends; the bytes
/// read. Error{io} naming `name`.
size_t read_stream(int fd, std::span<std::byte> dst, const std::string& name);

/// Writes the first `length` bytes of the regular file `in_fd` to `out_fd` (a pipe, socket,
/// terminal or file) in order, in the kernel (sendfile) where it can, through a bounded buffer
/// where not. Error{io} naming `name` (EPIPE when the reader went away).
void copy_to_stream(int in_fd, uint64_t length, int out_fd, const std::string& name);
/// Copies `length` bytes between files in the kernel (copy_file_range), falling back to
/// pread/pwrite through a bounded buffer where the kernel refuses.
void copy_range(int in_fd, uint64_t in_off, int out_fd, uint64_t out_off, uint64_t length,
                const std::string& name);

/// The largest JSON side file (config.json, a shard index) read whole; larger ones are refused
/// before any allocation. Real configs are a few KB and indexes of 100k tensors a few MB.
inline constexpr uint64_t kMaxTextFileSize = 64ULL << 20;

/// Reads a whole small file (at most kMaxTextFileSize bytes); Error{io} naming it, with errno.
std::string read_text_file(const std::filesystem::path& path);

/// A mapping of a whole file: read-only and shared, or private copy-on-write (writes become
/// this process's own pages; no swap reserved up front, so any file size maps).
class Mapping {
 public:
  Mapping() = default;
  Mapping(int fd, uint64_t size, const std::string& name, bool private_copy = false);
  Mapping(Mapping&& o) noexcept;
  Mapping& operator=(Mapping&& o) noexcept;
  ~Mapping();
  std::span<const std::byte> bytes() const noexcept { return {addr_, size_}; }

 private:
  const std::byte* addr_ = nullptr;
  size_t size_ = 0;
  LiveEntry live_;  // names the file to a SIGBUS handler
};

}  // namespace tlio::detail
