// Every file written by the reference library (tests/data/hf) parses to its manifest inputs, and
// the writer reproduces it byte for byte from those inputs, given in the reference's input order.
#include <gtest/gtest.h>

#include "test_util.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/writer.hpp"

namespace tlio {
namespace {

namespace dom = simdjson::dom;

struct GoldenCase {
  std::string id;
  std::string file;  // empty for writer rejections
  Metadata metadata;
  bool has_metadata = false;
  std::vector<TensorData> specs;             // bytes left empty: see tensors()
  std::vector<std::vector<std::byte>> data;  // bytes of specs[i]

  // The tensors with their bytes (spans into this case, so rebuilt on every call).
  std::vector<TensorData> tensors() const {
    std::vector<TensorData> out = specs;
    for (size_t i = 0; i < out.size(); ++i) out[i].bytes = data[i];
    return out;
  }
  std::vector<std::string> header_variants;  // accepted header texts for multi-key metadata
};

// Keeps test names short in ctest listings.
void PrintTo(const GoldenCase& g, std::ostream* os) { *os << g.id; }

std::vector<GoldenCase> load_cases() {
  test::Manifest m(test::data_dir() / "hf" / "MANIFEST.json");
  std::vector<GoldenCase> out;
  for (auto c : m.cases()) {
    GoldenCase g;
    g.id = std::string(c["id"].get_string().value());
    if (c["file"].is_string()) g.file = std::string(c["file"].get_string().value());
    dom::object meta;
    if (c["metadata"].get_object().get(meta) == simdjson::SUCCESS) {
      g.has_metadata = true;
      for (auto kv : meta)
        g.metadata[std::string(kv.key)] = std::string(kv.value.get_string().value());
    }
    for (auto t : c["tensors_input_order"].get_array()) {
      auto name_bytes = test::from_hex(t["name_utf8_hex"].get_string().value());
      TensorData td;
      td.name.assign(reinterpret_cast<const char*>(name_bytes.data()), name_bytes.size());
      td.dtype = *parse_dtype(t["dtype"].get_string().value());
      for (auto d : t["shape"].get_array()) td.shape.push_back(d.get_uint64().value());
      g.data.push_back(test::from_hex(t["data_hex"].get_string().value()));
      g.specs.push_back(std::move(td));
    }
    dom::element variants;
    if (c["observed_header_variants"].get(variants) == simdjson::SUCCESS)
      for (auto v : variants.get_array()) g.header_variants.emplace_back(v.get_string().value());
    out.push_back(std::move(g));
  }
  return out;
}

class HfGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(HfGolden, ParsesToItsInputs) {
  const GoldenCase& g = GetParam();
  if (g.file.empty()) GTEST_SKIP() << "writer rejection case";
  for (Backend backend : {Backend::mmap, Backend::pread}) {
    File f = File::open(test::data_dir() / "hf" / g.file, {backend});
    EXPECT_EQ(f.metadata(), g.metadata);
    ASSERT_EQ(f.tensors().size(), g.specs.size());
    for (const TensorData& t : g.tensors()) {
      const TensorInfo& info = f.header().at(t.name);
      EXPECT_EQ(info.dtype, t.dtype) << t.name;
      EXPECT_EQ(info.shape, t.shape) << t.name;
      TensorView v = f.view(t.name);
      EXPECT_TRUE(std::equal(v.bytes().begin(), v.bytes().end(), t.bytes.begin(), t.bytes.end()))
          << t.name;
    }
  }
}

TEST_P(HfGolden, WriterReproducesTheBytes) {
  const GoldenCase& g = GetParam();
  if (g.file.empty()) {
    EXPECT_THROW(serialize(g.tensors(), g.metadata), Error) << g.id;
    return;
  }
  auto golden = test::read_bytes(test::data_dir() / "hf" / g.file);
  auto ours = serialize(g.tensors(), g.metadata);
  if (g.id == "metadata_empty_map") {
    // The documented exception: an empty map is omitted (the reference writes "{}").
    File f = File::from_bytes(ours);
    EXPECT_FALSE(f.header().has_metadata());
    File ref = File::from_bytes(golden);
    EXPECT_EQ(f.tensors().size(), ref.tensors().size());
    return;
  }
  if (!g.header_variants.empty()) {
    // Several metadata keys: the reference order is random; ours (sorted) must be one of them.
    File f = File::from_bytes(ours);
    auto raw = f.raw_header();
    std::string text(reinterpret_cast<const char*>(raw.data()), raw.size());
    while (!text.empty() && text.back() == ' ') text.pop_back();
    EXPECT_NE(std::find(g.header_variants.begin(), g.header_variants.end(), text),
              g.header_variants.end())
        << text;
    return;
  }
  EXPECT_EQ(ours, golden) << g.id;
  // The file writer gives the same bytes, and rewriting the golden itself is the identity.
  test::TempDir dir;
  save_file(dir / "out.safetensors", g.tensors(), g.metadata);
  EXPECT_EQ(test::read_bytes(dir / "out.safetensors"), golden);
  rewrite_canonical(File::open(test::data_dir() / "hf" / g.file), dir / "re.safetensors");
  EXPECT_EQ(test::read_bytes(dir / "re.safetensors"), golden);
  EXPECT_TRUE(File::open(test::data_dir() / "hf" / g.file).is_canonical());
}

INSTANTIATE_TEST_SUITE_P(AllCases, HfGolden, ::testing::ValuesIn(load_cases()),
                         [](const auto& p) { return p.param.id; });

TEST(HfGoldenManifest, HasAllCases) { EXPECT_EQ(load_cases().size(), 50u); }

}  // namespace
}  // namespace tlio
