#include "io/os_file.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "io/interrupt.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

// Largest single read/write/copy request: also how much data passes between two questions to
// the thread's InterruptScope.
constexpr size_t kMaxIoChunk = size_t{64} << 20;
// Reads into new memory at least this large fault it in first when the page cache has the bytes.
constexpr size_t kPopulateFrom = size_t{1} << 20;
// Buffer for the pread/pwrite fallback of copy_range.
constexpr size_t kCopyBuffer = size_t{1} << 20;

// madvise() on the whole pages inside [data, data + size) only: neighbours may still be in use.
void advise_whole_pages(const void* data, size_t size, int advice) noexcept {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<uintptr_t>(data) + page - 1) / page * page;
  const auto end = (reinterpret_cast<uintptr_t>(data) + size) / page * page;
  if (end > begin) (void)::madvise(reinterpret_cast<void*>(begin), end - begin, advice);
}

}  // namespace

void throw_errno(const std::string& what, const std::string& name, int err) {
  throw_io(what, name, std::error_code(err, std::generic_category()));
}

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

Fd unnamed_temp_file(const std::string& purpose) {
  const char* env = std::getenv("TMPDIR");
  const std::string dir = env && *env ? env : "/tmp";
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
    // A file system without O_TMPFILE: a named file, unlinked at once.
    std::string name = dir + "/tlio-spool-XXXXXX";
    fd = ::mkostemp(name.data(), O_CLOEXEC);
    if (fd >= 0) ::unlink(name.c_str());
  }
  if (fd < 0)
    throw_errno(fmt::format("cannot make a temporary file in {} for", dir), purpose, errno);
  return Fd(fd);
}

Fd open_read(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_errno("cannot open", path.string(), errno);
  Fd owned(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0) throw_errno("cannot stat", path.string(), errno);
  if (S_ISDIR(st.st_mode)) throw_errno("cannot read", path.string(), EISDIR);
  return owned;
}

uint64_t fd_size(int fd, const std::string& name) {
  struct stat st;
  if (::fstat(fd, &st) != 0) throw_errno("cannot stat", name, errno);
  return static_cast<uint64_t>(st.st_size);
}

Fd reopen_direct(int fd, int access) {
  const std::string self = fmt::format("/proc/self/fd/{}", fd);
  return Fd(::open(self.c_str(), access | O_DIRECT | O_CLOEXEC));
}

void FreeAligned::operator()(std::byte* p) const noexcept { std::free(p); }

AlignedBytes aligned_bytes(size_t size, const std::string& name) {
  void* p = nullptr;
  if (::posix_memalign(&p, kDirectAlign, size) != 0)
    throw_errno("cannot allocate an aligned buffer", name, ENOMEM);
  return AlignedBytes(static_cast<std::byte*>(p));
}

void pread_exact(int fd, uint64_t offset, std::span<std::byte> dst, const std::string& name) {
  size_t done = 0;
  while (done < dst.size()) {
    poll_interrupt();
    size_t want = std::min(dst.size() - done, kMaxIoChunk);
    ssize_t got = ::pread(fd, dst.data() + done, want, static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw_errno("read failed", name, errno);
    }
    if (got == 0)
      throw_io(
          fmt::format("unexpected end of file at byte {} (was the file truncated?)", offset + done),
          name);
    done += static_cast<size_t>(got);
  }
}

void pread_into_new_memory(int fd, uint64_t offset, std::span<std::byte> dst,
                           const std::string& name) {
  // Fresh memory faulted page by page under the copy from the page cache took a quarter of a
  // warm 2 GiB load (0.64 s against 0.47 s, docs/benchmarks.md); one call makes the pages in a
  // batch. Not for bytes still on disk: there it made a cold load 15% slower.
  for (size_t done = 0; done < dst.size();) {
    const size_t n = std::min(dst.size() - done, kMaxIoChunk);
    const std::span<std::byte> piece = dst.subspan(done, n);
    if (n >= kPopulateFrom && range_cached(fd, offset + done, n)) populate_for_write(piece);
    pread_exact(fd, offset + done, piece, name);
    done += n;
  }
}

bool range_cached(int fd, uint64_t offset, uint64_t length) noexcept {
#if defined(__NR_cachestat)
  constexpr long kCachestat = __NR_cachestat;
#elif defined(__linux__) && !defined(__alpha__) && !defined(__mips__)
  constexpr long kCachestat = 451;  // the shared system call table's number (Linux 6.5)
#else
  constexpr long kCachestat = -1;
#endif
  struct Range {
    uint64_t off, len;
  } range{offset, length};
  struct Stat {
    uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
  } stat{};
  // ENOSYS before 6.5; EPERM for files the caller may not write (as mincore since 5.0).
  if (kCachestat < 0 || length == 0 || syscall(kCachestat, fd, &range, &stat, 0) != 0) return false;
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return stat.nr_cache >= (offset % page + length + page - 1) / page;
}

void populate_for_write(std::span<std::byte> dst) noexcept {
  constexpr int kPopulateWrite = 23;  // MADV_POPULATE_WRITE (Linux 5.14), absent from older headers
  advise_whole_pages(dst.data(), dst.size(), kPopulateWrite);
}

void pwrite_all(int fd, uint64_t offset, std::span<const std::byte> src, const std::string& name) {
  size_t done = 0;
  while (done < src.size()) {
    poll_interrupt();
    size_t want = std::min(src.size() - done, kMaxIoChunk);
    ssize_t put = ::pwrite(fd, src.data() + done, want, static_cast<off_t>(offset + done));
    if (put < 0) {
      if (errno == EINTR) continue;
      throw_errno("write failed", name, errno);
    }
    done += static_cast<size_t>(put);
  }
}

