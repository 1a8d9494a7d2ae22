// Tests for io/location.hpp, io/source.hpp and io/store.hpp: names parsed once into locations,
// the stores registered by scheme, what each local source can do, and libcurl left unloaded
// by local work.
#include "io/source.hpp"

#include <gtest/gtest.h>
#include <link.h>

#include <cstring>
#include <numeric>

#include "io/crypto_library.hpp"
#include "io/curl_library.hpp"
#include "io/location.hpp"
#include "io/store.hpp"
#include "test_util.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"

namespace tlio::detail {
namespace {

TEST(Location, RegisteredSchemesAreUrlsEverythingElseIsAPath) {
  EXPECT_EQ(Location::parse("https://h/x.safetensors").scheme(), "https");
  EXPECT_EQ(Location::parse("http://h").scheme(), "http");
  // Schemes are case-insensitive (RFC 3986): written in lower case for the store and libcurl.
  EXPECT_EQ(Location::parse("HTTP://h/x").scheme(), "http");
  EXPECT_EQ(Location::parse("HtTpS://h/X").text(), "https://h/X");
  for (const char* path : {"model.safetensors", "/abs/x", "ftp:x", "/http://x", "://x",
                           "dir/http://x", "a b://x", ""}) {
    const Location l = Location::parse(path);
    EXPECT_TRUE(l.is_local()) << path;
    EXPECT_EQ(l.text(), path);
    EXPECT_EQ(l.path(), std::filesystem::path(path));
  }
}

TEST(Location, AnUnknownSchemeIsRefusedByName) {
  for (const char* url : {"ftp://h/x", "FTP://h/x", "file:///x", "gopher://user:pw@h/x"}) {
    try {
      (void)Location::parse(url);
      FAIL() << url;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::unsupported);
      const std::string what = e.what();
      EXPECT_NE(what.find("unsupported URL scheme '"), std::string::npos) << what;
      EXPECT_EQ(what.find("pw@"), std::string::npos) << what;
    }
  }
}

TEST(Location, DisplayDropsCredentialsAndJoinFollowsTheStore) {
  const Location url = Location::parse("https://user:secret@h:8/d/?sig=1");
  EXPECT_EQ(url.display(), "https://h:8/d/?sig=...");  // a query value may be a signature
  EXPECT_EQ(url.text(), "https://user:secret@h:8/d/?sig=1");
  const Location file = url.join("a b.json");
  EXPECT_EQ(file.scheme(), "https");
  EXPECT_EQ(file.display(), "https://h:8/d/a%20b.json?sig=...");
  EXPECT_EQ(file.text(), "https://user:secret@h:8/d/a%20b.json?sig=1");
  EXPECT_EQ(Location::parse("dir").join("config.json").text(),
            (std::filesystem::path("dir") / "config.json").string());
}

TEST(Store, DirectoriesByStore) {
  test::TempDir dir;
  test::write_bytes(dir / "f", test::to_bytes("{}"));
  const Location folder = Location::parse(dir.path().string()), file = folder.join("f");
  const Store& local = store_of(folder);
  EXPECT_EQ(local.is_directory(folder), true);
  EXPECT_EQ(local.is_directory(file), false);
  EXPECT_NO_THROW(local.check_directory(folder));
  try {
    local.check_directory(file);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.os_error(), std::errc::not_a_directory);
  }
  try {
    local.check_directory(folder.join("missing"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.os_error(), std::errc::no_such_file_or_directory);
  }
  EXPECT_EQ(local.read_small(file, {}), std::optional<std::string>("{}"));
  EXPECT_EQ(local.read_small(folder.join("missing"), {}), std::nullopt);
  EXPECT_TRUE(local.exists(file, {}));
  // HTTP is asked nothing: it tells directories by their spelling, when it can.
  const Store& http = store_of(Location::parse("http://h/d/"));
  EXPECT_EQ(http.is_directory(Location::parse("http://h/d/")), true);
  EXPECT_EQ(http.is_directory(Location::parse("http://h/d/x.safetensors?download=1")), false);
  EXPECT_EQ(http.is_directory(Location::parse("http://h/d")), std::nullopt);
  EXPECT_EQ(find_store("gopher"), nullptr);
  EXPECT_FALSE(curl_library_loaded());
  EXPECT_FALSE(crypto_library_loaded());  // nor libcrypto: only signing and hashing need it
}

// Every local access says what it can do, and reads the same bytes.
TEST(Source, LocalSourcesSayWhatTheyCanDo) {
  test::TempDir dir;
  std::vector<std::byte> bytes(10 << 20);  // over the 8 MiB from which reads go to threads
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 7 % 253);
  test::write_bytes(dir / "f", bytes);
  const Location where = Location::parse((dir / "f").string());
  using Access = SourceOptions::Access;
  for (Access access : {Access::map_shared, Access::map_private, Access::read}) {
    const auto source = open_source(where, {.access = access});
    EXPECT_EQ(source->size(), bytes.size());
    EXPECT_EQ(source->name(), where.display());
    EXPECT_GE(source->descriptor(), 0);
    EXPECT_FALSE(source->batches_ranges());
    EXPECT_EQ(source->memory().empty(), access == Access::read);
    EXPECT_EQ(source->memory_writable(), access == Access::map_private);
    // Ranges read over several threads land where they belong.
    std::vector<std::byte> out(bytes.size() - 100);
    const ReadRange ranges[] = {{50, out.data(), 1000},
                                {1100, out.data() + 1000, out.size() - 1000}};
    source->read_ranges(ranges, 3);
    EXPECT_TRUE(std::equal(out.begin(), out.begin() + 1000, bytes.begin() + 50));
    EXPECT_TRUE(std::equal(out.begin() + 1000, out.end(), bytes.begin() + 1100));
  }
  try {
    (void)open_source(Location::parse((dir / "missing").string()), {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::io);
    EXPECT_EQ(e.os_error(), std::errc::no_such_file_or_directory);
  }
}

TEST(Source, MemorySources) {
  std::vector<std::byte> bytes(100);
  std::iota(reinterpret_cast<unsigned char*>(bytes.data()),
            reinterpret_cast<unsigned char*>(bytes.data()) + bytes.size(), 0);
  const auto borrowed = borrowed_memory_source(bytes, "b");
  EXPECT_EQ(borrowed->memory().data(), bytes.data());
  EXPECT_FALSE(borrowed->memory_writable());
  EXPECT_EQ(borrowed->descriptor(), -1);
  const auto owned = owned_memory_source(bytes, "o");
  EXPECT_NE(owned->memory().data(), bytes.data());
  EXPECT_TRUE(owned->memory_writable());
  std::byte b[4];
  owned->read(10, b);
  EXPECT_EQ(b[3], std::byte{13});
}

int count_libcurl(dl_phdr_info* info, size_t, void* count) {
  if (info->dlpi_name && std::strstr(info->dlpi_name, "libcurl")) ++*static_cast<int*>(count);
  return 0;
}

// Local work never loads libcurl (and neither does linking the library: this test links it).
TEST(Source, LocalWorkLeavesLibcurlUnloaded) {
  const File f = File::open(test::data_dir() / "hf" / "mixed_all_dtypes.safetensors");
  (void)f.view(f.tensors().front().name);
  (void)File::open(test::data_dir() / "hf" / "mixed_all_dtypes.safetensors",
                   {.backend = Backend::pread});
  EXPECT_FALSE(curl_library_loaded());
  int loaded = 0;
  dl_iterate_phdr(count_libcurl, &loaded);
  EXPECT_EQ(loaded, 0);
}

}  // namespace
}  // namespace tlio::detail
