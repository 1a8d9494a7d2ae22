// io/direct_source.hpp: a local file read past the page cache, for data read once (a whole
// load, a hash, a copy): O_DIRECT reads of aligned windows of at most kDirectWindow bytes,
// kDirectInFlight of them in flight at once (one blocking read per worker thread: the queue the
// disk sees is that deep whatever the cores). Bytes the caller's buffer cannot take directly
// (unaligned ends, a buffer not congruent with the file offset) go through a bounce buffer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "io/os_file.hpp"
#include "io/source.hpp"

namespace tlio::detail {

/// The largest single read, and the bounce buffer of each worker.
inline constexpr uint64_t kDirectWindow = uint64_t{1} << 20;
/// Reads in flight at once (worker threads) for one read_ranges call.
inline constexpr unsigned kDirectInFlight = 16;

/// A source over the open regular file `fd` read with O_DIRECT. Where the file system refuses
/// O_DIRECT (some FUSE mounts, tmpfs before Linux 6.6) it reads through the page cache with the
/// same queue.
/// `try_direct` false reads as if O_DIRECT were refused (for tests of that path).
std::shared_ptr<const ByteSource> direct_source(Fd fd, uint64_t size, std::string name, bool try_direct = true);

}  // namespace tlio::detail
