// Tests for checkpoint/zip.hpp on archives built here: stored entries in place, deflated ones
// inflated and checked, ZIP64, and every inconsistency refused with Rule::zip.
#include "checkpoint/zip.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

struct Entry {
  std::string name, data;
  uint16_t method = 0;
  bool zip64 = false;  // sizes and offset in a ZIP64 extra field
};

void put(std::string& out, uint64_t v, int width) {
  for (int i = 0; i < width; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}

std::string deflate_raw(const std::string& in) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, in.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// An archive of `entries`; with zip64_end, the end records are the ZIP64 ones.
std::string build(const std::vector<Entry>& entries, bool zip64_end = false) {
  std::string out, central;
  for (const Entry& e : entries) {
    const std::string stored = e.method == 8 ? deflate_raw(e.data) : e.data;
    const auto crc = static_cast<uint32_t>(
        crc32(0, reinterpret_cast<const Bytef*>(e.data.data()), static_cast<uInt>(e.data.size())));
    const uint64_t offset = out.size();
    std::string local_extra, central_extra;
    if (e.zip64) {
      put(local_extra, 1, 2), put(local_extra, 16, 2), put(local_extra, e.data.size(), 8),
          put(local_extra, stored.size(), 8);
      put(central_extra, 1, 2), put(central_extra, 24, 2), put(central_extra, e.data.size(), 8),
          put(central_extra, stored.size(), 8), put(central_extra, offset, 8);
    }
    const uint64_t big = 0xFFFFFFFF;
    put(out, 0x04034b50, 4), put(out, 45, 2), put(out, 0, 2), put(out, e.method, 2), put(out, 0, 4),
        put(out, crc, 4);
    put(out, e.zip64 ? big : stored.size(), 4), put(out, e.zip64 ? big : e.data.size(), 4);
    put(out, e.name.size(), 2), put(out, local_extra.size(), 2);
    out += e.name + local_extra + stored;
    put(central, 0x02014b50, 4), put(central, 45, 2), put(central, 45, 2), put(central, 0, 2),
        put(central, e.method, 2);
    put(central, 0, 4), put(central, crc, 4), put(central, e.zip64 ? big : stored.size(), 4);
    put(central, e.zip64 ? big : e.data.size(), 4), put(central, e.name.size(), 2),
        put(central, central_extra.size(), 2);
    put(central, 0, 2), put(central, 0, 2), put(central, 0, 2), put(central, 0, 4),
        put(central, e.zip64 ? big : offset, 4);
    central += e.name + central_extra;
  }
  const uint64_t cd_offset = out.size();
  out += central;
  if (zip64_end) {
    const uint64_t record = out.size();
    put(out, 0x06064b50, 4), put(out, 44, 8), put(out, 45, 2), put(out, 45, 2), put(out, 0, 4),
        put(out, 0, 4);
    put(out, entries.size(), 8), put(out, entries.size(), 8), put(out, central.size(), 8),
        put(out, cd_offset, 8);
    put(out, 0x07064b50, 4), put(out, 0, 4), put(out, record, 8), put(out, 1, 4);
  }
  put(out, 0x06054b50, 4), put(out, 0, 2), put(out, 0, 2);
  put(out, zip64_end ? 0xFFFF : entries.size(), 2),
      put(out, zip64_end ? 0xFFFF : entries.size(), 2);
  put(out, zip64_end ? 0xFFFFFFFF : central.size(), 4),
      put(out, zip64_end ? 0xFFFFFFFF : cd_offset, 4), put(out, 0, 2);
  return out;
}

std::span<const std::byte> bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

std::string text(const std::vector<std::byte>& v) {
  return {reinterpret_cast<const char*>(v.data()), v.size()};
}

// The message of the Rule::zip error reading `archive` raises (empty when it reads).
std::string refusal(const std::string& archive) {
  try {
    ZipArchive z(bytes(archive));
    for (const ZipEntry& e : z.entries()) (void)z.read(e);
  } catch (const Error& e) {
    EXPECT_EQ(e.rule(), Rule::zip) << e.what();
    return e.what();
  }
  return {};
}

TEST(Zip, StoredInPlaceDeflatedInflated) {
  const std::string big(100000, 'x');
  const std::string a =
      build({{"arch/data.pkl", "pickle"}, {"arch/data/0", big, 8}, {"arch/version", "3\n"}});
  ZipArchive z(bytes(a));
  ASSERT_EQ(z.entries().size(), 3u);
  const ZipEntry* pkl = z.find("arch/data.pkl");
  ASSERT_NE(pkl, nullptr);
  const auto in_place = z.stored(*pkl);
  EXPECT_EQ(reinterpret_cast<const char*>(in_place.data()), a.data() + 30 + 13);  // no copy
  EXPECT_EQ(text(z.read(*z.find("arch/data/0"))), big);
  EXPECT_EQ(z.find("arch/nope"), nullptr);
  EXPECT_THROW((void)z.stored(*z.find("arch/data/0")), Error);
  EXPECT_TRUE(looks_like_zip(bytes(a)));
}

TEST(Zip, Zip64RecordsAndFields) {
  const std::string a =
      build({{"a/data.pkl", "p", 0, true}, {"a/data/0", std::string(5000, 'y'), 8, true}}, true);
  ZipArchive z(bytes(a));
  EXPECT_EQ(text(z.read(*z.find("a/data.pkl"))), "p");
  EXPECT_EQ(text(z.read(*z.find("a/data/0"))), std::string(5000, 'y'));
}

TEST(Zip, InconsistenciesAreRefused) {
  const std::string good = build({{"a/x", "hello"}, {"a/y", "world"}});
  EXPECT_EQ(refusal(good), "");
  EXPECT_NE(refusal(build({{"a/x", "1"}, {"a/x", "2"}})).find("listed twice"), std::string::npos);
  EXPECT_NE(refusal(good.substr(0, good.size() - 1)).find("end-of-central-directory"),
            std::string::npos);
  EXPECT_NE(refusal("PK\x03\x04").find("too short"), std::string::npos);

  std::string renamed = good;  // the first local header names another entry
  renamed[30 + 2] = 'z';
  EXPECT_NE(refusal(renamed).find("local header names another"), std::string::npos);

  std::string sized = good;  // the local header's size differs from the directory's
  sized[18] = 9;
  EXPECT_NE(refusal(sized).find("differ"), std::string::npos);

  std::string crc = build({{"a/x", std::string(1000, 'q'), 8}});  // a deflated entry's CRC
  crc[14] ^= 1;
  const size_t central_crc = crc.find("PK\x01\x02") + 16;
  crc[central_crc] ^= 1;
  EXPECT_NE(refusal(crc).find("CRC-32"), std::string::npos);

  std::string method = good;  // bzip2 (12) in both headers
  method[8] = 12;
  method[method.find("PK\x01\x02") + 10] = 12;
  EXPECT_NE(refusal(method).find("compression method 12"), std::string::npos);

  std::string encrypted = good;
  encrypted[encrypted.find("PK\x01\x02") + 8] = 1;
  EXPECT_NE(refusal(encrypted).find("encrypted"), std::string::npos);

  std::string far = good;  // the first entry's local header offset past the end
  far[far.find("PK\x01\x02") + 42] = '\x7f';
  EXPECT_NE(refusal(far), "");

  std::string overlap = good;  // the second entry's offset points into the first
  const size_t second = overlap.find("PK\x01\x02", overlap.find("PK\x01\x02") + 4);
  overlap[second + 42] = 0;
  EXPECT_NE(refusal(overlap), "");
}

TEST(Zip, InflatingMoreThanDeclaredIsRefused) {
  std::string bomb = build({{"a/x", std::string(1 << 20, '\0'), 8}});
  // Declare 1000 bytes (in both headers): the stream holds a MiB.
  const size_t central = bomb.find("PK\x01\x02");
  for (size_t at : {size_t{22}, central + 24}) {
    bomb[at] = '\xe8', bomb[at + 1] = '\x03', bomb[at + 2] = 0, bomb[at + 3] = 0;
  }
  EXPECT_NE(refusal(bomb).find("does not inflate"), std::string::npos);
}

}  // namespace
}  // namespace tlio::detail
