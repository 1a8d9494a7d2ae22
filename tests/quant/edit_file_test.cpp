// Tests for editing files (edit_file; keep/drop/rename in convert_file too): metadata edits in
// place and by rewrite, selections and renames, quantized weights kept whole, and refusals that
// leave every file as it was.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <string>
#include <vector>

#include "test_util.hpp"
#include "tlio/convert_file.hpp"
#include "tlio/edit.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/quant.hpp"
#include "tlio/writer.hpp"

namespace tlio {
namespace {

struct Sample {
  std::vector<float> w0{1, 2, 3, 4, 5, 6}, w1{-1, -2, -3, -4, -5, -6}, norm{1, 1};
  std::vector<int32_t> ids{7, 8, 9};

  std::vector<TensorData> tensors() const {
    return {{"model.layers.0.w", Dtype::F32, {2, 3}, std::as_bytes(std::span(w0))},
            {"model.layers.1.w", Dtype::F32, {2, 3}, std::as_bytes(std::span(w1))},
            {"model.norm", Dtype::F32, {2}, std::as_bytes(std::span(norm))},
            {"ids", Dtype::I32, {3}, std::as_bytes(std::span(ids))}};
  }
};

ino_t inode(const std::filesystem::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0);
  return st.st_ino;
}

std::vector<std::string> names(const File& f) {
  std::vector<std::string> out;
  for (const TensorInfo& t : f.tensors()) out.push_back(t.name);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(EditFile, MetadataOfTheSameLengthIsWrittenInPlace) {
  Sample s;
  test::TempDir dir;
  const auto path = dir / "m.safetensors";
  save_file(path, s.tensors(), {{"format", "pt"}});
  const ino_t before = inode(path);
  EditOptions o;
  o.set_metadata["format"] = "np";
  const EditReport r = edit_file(path, {}, o);
  EXPECT_TRUE(r.in_place);
  EXPECT_EQ(inode(path), before);
  EXPECT_EQ(test::read_bytes(path), serialize(s.tensors(), {{"format", "np"}}));
  EXPECT_EQ(r.kept, 4u);
  EXPECT_EQ(r.metadata.at("format"), "np");
}

TEST(EditFile, AHeaderThatGrowsIsRewrittenCanonically) {
  Sample s;
  test::TempDir dir;
  const auto path = dir / "m.safetensors";
  save_file(path, s.tensors(), {{"format", "pt"}, {"step", "100"}});
  EditOptions o;
  o.set_metadata["license"] = "apache-2.0";
  o.delete_metadata = {"step"};
  const EditReport r = edit_file(path, path, o);
  EXPECT_FALSE(r.in_place);
  EXPECT_EQ(test::read_bytes(path),
            serialize(s.tensors(), {{"format", "pt"}, {"license", "apache-2.0"}}));
}

TEST(EditFile, OutputLeavesTheSourceAlone) {
  Sample s;
  test::TempDir dir;
  save_file(dir / "a.safetensors", s.tensors(), {{"format", "pt"}});
  const auto original = test::read_bytes(dir / "a.safetensors");
  EditOptions o;
  o.set_metadata["format"] = "np";  // would fit in place; an output is asked for
  const EditReport r = edit_file(dir / "a.safetensors", dir / "b.safetensors", o);
  EXPECT_FALSE(r.in_place);
  EXPECT_EQ(test::read_bytes(dir / "a.safetensors"), original);
  EXPECT_EQ(test::read_bytes(dir / "b.safetensors"), serialize(s.tensors(), {{"format", "np"}}));
}

TEST(EditFile, RefusalsWriteNothing) {
  Sample s;
  test::TempDir dir;
  const auto path = dir / "m.safetensors";
  save_file(path, s.tensors(), {{"format", "pt"}});
  const auto original = test::read_bytes(path);
  const auto refused = [&](const EditOptions& o, const std::string& says) {
    try {
      edit_file(path, dir / "out.safetensors", o);
      ADD_FAILURE() << "accepted; expected: " << says;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
    EXPECT_EQ(test::read_bytes(path), original);
    EXPECT_FALSE(std::filesystem::exists(dir / "out.safetensors"));
  };
  EditOptions missing;
  missing.delete_metadata = {"licence"};
  refused(missing, "no metadata key \"licence\" to delete (the file has \"format\")");
  EditOptions both;
  both.set_metadata["format"] = "np";
  both.delete_metadata = {"format"};
  refused(both, "both set and deleted");
  EditOptions clash;
  clash.tensors.rename = {{"layers\\.\\d+", "layer"}};
  refused(clash,
          "gives tensors \"model.layers.0.w\" and \"model.layers.1.w\" the same name "
          "\"model.layer.w\"");
  EditOptions group;
  group.tensors.rename = {{"^(model)\\.", "\\2."}};
  refused(group, "refers to group \\2, but regex \"^(model)\\\\.\" has 1 group");
  EditOptions regex;
  regex.tensors.drop = {"("};
  refused(regex, "invalid drop regex");
  EditOptions nothing;
  nothing.tensors.keep = {"^encoder\\."};
  refused(nothing, "leaves none of the 4 tensors");
  // A URL cannot be edited in place (and nothing is fetched to find that out).
  try {
    edit_file("http://127.0.0.1:9/m.safetensors", {}, EditOptions{});
    ADD_FAILURE() << "an edit of a URL without a destination was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("needs a destination"), std::string::npos) << e.what();
  }
  EditOptions reserved;
  reserved.tensors.rename = {{"^ids$", "__metadata__"}};
  EXPECT_THROW(edit_file(path, dir / "out.safetensors", reserved), Error);
  EXPECT_FALSE(std::filesystem::exists(dir / "out.safetensors"));
  // In place too, where no writer would check: the file stays as it was.
  EXPECT_THROW(edit_file(path, {}, reserved), Error);
  EditOptions bad_utf8;
  bad_utf8.set_metadata["format"] = "\xff\xfe";  // the same length as "pt": in place
  EXPECT_THROW(edit_file(path, {}, bad_utf8), Error);
  EditOptions split_char;
  split_char.tensors.rename = {{"^ids$", "\xc3"}};
  EXPECT_THROW(edit_file(path, {}, split_char), Error);
  EXPECT_EQ(test::read_bytes(path), original);
}

TEST(EditFile, KeepDropAndRenameSeeTheOriginalNames) {
  Sample s;
  test::TempDir dir;
  save_file(dir / "a.safetensors", s.tensors());
  EditOptions o;
  o.tensors.keep = {"^model\\."};
  o.tensors.drop = {"norm"};
  // Rules run in order, each on the result of the one before; \1 inserts a group.
  o.tensors.rename = {{"^model\\.layers\\.(\\d+)\\.w$", "blk.\\1.weight"}, {"^blk", "h"}};
  const EditReport r = edit_file(dir / "a.safetensors", dir / "b.safetensors", o);
  EXPECT_EQ(r.kept, 2u);
  EXPECT_EQ(r.dropped, 2u);
  EXPECT_EQ(r.renamed, 2u);
  const File b = File::open(dir / "b.safetensors");
  EXPECT_EQ(names(b), (std::vector<std::string>{"h.0.weight", "h.1.weight"}));
  EXPECT_EQ(read_f32(b, "h.1.weight"), s.w1);
  // A rename may swap names: each tensor is renamed once, from its original name.
  EditOptions swap;
  swap.tensors.rename = {
      {"layers\\.0", "layers.X"}, {"layers\\.1", "layers.0"}, {"layers\\.X", "layers.1"}};
  edit_file(dir / "a.safetensors", dir / "c.safetensors", swap);
  const File c = File::open(dir / "c.safetensors");
  EXPECT_EQ(read_f32(c, "model.layers.0.w"), s.w1);
  EXPECT_EQ(read_f32(c, "model.layers.1.w"), s.w0);
}

// Every scheme: int4 (.qweight/.scales), bitsandbytes 4-bit (absmax, quant_map, quant_state)
// and LLM.int8 (SCB, weight_format beside the weight).
class EditQuantized : public testing::TestWithParam<const char*> {};

TEST_P(EditQuantized, WeightsMoveWhole) {
  test::TempDir dir;
  std::vector<float> w(64 * 64), v(64 * 64), bias(64, 0.5f);
  for (size_t i = 0; i < w.size(); ++i) {
    w[i] = static_cast<float>(i % 17) - 8.0f;
    v[i] = static_cast<float>(i % 5) * 0.25f;
  }
  const std::vector<TensorData> plain{
      {"model.layers.0.mlp.up_proj.weight", Dtype::F32, {64, 64}, std::as_bytes(std::span(w))},
      {"model.layers.1.mlp.up_proj.weight", Dtype::F32, {64, 64}, std::as_bytes(std::span(v))},
      {"model.layers.0.mlp.up_proj.bias", Dtype::F32, {64}, std::as_bytes(std::span(bias))}};
  save_file(dir / "plain.safetensors", plain);
  QuantizeOptions q;
  q.scheme = QuantScheme::parse(GetParam());
  quantize_file(File::open(dir / "plain.safetensors"), dir / "q.safetensors", q);
  const File quantized = File::open(dir / "q.safetensors");
  ASSERT_EQ(find_quantized_weights(quantized).size(), 2u);
  ASSERT_GT(quantized.tensors().size(), 4u);

  // keep 'weight$' names the logical weights: every stored tensor of theirs comes too.
  EditOptions keep;
  keep.tensors.keep = {"weight$"};
  const EditReport kr = edit_file(dir / "q.safetensors", dir / "k.safetensors", keep);
  EXPECT_EQ(kr.dropped, 1u);  // the bias
  const File k = File::open(dir / "k.safetensors");
  EXPECT_EQ(find_quantized_weights(k).size(), 2u);
  EXPECT_EQ(k.tensors().size(), quantized.tensors().size() - 1);

  // A regex that names a stored tensor alone would split the weight: refused.
  for (const bool as_drop : {true, false}) {
    EditOptions split;
    const std::string part = find_quantized_weights(quantized)[0].stored.back();
    (as_drop ? split.tensors.drop : split.tensors.keep).push_back("^" + part + "$");
    try {
      edit_file(dir / "q.safetensors", dir / "s.safetensors", split);
      ADD_FAILURE() << (as_drop ? "drop" : "keep") << " of " << part << " alone was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.tensor(), part) << (as_drop ? "drop" : "keep");
      EXPECT_NE(std::string(e.what()).find("which moves whole"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(std::filesystem::exists(dir / "s.safetensors"));
  }

  // keep and drop together: a weight its name drops goes whole, even where keep names parts.
  EditOptions both;
  both.tensors.keep = {"^model\\."};
  both.tensors.drop = {"layers\\.1\\..*weight$"};
  const EditReport br = edit_file(dir / "q.safetensors", dir / "b.safetensors", both);
  EXPECT_EQ(find_quantized_weights(File::open(dir / "b.safetensors")).size(), 1u);
  EXPECT_GT(br.dropped, 1u);

  // Dropping one logical weight drops all its stored tensors.
  EditOptions drop;
  drop.tensors.drop = {"layers\\.1\\."};
  edit_file(dir / "q.safetensors", dir / "d.safetensors", drop);
  const File d = File::open(dir / "d.safetensors");
  const auto left = find_quantized_weights(d);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].name, "model.layers.0.mlp.up_proj.weight");
  for (const TensorInfo& t : d.tensors()) EXPECT_EQ(t.name.find("layers.1."), std::string::npos);

  // A rename of the layer path renames every stored tensor alike, and the weight reads back as
  // before.
  EditOptions rename;
  rename.tensors.rename = {{"^model\\.layers\\.", "blocks."}};
  edit_file(dir / "q.safetensors", dir / "r.safetensors", rename);
  const File r = File::open(dir / "r.safetensors");
  std::vector<std::string> logical;
  for (const QuantizedWeight& qw : find_quantized_weights(r)) logical.push_back(qw.name);
  std::sort(logical.begin(), logical.end());
  EXPECT_EQ(logical, (std::vector<std::string>{"blocks.0.mlp.up_proj.weight",
                                               "blocks.1.mlp.up_proj.weight"}));
  QuantizedReader before(quantized, "model.layers.1.mlp.up_proj.weight"),
      after(r, "blocks.1.mlp.up_proj.weight");
  std::vector<float> x(64 * 64), y(64 * 64);
  before.read(0, x.size(), Dtype::F32, std::as_writable_bytes(std::span(x)));
  after.read(0, y.size(), Dtype::F32, std::as_writable_bytes(std::span(y)));
  EXPECT_EQ(x, y);
}

INSTANTIATE_TEST_SUITE_P(Schemes, EditQuantized, testing::Values("nf4", "int4-g32-sym", "int8"));

TEST(EditFile, ARenameOfASuffixKeepsA4BitWeightWhole) {
  // bitsandbytes' stored names all begin with the weight's own name, so renaming its end
  // renames the whole weight.
  test::TempDir dir;
  std::vector<float> w(64 * 64, 0.25f);
  const std::vector<TensorData> plain{
      {"layer.up_proj.weight", Dtype::F32, {64, 64}, std::as_bytes(std::span(w))}};
  save_file(dir / "plain.safetensors", plain);
  QuantizeOptions q;
  q.scheme = QuantScheme::parse("nf4");
  quantize_file(File::open(dir / "plain.safetensors"), dir / "q.safetensors", q);
  EditOptions rename;
  rename.tensors.rename = {{"\\.weight$", ".w"}};
  edit_file(dir / "q.safetensors", dir / "r.safetensors", rename);
  const auto found = find_quantized_weights(File::open(dir / "r.safetensors"));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].name, "layer.up_proj.w");
  EXPECT_EQ(found[0].stored.size(),
            find_quantized_weights(File::open(dir / "q.safetensors"))[0].stored.size());
}

TEST(ConvertFile, SelectionAndRenamesWithADtype) {
  Sample s;
  test::TempDir dir;
  save_file(dir / "a.safetensors", s.tensors(), {{"format", "pt"}});
  ConvertFileOptions o;
  o.dtype = Dtype::BF16;
  o.exclude = "norm";  // converts by the original names
  o.tensors.drop = {"^ids$"};
  o.tensors.rename = {{"^model\\.", ""}};
  const ConvertFileReport r =
      convert_file(File::open(dir / "a.safetensors"), dir / "b.safetensors", o);
  EXPECT_EQ(r.converted, 2u);
  EXPECT_EQ(r.kept, 1u);
  EXPECT_EQ(r.dropped, 1u);
  EXPECT_EQ(r.renamed, 3u);
  const File b = File::open(dir / "b.safetensors");
  EXPECT_EQ(names(b), (std::vector<std::string>{"layers.0.w", "layers.1.w", "norm"}));
  EXPECT_EQ(b.header().at("layers.0.w").dtype, Dtype::BF16);
  EXPECT_EQ(b.header().at("norm").dtype, Dtype::F32);
  EXPECT_EQ(read_f32(b, "layers.1.w"), s.w1);
  EXPECT_EQ(b.metadata().at("format"), "pt");
}

}  // namespace
}  // namespace tlio
