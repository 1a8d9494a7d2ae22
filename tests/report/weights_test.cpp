// Tests for report/weights*: one interface over every container. Each implementation answers
// the same questions (kind, names, stored tensors, decoded values, metadata, sizes), and a name
// none has is Error{not_found} with the nearest one.
#include "tlio/weights.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.hpp"
#include "tlio/error.hpp"
#include "tlio/model.hpp"
#include "tlio/writer.hpp"

namespace tlio {
namespace {

namespace fs = std::filesystem;

std::string not_found_message(const Weights& w, std::string_view name) {
  try {
    (void)w.at(name);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::not_found);
    return e.what();
  }
  return "";
}

TEST(Weights, AFileAnswersFromItsHeader) {
  test::TempDir dir;
  const std::vector<float> w(6, 1.5f);
  save_file(
      dir / "a.safetensors",
      std::vector<TensorData>{{"layer.weight", Dtype::F32, {2, 3}, std::as_bytes(std::span(w))}},
      {{"note", "x"}});
  const auto opened = Weights::open((dir / "a.safetensors").string());
  const Weights& f = *opened;
  EXPECT_EQ(f.kind(), WeightsKind::safetensors);
  EXPECT_EQ(f.value_names(), std::vector<std::string>{"layer.weight"});
  EXPECT_EQ(f.files().size(), 1u);
  EXPECT_EQ(f.file_count(), 1u);
  EXPECT_EQ(f.stored_size(), fs::file_size(dir / "a.safetensors"));
  EXPECT_EQ(f.metadata().at("note"), "x");
  EXPECT_EQ(f.at("layer.weight").second->shape, (std::vector<uint64_t>{2, 3}));
  EXPECT_FALSE(f.decoded("layer.weight"));  // stored: read as a view
  EXPECT_TRUE(f.config_json().empty());
  EXPECT_NE(not_found_message(f, "layer.weigth").find("did you mean \"layer.weight\""),
            std::string::npos);
}

TEST(Weights, AFolderIsOneNamespaceOverItsShards) {
  const fs::path sharded = test::data_dir() / "models" / "sharded";
  const auto opened = Weights::open(sharded.string());
  const Weights& m = *opened;
  const Model model = Model::open(sharded.string());
  EXPECT_EQ(m.kind(), WeightsKind::model_folder);
  EXPECT_EQ(m.file_count(), model.files().size());
  EXPECT_EQ(m.value_names().size(), model.tensor_names().size());
  EXPECT_EQ(m.config_json(), model.config_json());
  for (std::string_view name : model.tensor_names()) EXPECT_EQ(m.at(name).second->name, name);
}

TEST(Weights, AGgufReadsEveryTensorDecoded) {
  const auto opened =
      Weights::open((test::data_dir() / "gguf" / "no_extension").string());  // by its magic
  const Weights& g = *opened;
  EXPECT_EQ(g.kind(), WeightsKind::gguf);
  EXPECT_TRUE(g.files().empty());
  EXPECT_EQ(g.file_count(), 1u);
  EXPECT_TRUE(g.tensors().empty());
  const std::vector<std::string> names = g.value_names();
  ASSERT_EQ(names.size(), 2u);
  for (const std::string& n : names) {
    const std::optional<DecodedValues> d = g.decoded(n);
    ASSERT_TRUE(d);
    uint64_t elements = 1;
    for (uint64_t s : d->shape) elements *= s;
    std::vector<float> values(elements);
    d->read(0, elements, std::as_writable_bytes(std::span(values)));
  }
  EXPECT_FALSE(g.metadata().empty());
  EXPECT_NE(not_found_message(g, names[0]), "");  // no stored safetensors tensor in a GGUF
  EXPECT_THROW((void)g.decoded("missing"), Error);
}

}  // namespace
}  // namespace tlio
