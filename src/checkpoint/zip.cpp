#include "checkpoint/zip.hpp"

#include <fmt/core.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "common/checked.hpp"
#include "common/json_text.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kEnd64Sig = 0x06064b50;
constexpr uint32_t kEnd64LocatorSig = 0x07064b50;
constexpr size_t kEndSize = 22, kEnd64LocatorSize = 20, kEnd64Size = 56;
constexpr size_t kCentralSize = 46, kLocalSize = 30;

[[noreturn]] void bad(std::string entry, std::string detail) {
  throw_format(Rule::zip, std::move(entry), std::move(detail));
}

// Little-endian fields of `bytes`, bounds-checked by the caller's range checks.
uint64_t le(std::span<const std::byte> bytes, size_t at, size_t width) {
  uint64_t v = 0;
  for (size_t i = 0; i < width; ++i)
    v |= uint64_t(std::to_integer<uint8_t>(bytes[at + i])) << (8 * i);
  return v;
}

// [at, at + size) inside `bytes`, or an error about `what`.
void need(std::span<const std::byte> bytes, uint64_t at, uint64_t size, const std::string& entry,
          const char* what) {
  const auto end = checked_add(at, size);
  if (!end || *end > bytes.size())
    bad(entry, fmt::format("{} at byte {} ({} bytes) is past the end of the file ({} bytes)", what,
                           at, size, bytes.size()));
}

// The ZIP64 extended information (extra field 0x0001) fills the fields that hold all ones.
struct Zip64Fields {
  uint64_t size, compressed_size, offset;
};
void apply_zip64(std::span<const std::byte> extra, Zip64Fields& f, bool want_offset,
                 const std::string& entry) {
  const bool want_size = f.size == 0xFFFFFFFF, want_csize = f.compressed_size == 0xFFFFFFFF;
  want_offset = want_offset && f.offset == 0xFFFFFFFF;
  size_t at = 0;
  while (at + 4 <= extra.size()) {
    const auto id = le(extra, at, 2), len = le(extra, at + 2, 2);
    if (at + 4 + len > extra.size()) bad(entry, "an extra field runs past its header");
    if (id == 1) {
      const size_t n = (want_size + want_csize + want_offset) * size_t{8};
      if (len < n) bad(entry, "its ZIP64 field is too short");
      size_t p = at + 4;
      if (want_size) f.size = le(extra, p, 8), p += 8;
      if (want_csize) f.compressed_size = le(extra, p, 8), p += 8;
      if (want_offset) f.offset = le(extra, p, 8);
      return;
    }
    at += 4 + len;
  }
  if (want_size || want_csize || want_offset)
    bad(entry, "a size or offset needs a ZIP64 field, which is missing");
}

}  // namespace

bool looks_like_zip(std::span<const std::byte> head) noexcept {
  return head.size() >= 4 && le(head, 0, 4) == kLocalSig;
}