void start_writeback(int fd, uint64_t offset, uint64_t length) noexcept {
  (void)::sync_file_range(fd, static_cast<off64_t>(offset), static_cast<off64_t>(length),
                          SYNC_FILE_RANGE_WRITE);
}

void drop_pages(std::span<const std::byte> mapped) noexcept {
  advise_whole_pages(mapped.data(), mapped.size(), MADV_DONTNEED);
}

void copy_range(int in_fd, uint64_t in_off, int out_fd, uint64_t out_off, uint64_t length,
                const std::string& name) {
  while (length > 0) {
    poll_interrupt();
    loff_t src = static_cast<loff_t>(in_off), dst = static_cast<loff_t>(out_off);
    size_t want = static_cast<size_t>(std::min<uint64_t>(length, kMaxIoChunk));
    ssize_t n = ::copy_file_range(in_fd, &src, out_fd, &dst, want, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // unsupported here (or source shrank): finish with plain reads
    in_off += static_cast<uint64_t>(n);
    out_off += static_cast<uint64_t>(n);
    length -= static_cast<uint64_t>(n);
  }
  if (length == 0) return;
  std::vector<std::byte> buf(static_cast<size_t>(std::min<uint64_t>(length, kCopyBuffer)));
  while (length > 0) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(length, buf.size()));  // (pread/pwrite poll)
    pread_exact(in_fd, in_off, {buf.data(), n}, name);
    pwrite_all(out_fd, out_off, {buf.data(), n}, name);
    in_off += n;
    out_off += n;
    length -= n;
  }
}

size_t read_stream(int fd, std::span<std::byte> dst, const std::string& name) {
  size_t got = 0;
  while (got < dst.size()) {
    poll_interrupt();
    const ssize_t n = ::read(fd, dst.data() + got, std::min<size_t>(dst.size() - got, kMaxIoChunk));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("cannot read", name, errno);
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  return got;
}

namespace {
// Until `fd` takes more bytes (a full pipe on a non-blocking descriptor); a tenth of a second at
// most, so a stop request is seen.
void wait_writable(int fd) {
  pollfd p{fd, POLLOUT, 0};
  (void)::poll(&p, 1, 100);
}
}  // namespace

void copy_to_stream(int in_fd, uint64_t length, int out_fd, const std::string& name) {
  off_t in_off = 0;
  while (length > 0) {
    poll_interrupt();
    const ssize_t n = ::sendfile(out_fd, in_fd, &in_off,
                                 static_cast<size_t>(std::min<uint64_t>(length, kMaxIoChunk)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {  // a non-blocking stdout: wait
      wait_writable(out_fd);
      continue;
    }
    if (n < 0 && (errno == EINVAL || errno == ENOSYS)) break;  // not for this pair: plain writes
    if (n < 0) throw_errno("cannot write", name, errno);
    if (n == 0) throw_io("the temporary copy ended early", name);
    length -= static_cast<uint64_t>(n);
  }
  if (length == 0) return;
  std::vector<std::byte> buf(static_cast<size_t>(std::min<uint64_t>(length, kCopyBuffer)));
  while (length > 0) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(length, buf.size()));
    pread_exact(in_fd, static_cast<uint64_t>(in_off), {buf.data(), n}, name);
    for (size_t done = 0; done < n;) {  // a stream: write(), in order
      poll_interrupt();
      const ssize_t w = ::write(out_fd, buf.data() + done, n - done);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        wait_writable(out_fd);
        continue;
      }
      if (w < 0) throw_errno("cannot write", name, errno);
      done += static_cast<size_t>(w);
    }
    in_off += static_cast<off_t>(n);
    length -= n;
  }
}

std::string read_text_file(const std::filesystem::path& path) {
  const std::string name = path.string();
  Fd fd = open_read(path);
  const uint64_t size = fd_size(fd.get(), name);
  if (size > kMaxTextFileSize)
    throw_io(
        fmt::format("{} bytes is over the limit of {} for a JSON file", size, kMaxTextFileSize),
        name, std::make_error_code(std::errc::file_too_large));
  std::string text(static_cast<size_t>(size), '\0');
  pread_exact(fd.get(), 0, std::as_writable_bytes(std::span(text)), name);
  return text;
}

Mapping::Mapping(int fd, uint64_t size, const std::string& name, bool private_copy) {
  if (size == 0) return;
  if (size > SIZE_MAX) throw_io("file too large to map on this platform", name);
  void* p = private_copy ? ::mmap(nullptr, static_cast<size_t>(size), PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_NORESERVE, fd, 0)
                         : ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) throw_errno("cannot map", name, errno);
  addr_ = static_cast<const std::byte*>(p);
  size_ = static_cast<size_t>(size);
  live_ = LiveEntry::mapping(addr_, size_, name);
}

Mapping::Mapping(Mapping&& o) noexcept : addr_(o.addr_), size_(o.size_), live_(std::move(o.live_)) {
  o.addr_ = nullptr;
  o.size_ = 0;
}

Mapping& Mapping::operator=(Mapping&& o) noexcept {
  if (this != &o) {
    live_ = std::move(o.live_);  // unregistered before the old range can be mapped again
    if (addr_) ::munmap(const_cast<std::byte*>(addr_), size_);
    addr_ = o.addr_;
    size_ = o.size_;
    o.addr_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

Mapping::~Mapping() {
  live_.reset();  // before the range can be mapped again by someone else
  if (addr_) ::munmap(const_cast<std::byte*>(addr_), size_);
}

}  // namespace tlio::detail
