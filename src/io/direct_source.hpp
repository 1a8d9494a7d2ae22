// io/direct_source.hpp: a local file read past the page cache, for data read once (a whole
// load, a hash, a copy): O_DIRECT reads of aligned windows of at most kDirectWindow bytes,
// kDirectInFlight of them in flight at once, submitted through an io_uring (one thread, the
// queue the disk sees that deep whatever the cores) or, where the kernel refuses io_uring
// (seccomp profiles of containers, io_uring_disabled), one blocking read per worker thread.
// Bytes the caller's buffer cannot take directly (unaligned ends, a buffer not congruent with
// the file offset) go through a bounce buffer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "io/os_file.hpp"
#include "io/source.hpp"

namespace tlio::detail {

/// The largest single read, and the size of each bounce buffer.
inline constexpr uint64_t kDirectWindow = uint64_t{1} << 20;
/// Reads in flight at once for one read_ranges call.
inline constexpr unsigned kDirectInFlight = 16;

/// How a direct source reads: `best` for everything but the tests of each path.
enum class DirectPath {
  best,        ///< io_uring where the kernel allows it, else worker threads
  io_uring,    ///< io_uring only (Error{unsupported} where refused)
  threads,     ///< worker threads, one blocking read each
  page_cache,  ///< worker threads through the page cache, as where O_DIRECT is refused
};

/// Whether this process may set up an io_uring (probed once), and $TLIO_IO_URING is not "0".
bool io_uring_available() noexcept;

/// A source over the open regular file `fd` read with O_DIRECT. Where the file system refuses
/// O_DIRECT (some FUSE mounts, tmpfs before Linux 6.6) it reads through the page cache with
/// worker threads.
std::shared_ptr<const ByteSource> direct_source(Fd fd, uint64_t size, std::string name,
                                                DirectPath path = DirectPath::best);

}  // namespace tlio::detail