ZipArchive::ZipArchive(std::span<const std::byte> bytes) : bytes_(bytes) {
  // The end record: the last signature in the final 22 + 65535 bytes whose comment fits.
  if (bytes.size() < kEndSize) bad({}, "too short for a zip archive");
  std::optional<size_t> end;
  const size_t lowest = bytes.size() > kEndSize + 0xFFFF ? bytes.size() - kEndSize - 0xFFFF : 0;
  for (size_t at = bytes.size() - kEndSize + 1; at-- > lowest;)
    if (le(bytes, at, 4) == kEndSig && at + kEndSize + le(bytes, at + 20, 2) == bytes.size()) {
      end = at;
      break;
    }
  if (!end) bad({}, "no end-of-central-directory record");
  if (le(bytes, *end + 4, 2) != 0 || le(bytes, *end + 6, 2) != 0)
    bad({}, "archives split over several disks are not supported");
  uint64_t count = le(bytes, *end + 10, 2), cd_size = le(bytes, *end + 12, 4),
           cd_offset = le(bytes, *end + 16, 4);
  uint64_t directory_end = *end;
  if (count == 0xFFFF || cd_size == 0xFFFFFFFF || cd_offset == 0xFFFFFFFF) {
    if (*end < kEnd64LocatorSize || le(bytes, *end - kEnd64LocatorSize, 4) != kEnd64LocatorSig)
      bad({}, "the end record asks for ZIP64 but there is no ZIP64 locator");
    const uint64_t at = le(bytes, *end - kEnd64LocatorSize + 8, 8);
    need(bytes, at, kEnd64Size, {}, "the ZIP64 end record");
    if (le(bytes, at, 4) != kEnd64Sig) bad({}, "no ZIP64 end record where its locator points");
    if (at + kEnd64Size > *end - kEnd64LocatorSize)
      bad({}, "the ZIP64 end record overlaps its locator");
    count = le(bytes, at + 32, 8);
    cd_size = le(bytes, at + 40, 8);
    cd_offset = le(bytes, at + 48, 8);
    directory_end = at;
  }
  if (count > kMaxZipEntries)
    bad({}, fmt::format("{} entries is over the limit of {}", count, kMaxZipEntries));
  need(bytes, cd_offset, cd_size, {}, "the central directory");
  if (cd_offset + cd_size > directory_end) bad({}, "the central directory overlaps its end record");

  // Each central record, then its local header. Entries must lie before the directory.
  entries_.reserve(static_cast<size_t>(count));
  uint64_t at = cd_offset;
  for (uint64_t i = 0; i < count; ++i) {
    need(bytes, at, kCentralSize, {}, "a central directory record");
    if (at + kCentralSize > cd_offset + cd_size)
      bad({}, "the central directory is shorter than its records");
    if (le(bytes, at, 4) != kCentralSig)
      bad({}, fmt::format("central directory record {} has no signature", i));
    const uint64_t flags = le(bytes, at + 8, 2), method = le(bytes, at + 10, 2);
    const uint64_t name_len = le(bytes, at + 28, 2), extra_len = le(bytes, at + 30, 2),
                   comment_len = le(bytes, at + 32, 2);
    const uint64_t record_end = at + kCentralSize + name_len + extra_len + comment_len;
    if (record_end > cd_offset + cd_size)
      bad({}, fmt::format("central directory record {} runs past the directory", i));
    ZipEntry e;
    e.name.assign(reinterpret_cast<const char*>(bytes.data() + at + kCentralSize), name_len);
    const std::string quoted = quote_name(e.name);
    if (flags & 1) bad(e.name, fmt::format("entry {} is encrypted", quoted));
    if (method != 0 && method != 8)
      bad(e.name,
          fmt::format("entry {} uses compression method {} (only stored and deflated are read)",
                      quoted, method));
    e.method = static_cast<uint16_t>(method);
    e.crc32 = static_cast<uint32_t>(le(bytes, at + 16, 4));
    Zip64Fields f{le(bytes, at + 24, 4), le(bytes, at + 20, 4), le(bytes, at + 42, 4)};
    apply_zip64(bytes.subspan(static_cast<size_t>(at + kCentralSize + name_len),
                              static_cast<size_t>(extra_len)),
                f, true, e.name);
    e.size = f.size;
    e.compressed_size = f.compressed_size;
    if (e.method == 0 && e.size != e.compressed_size)
      bad(e.name, fmt::format("stored entry {} has size {} but {} stored bytes", quoted, e.size,
                              e.compressed_size));

    // The local header must agree with the central record.
    need(bytes, f.offset, kLocalSize, e.name, "the local header");
    if (le(bytes, f.offset, 4) != kLocalSig)
      bad(e.name, fmt::format("entry {} has no local header at byte {}", quoted, f.offset));
    const uint64_t local_name = le(bytes, f.offset + 26, 2),
                   local_extra = le(bytes, f.offset + 28, 2);
    need(bytes, f.offset + kLocalSize, local_name + local_extra, e.name, "the local header's name");
    if (local_name != name_len ||
        std::memcmp(bytes.data() + f.offset + kLocalSize, e.name.data(), name_len) != 0)
      bad(e.name, fmt::format("entry {}: the local header names another entry", quoted));
    if (le(bytes, f.offset + 8, 2) != method)
      bad(e.name, fmt::format("entry {}: the local header has another method", quoted));
    if (!(le(bytes, f.offset + 6, 2) &
          8)) {  // sizes in the local header unless a data descriptor follows
      Zip64Fields lf{le(bytes, f.offset + 22, 4), le(bytes, f.offset + 18, 4), 0};
      apply_zip64(bytes.subspan(static_cast<size_t>(f.offset + kLocalSize + local_name),
                                static_cast<size_t>(local_extra)),
                  lf, false, e.name);
      if (lf.size != e.size || lf.compressed_size != e.compressed_size ||
          le(bytes, f.offset + 14, 4) != e.crc32)
        bad(e.name,
            fmt::format("entry {}: the local header's sizes or CRC differ from the directory's",
                        quoted));
    }
    e.local_offset = f.offset;
    e.data_offset = f.offset + kLocalSize + local_name + local_extra;
    need(bytes, e.data_offset, e.compressed_size, e.name, "the entry's data");
    if (e.data_offset + e.compressed_size > cd_offset)
      bad(e.name, fmt::format("entry {} runs into the central directory", quoted));
    entries_.push_back(std::move(e));
    at = record_end;
  }

  // No two entries share a name or a byte.
  std::vector<const ZipEntry*> by_offset;
  by_offset.reserve(entries_.size());
  for (const ZipEntry& e : entries_) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const ZipEntry* a, const ZipEntry* b) { return a->local_offset < b->local_offset; });
  for (size_t i = 1; i < by_offset.size(); ++i)
    if (by_offset[i - 1]->data_offset + by_offset[i - 1]->compressed_size >
        by_offset[i]->local_offset)
      bad(by_offset[i]->name,
          fmt::format("entry {} overlaps entry {}", quote_name(by_offset[i]->name),
                      quote_name(by_offset[i - 1]->name)));
  std::sort(entries_.begin(), entries_.end(),
            [](const ZipEntry& a, const ZipEntry& b) { return a.name < b.name; });
  for (size_t i = 1; i < entries_.size(); ++i)
    if (entries_[i].name == entries_[i - 1].name)
      bad(entries_[i].name, fmt::format("entry {} is listed twice", quote_name(entries_[i].name)));
}

