// common/copy.hpp: copying tensor bytes out of a mapping. Large copies use non-temporal stores: the
// destination is usually far larger than the caches and not read back at once, and glibc's
// memcpy only streams for single copies beyond about 3/4 of the last-level cache, so a file of
// many mid-sized tensors would otherwise pay a read-for-ownership of every destination line.
#pragma once

#include <cstddef>

namespace tlio::detail {

/// Copies of at least this many bytes stream past the caches.
inline constexpr size_t kStreamingCopyThreshold = size_t{1} << 20;

/// memcpy, streaming for large sizes. Buffers may overlap no more than memcpy's allow.
void copy_bytes(std::byte* dst, const std::byte* src, size_t n) noexcept;

/// memcpy with non-temporal stores whatever the size: for pieces of a large output that are
/// produced in a small scratch buffer (hot in cache) and not read back soon.
void stream_bytes(std::byte* dst, const std::byte* src, size_t n) noexcept;

}  // namespace tlio::detail
