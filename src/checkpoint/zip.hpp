// checkpoint/zip.hpp: the zip container of PyTorch checkpoints, read from memory. Only what the
// central directory lists, and only after every offset, size and name has been checked: ZIP64,
// stored entries viewed in place, deflated entries inflated (zlib), local headers consistent
// with the central directory, duplicate names and overlapping entries refused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tlio::detail {

/// The most entries a checkpoint's zip may list (torch writes one per storage, plus a few).
inline constexpr uint64_t kMaxZipEntries = uint64_t{1} << 22;
/// The most bytes a deflated entry may inflate to (a deflated storage is rare: torch stores).
inline constexpr uint64_t kMaxInflatedSize = uint64_t{16} << 30;

struct ZipEntry {
  std::string name;
  uint16_t method = 0;  // 0 stored, 8 deflated
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0;
  uint64_t size = 0;
  uint64_t local_offset = 0;  // of the local header
  uint64_t data_offset = 0;   // of the entry's bytes, after the local header
};

class ZipArchive {
 public:
  /// Reads and checks the directory of `bytes` (which must outlive the archive). Error{format,
  /// Rule::zip} naming the entry for anything out of bounds or inconsistent.
  explicit ZipArchive(std::span<const std::byte> bytes);

  const std::vector<ZipEntry>& entries() const noexcept { return entries_; }
  /// The entry named `name`, or nullptr.
  const ZipEntry* find(std::string_view name) const noexcept;
  /// A stored entry's bytes, in place.
  std::span<const std::byte> stored(const ZipEntry& e) const;
  /// The entry's bytes: stored ones copied, deflated ones inflated and checked against their
  /// size and CRC-32.
  std::vector<std::byte> read(const ZipEntry& e) const;

 private:
  std::span<const std::byte> bytes_;
  std::vector<ZipEntry> entries_;  // sorted by name
};

/// True when `head` starts like a zip archive (a local file header).
bool looks_like_zip(std::span<const std::byte> head) noexcept;

}  // namespace tlio::detail
