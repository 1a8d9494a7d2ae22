// Resource limits (docs/security.md): hostile sizes are refused before anything is allocated
// from them, and large but valid headers are handled in time and memory proportional to them.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>

#include "test_util.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/writer.hpp"

namespace tlio {
namespace {

long peak_rss_mib() {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

TEST(Limits, HugeDeclaredShapesAllocateNothing) {
  // Shapes whose byte size overflows or dwarfs the file: refused by rule 4 from the header alone.
  const std::string h =
      R"({"a":{"dtype":"F64","shape":[4611686018427387904,4],"data_offsets":[0,8]}})";
  const long before = peak_rss_mib();
  for (int i = 0; i < 1000; ++i)
    EXPECT_THROW(File::from_bytes(test::make_file(h, std::vector<std::byte>(8))), Error);
  const std::string h2 =
      R"({"a":{"dtype":"U8","shape":[1099511627776],"data_offsets":[0,1099511627776]}})";
  try {
    File::from_bytes(test::make_file(h2, std::vector<std::byte>(8)));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.rule_name(), "5");  // claims 1 TiB of data, the file has 8 bytes
  }
  EXPECT_LT(peak_rss_mib() - before, 64);
}

TEST(Limits, AMillionTensors) {
  // 10^6 zero-size tensors: a 58 MB header, within the 100 MB limit.
  Writer w = Writer::to_memory();
  for (int i = 0; i < 1000000; ++i) w.declare("t" + std::to_string(i), Dtype::F32, {0});
  w.commit();
  auto bytes = w.take_bytes();
  const auto t0 = std::chrono::steady_clock::now();
  File f = File::from_bytes(std::move(bytes));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(f.tensors().size(), 1000000u);
  EXPECT_NE(f.header().find("t999999"), nullptr);
  std::cout << "parsed " << f.header_size() << " header bytes (10^6 tensors) in " << seconds
            << " s; peak RSS " << peak_rss_mib() << " MiB\n";
  EXPECT_LT(seconds, 30.0);  // generous for sanitizer builds; ~0.2 s in Release
}

TEST(Limits, AHundredMegabyteHeaderOfPaddingAndOneOfNesting) {
  // The largest header allowed, all whitespace around {}: accepted.
  std::string h = "{}";
  h.resize(kMaxHeaderSize, ' ');
  EXPECT_NO_THROW(File::from_bytes(test::make_file(h)));
  // Deep nesting inside it: rule 2 (bounded depth), not a stack overflow.
  std::string deep = R"({"__metadata__":{"k":)" + std::string(10'000'000, '[');
  deep.resize(kMaxHeaderSize, ']');
  try {
    File::from_bytes(test::make_file(deep));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.rule_name(), "2");
  }
}

}  // namespace
}  // namespace tlio