const ZipEntry* ZipArchive::find(std::string_view name) const noexcept {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const ZipEntry& e, std::string_view n) { return e.name < n; });
  return it != entries_.end() && it->name == name ? &*it : nullptr;
}

std::span<const std::byte> ZipArchive::stored(const ZipEntry& e) const {
  if (e.method != 0)
    bad(e.name, fmt::format("entry {} is deflated, not stored", quote_name(e.name)));
  return bytes_.subspan(static_cast<size_t>(e.data_offset), static_cast<size_t>(e.size));
}

std::vector<std::byte> ZipArchive::read(const ZipEntry& e) const {
  if (e.method == 0) {
    auto s = stored(e);
    return {s.begin(), s.end()};
  }
  if (e.size > kMaxInflatedSize)
    bad(e.name, fmt::format("entry {} inflates to {} bytes, over the limit of {}",
                            quote_name(e.name), e.size, kMaxInflatedSize));
  // The output grows as the stream really inflates (a chunk at a time), never to a declared size
  // the stream does not back: a small bomb claiming gigabytes allocates little.
  constexpr size_t kChunk = size_t{1} << 20;
  std::vector<std::byte> out;
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK)
    throw Error(ErrorCode::out_of_memory, Rule::none, e.name, std::nullopt, "zlib could not start");
  const auto* in = reinterpret_cast<const Bytef*>(bytes_.data() + e.data_offset);
  uint64_t in_left = e.compressed_size;
  int rc = Z_OK;
  while (rc == Z_OK && out.size() <= e.size) {
    if (z.avail_in == 0 && in_left > 0) {  // zlib counts in 32 bits: feed in pieces
      z.next_in = const_cast<Bytef*>(in);
      z.avail_in = static_cast<uInt>(std::min<uint64_t>(in_left, 1u << 30));
      in += z.avail_in;
      in_left -= z.avail_in;
    }
    const size_t before = out.size();
    // Room for the rest of the declared size, plus one byte to notice a longer stream.
    const size_t room = static_cast<size_t>(std::min<uint64_t>(kChunk, e.size - before + 1));
    out.resize(before + room);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + before);
    z.avail_out = static_cast<uInt>(room);
    rc = inflate(&z, Z_NO_FLUSH);
    out.resize(before + (room - z.avail_out));
    if (rc == Z_BUF_ERROR && z.avail_in == 0 && in_left == 0) break;  // input ended early
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END || out.size() != e.size)
    bad(e.name,
        fmt::format("entry {} does not inflate to its {} bytes", quote_name(e.name), e.size));
  uLong crc = crc32(0, nullptr, 0);
  for (uint64_t done = 0; done < out.size();) {
    const auto n = static_cast<uInt>(std::min<uint64_t>(out.size() - done, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(out.data() + done), n);
    done += n;
  }
  if (crc != e.crc32)
    bad(e.name, fmt::format("entry {} fails its CRC-32 check", quote_name(e.name)));
  return out;
}

}  // namespace tlio::detail
