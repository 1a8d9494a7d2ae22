// Read plans: slices of plain and quantized tensors equal slices of the whole, the reads a dry
// run lists, deliver() from elsewhere, and the errors.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>

#include "test_util.hpp"
#include "tlio/tlio.hpp"

namespace {

using tlio::Dtype;
using tlio::SliceIndex;

// A file with an F32 matrix, a BF16 matrix, a 1-D bias and a 3-D tensor, values counting up.
std::filesystem::path write_plain(const tlio::test::TempDir& dir) {
  std::vector<float> w(64 * 96), b(96), cube(4 * 6 * 8);
  std::iota(w.begin(), w.end(), 0.0f);
  std::iota(b.begin(), b.end(), -48.0f);
  std::iota(cube.begin(), cube.end(), 1000.0f);
  std::vector<uint16_t> h(32 * 40);
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint16_t>(0x3f80 + i);
  auto bytes = [](const auto& v) { return std::as_bytes(std::span(v)); };
  const std::vector<tlio::TensorData> tensors{
      {"w", Dtype::F32, {64, 96}, bytes(w)},
      {"h", Dtype::BF16, {32, 40}, bytes(h)},
      {"b", Dtype::F32, {96}, bytes(b)},
      {"cube", Dtype::F32, {4, 6, 8}, bytes(cube)},
  };
  const auto path = dir / "plain.safetensors";
  tlio::save_file(path, tensors);
  return path;
}

// A slice copied out of the whole tensor by File::read_slice (the reference).
std::vector<std::byte> reference(const std::filesystem::path& path, const std::string& name,
                                 std::span<const SliceIndex> slice) {
  const tlio::File f = tlio::File::open(path);
  return f.read_slice(name, slice);
}

// Descriptors of this process open with O_DIRECT (/proc/self/fdinfo's octal flags).
int direct_descriptors() {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fdinfo")) {
    std::ifstream info(e.path());
    std::string key;
    unsigned long flags = 0;
    while (info >> key)
      if (key == "flags:" && info >> std::oct >> flags) break;
    if (flags & O_DIRECT) ++n;
  }
  return n;
}

std::vector<std::byte> run_one(tlio::ReadPlan& plan, const std::string& name,
                               std::vector<SliceIndex> slice, std::optional<Dtype> as = {}) {
  const size_t i = plan.add(name, slice, as);
  std::vector<std::byte> out(plan.items()[i].byte_size);
  plan.set_destination(i, out);
  plan.execute();
  return out;
}

TEST(ReadPlan, SlicesOfPlainTensorsEqualReadSlice) {
  tlio::test::TempDir dir;
  const auto path = write_plain(dir);
  const std::vector<std::pair<std::string, std::vector<SliceIndex>>> cases{
      {"w", {}},
      {"w", {SliceIndex::range(8, 24)}},
      {"w", {SliceIndex::all(), SliceIndex::range(10, 30)}},
      {"w", {SliceIndex::range(3, 9), SliceIndex::range(90, 96)}},
      {"w", {SliceIndex::at(5)}},
      {"h", {SliceIndex::all(), SliceIndex::range(1, 39)}},
      {"b", {SliceIndex::range(0, 0)}},
      {"cube", {SliceIndex::range(1, 3), SliceIndex::at(2), SliceIndex::range(3, 7)}},
  };
  // Positional reads (the default, and what a mapping asked for becomes), and O_DIRECT ones.
  for (const tlio::Backend backend :
       {tlio::Backend::pread, tlio::Backend::mmap, tlio::Backend::direct})
    for (const auto& [name, slice] : cases) {
      SCOPED_TRACE(name + " backend " + std::to_string(static_cast<int>(backend)));
      tlio::ReadPlanOptions o;
      o.open.backend = backend;
      const int before = direct_descriptors();
      tlio::ReadPlan plan = tlio::ReadPlan::open(path, o);
      // Direct reads hold a descriptor open with O_DIRECT (where the file system takes it).
      const int opened =
          backend == tlio::Backend::direct && tlio::test::o_direct_works(dir.path()) ? 1 : 0;
      EXPECT_EQ(direct_descriptors(), before + opened);
      EXPECT_EQ(run_one(plan, name, slice), reference(path, name, slice));
    }
}

TEST(ReadPlan, ManyItemsInOnePlanAndTheirReads) {
  tlio::test::TempDir dir;
  const auto path = write_plain(dir);
  tlio::ReadPlanOptions o;
  o.max_gap = 0;
  o.max_inflight_bytes = 1;  // scratch in the smallest windows: same bytes
  tlio::ReadPlan plan = tlio::ReadPlan::open(path, o);
  EXPECT_EQ(plan.tensors().size(), 4u);
  ASSERT_NE(plan.find("h"), nullptr);
  EXPECT_EQ(plan.find("h")->dtype, Dtype::BF16);
  EXPECT_EQ(plan.find("nope"), nullptr);
  const std::vector<SliceIndex> cols{SliceIndex::all(), SliceIndex::range(0, 48)};
  const size_t a = plan.add("w", cols), b = plan.add("b", {}), c = plan.add("w", cols);
  EXPECT_EQ(plan.items()[a].shape, (std::vector<uint64_t>{64, 48}));
  // Half of every row of w: 64 ranges of 192 bytes, 192 apart; without gaps allowed each is a read.
  const std::vector<tlio::PlannedRead> reads = plan.reads();
  const tlio::File f = tlio::File::open(path);
  const uint64_t w_begin = f.header().at("w").begin, b_begin = f.header().at("b").begin;
  uint64_t on_w = 0;
  for (const auto& r : reads)
    if (r.offset >= w_begin && r.offset < w_begin + 64 * 96 * 4) ++on_w;
  EXPECT_EQ(on_w, 64u);
  EXPECT_EQ(plan.wanted_bytes(), 64u * 48 * 4 + 96 * 4);
  std::vector<std::byte> da(plan.items()[a].byte_size), db(plan.items()[b].byte_size),
      dc(plan.items()[c].byte_size);
  plan.set_destination(a, da);
  plan.set_destination(b, db);
  plan.set_destination(c, dc);
  plan.execute();
  EXPECT_EQ(da, reference(path, "w", cols));
  EXPECT_EQ(dc, da);
  EXPECT_EQ(db, reference(path, "b", {}));
  (void)b_begin;

  // With gaps allowed, the column slice is one read spanning the rows.
  tlio::ReadPlanOptions wide;
  wide.max_gap = 1 << 20;
  tlio::ReadPlan merged = tlio::ReadPlan::open(path, wide);
  merged.add("w", cols);
  ASSERT_EQ(merged.reads().size(), 1u);
  EXPECT_EQ(merged.reads()[0].length, 63u * 96 * 4 + 48 * 4);
  EXPECT_EQ(merged.wanted_bytes(), 64u * 48 * 4);
  // What the items want has no gaps: one range a row.
  const std::vector<tlio::PlannedRead> wanted = merged.wanted();
  ASSERT_EQ(wanted.size(), 64u);
  EXPECT_EQ(wanted[1].offset - wanted[0].offset, 96u * 4);
  EXPECT_EQ(wanted[0].length, 48u * 4);
}

TEST(ReadPlan, DeliverFromElsewhere) {
  tlio::test::TempDir dir;
  const auto path = write_plain(dir);
  tlio::ReadPlan plan = tlio::ReadPlan::open(path);
  const std::vector<SliceIndex> rows{SliceIndex::range(10, 20)};
  const size_t i = plan.add("w", rows);
  std::vector<std::byte> out(plan.items()[i].byte_size);
  plan.set_destination(i, out);
  // The whole data buffer handed over in odd pieces, as other ranks would send it.
  const tlio::File f = tlio::File::open(path);
  const auto data = f.mapped_data();
  for (size_t pos = 0; pos < data.size(); pos += 1000)
    plan.deliver(0, pos, data.subspan(pos, std::min<size_t>(1000, data.size() - pos)));
  plan.finish();
  EXPECT_EQ(out, reference(path, "w", rows));
}

TEST(ReadPlan, Errors) {
  tlio::test::TempDir dir;
  const auto path = write_plain(dir);
  tlio::ReadPlan plan = tlio::ReadPlan::open(path);
  try {
    plan.add("missing");
    FAIL();
  } catch (const tlio::Error& e) {
    EXPECT_EQ(e.code(), tlio::ErrorCode::not_found);
  }
  const std::vector<SliceIndex> past{SliceIndex::range(0, 65)};
  EXPECT_THROW(plan.add("w", past), tlio::Error);
  EXPECT_THROW(plan.add("w", {}, Dtype::F16), tlio::Error);  // stored tensors are not converted
  const size_t i = plan.add("b");
  std::vector<std::byte> small(3);
  EXPECT_THROW(plan.set_destination(i, small), tlio::Error);
  EXPECT_THROW(plan.execute(), tlio::Error);  // no destination
  EXPECT_THROW(plan.finish(), tlio::Error);
  EXPECT_THROW(tlio::ReadPlan::open(dir / "absent.safetensors"), tlio::Error);
}

// Quantized weights: slices dequantized from their parts equal slices of the whole.
class QuantizedPlan : public ::testing::TestWithParam<const char*> {};

TEST_P(QuantizedPlan, SlicesEqualSlicesOfTheDequantizedWhole) {
  tlio::test::TempDir dir;
  const uint64_t rows = 48, cols = 256;
  std::vector<float> w(rows * cols);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = static_cast<float>((i * 7919) % 1000) / 500.0f - 1.0f;
  const std::vector<tlio::TensorData> tensors{
      {"layer.weight", Dtype::F32, {rows, cols}, std::as_bytes(std::span(w))}};
  tlio::save_file(dir / "f32.safetensors", tensors);
  tlio::QuantizeOptions qo;
  qo.scheme = tlio::QuantScheme::parse(GetParam());
  qo.include = "weight";
  const auto qpath = dir / "q.safetensors";
  tlio::quantize_file(tlio::File::open(dir / "f32.safetensors"), qpath, qo);

  const tlio::File qf = tlio::File::open(qpath);
  const std::vector<tlio::QuantizedWeight> found = tlio::find_quantized_weights(qf);
  ASSERT_EQ(found.size(), 1u);
  const tlio::QuantizedReader reader(qf, found[0]);
  std::vector<float> whole(rows * cols);
  reader.read(0, whole.size(), Dtype::F32, std::as_writable_bytes(std::span(whole)));

  struct Case {
    uint64_t r0, r1, c0, c1;
  };
  // One plan for every case, cleared between them: the batches `tlio slice` reads.
  tlio::ReadPlan plan = tlio::ReadPlan::open(qpath);
  for (const Case& c : {Case{0, rows, 0, cols}, Case{8, 20, 0, cols}, Case{0, rows, 64, 128},
                        Case{5, 7, 3, 201}, Case{47, 48, 255, 256}}) {
    SCOPED_TRACE(testing::Message() << c.r0 << ":" << c.r1 << ", " << c.c0 << ":" << c.c1);
    ASSERT_NE(plan.find(found[0].name), nullptr);
    EXPECT_TRUE(plan.find(found[0].name)->quantized);
    const std::vector<SliceIndex> slice{SliceIndex::range(c.r0, c.r1),
                                        SliceIndex::range(c.c0, c.c1)};
    const std::vector<std::byte> got = run_one(plan, found[0].name, slice, Dtype::F32);
    std::vector<float> values(got.size() / 4);
    std::memcpy(values.data(), got.data(), got.size());
    std::vector<float> expected;
    for (uint64_t r = c.r0; r < c.r1; ++r)
      for (uint64_t k = c.c0; k < c.c1; ++k) expected.push_back(whole[r * cols + k]);
    EXPECT_EQ(values, expected);
    // A slice reads fewer bytes than the weight holds (its parts only), the whole one all.
    if (c.r1 - c.r0 < rows) {
      EXPECT_LT(plan.wanted_bytes(), found[0].stored_bytes);
    }
    plan.clear();
    EXPECT_TRUE(plan.items().empty());
    EXPECT_TRUE(plan.reads().empty());
  }
}

INSTANTIATE_TEST_SUITE_P(Schemes, QuantizedPlan,
                         ::testing::Values("int4-g32-sym", "nf4", "fp4", "int8"));

// A file whose F32 "x" [rows, 64] is stored int4 (x.qweight + x.scales); returns its path.
std::filesystem::path write_int4_x(const tlio::test::TempDir& dir, uint64_t rows) {
  std::vector<float> w(rows * 64, 0.5f);
  const std::vector<tlio::TensorData> tensors{
      {"x", Dtype::F32, {rows, 64}, std::as_bytes(std::span(w))}};
  tlio::save_file(dir / "f32.safetensors", tensors);
  tlio::QuantizeOptions qo;
  qo.scheme = tlio::QuantScheme::parse("int4-g32-sym");
  qo.include = "x";
  tlio::quantize_file(tlio::File::open(dir / "f32.safetensors"), dir / "q.safetensors", qo);
  return dir / "q.safetensors";
}

TEST(ReadPlan, KeepPackedListsStoredTensors) {
  tlio::test::TempDir dir;
  write_int4_x(dir, 16);
  tlio::ReadPlanOptions o;
  o.keep_packed = true;
  tlio::ReadPlan packed = tlio::ReadPlan::open(dir / "q.safetensors", o);
  EXPECT_EQ(packed.find("x"), nullptr);
  ASSERT_NE(packed.find("x.qweight"), nullptr);
  const std::vector<SliceIndex> rows{SliceIndex::range(2, 4)};
  EXPECT_EQ(run_one(packed, "x.qweight", rows),
            reference(dir / "q.safetensors", "x.qweight", rows));
  tlio::ReadPlan logical = tlio::ReadPlan::open(dir / "q.safetensors");
  EXPECT_NE(logical.find("x"), nullptr);
  EXPECT_EQ(logical.find("x.qweight"), nullptr);
}

TEST(ReadPlan, QuantizedWeightsCannotBeFinishedWithoutABuffer) {
  tlio::test::TempDir dir;
  tlio::ReadPlan plan = tlio::ReadPlan::open(write_int4_x(dir, 8));
  const std::vector<SliceIndex> rows{SliceIndex::range(0, 2)};
  const size_t i = plan.add("x", rows);
  EXPECT_THROW(plan.finish(), tlio::Error);  // not a write through a null buffer
  // The decoders store whole floats: a buffer one byte off is refused, not written unaligned.
  std::vector<float> buffer(plan.items()[i].byte_size / 4 + 1);
  const std::span<std::byte> bytes = std::as_writable_bytes(std::span(buffer));
  EXPECT_THROW(plan.set_destination(i, bytes.subspan(1, plan.items()[i].byte_size)), tlio::Error);
  plan.set_destination(i, bytes.first(plan.items()[i].byte_size));
}

TEST(ReadPlan, AStoredTensorNamedAsAQuantizedWeightIsRefused) {
  tlio::test::TempDir dir;
  std::vector<float> b(3, 1.0f);
  // The quantized file's tensors plus a stored "x": the weight's logical name, taken.
  const tlio::File q = tlio::File::open(write_int4_x(dir, 8));
  std::vector<tlio::TensorData> clash{{"x", Dtype::F32, {3}, std::as_bytes(std::span(b))}};
  for (const tlio::TensorInfo& t : q.tensors())
    clash.push_back({t.name, t.dtype, t.shape, q.view(t.name).bytes()});
  tlio::save_file(dir / "clash.safetensors", clash);
  try {
    tlio::ReadPlan::open(dir / "clash.safetensors");
    FAIL();
  } catch (const tlio::Error& e) {
    EXPECT_EQ(e.code(), tlio::ErrorCode::format);
    EXPECT_NE(std::string(e.what()).find("keep_packed"), std::string::npos);
  }
  tlio::ReadPlanOptions packed;
  packed.keep_packed = true;
  EXPECT_NE(tlio::ReadPlan::open(dir / "clash.safetensors", packed).find("x"), nullptr);
}

TEST(ReadPlan, FolderOfShards) {
  tlio::test::TempDir dir;
  const auto path = write_plain(dir);
  tlio::shard_file(tlio::File::open(path), dir / "sharded", 10000);
  tlio::ReadPlan plan = tlio::ReadPlan::open(dir / "sharded");
  EXPECT_GT(plan.file_names().size(), 1u);
  const std::vector<SliceIndex> rows{SliceIndex::range(1, 3)};
  const size_t a = plan.add("cube", rows), b = plan.add("w", rows);
  std::vector<std::byte> da(plan.items()[a].byte_size), db(plan.items()[b].byte_size);
  plan.set_destination(a, da);
  plan.set_destination(b, db);
  plan.execute();
  EXPECT_EQ(da, reference(path, "cube", rows));
  EXPECT_EQ(db, reference(path, "w", rows));
}

// The bytes of `path` at [offset, offset + n).
std::vector<std::byte> file_bytes(const std::filesystem::path& path, uint64_t offset, size_t n) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  std::vector<std::byte> out(n);
  in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(n));
  return in ? out : std::vector<std::byte>{};
}

TEST(ReadPlan, ItemsStoredAsOneRangeSayWhere) {
  tlio::test::TempDir dir;
  const auto path = write_plain(dir);
  tlio::shard_file(tlio::File::open(path), dir / "sharded", 10000);
  for (const tlio::Backend backend : {tlio::Backend::pread, tlio::Backend::direct}) {
    tlio::ReadPlanOptions o;
    o.open.backend = backend;
    tlio::ReadPlan plan = tlio::ReadPlan::open(dir / "sharded", o);
    const std::vector<std::pair<std::string, std::vector<SliceIndex>>> one_range{
        {"w", {}},
        {"w", {SliceIndex::range(8, 24)}},
        {"w", {SliceIndex::at(5), SliceIndex::all()}},
        {"cube", {SliceIndex::at(3), SliceIndex::range(1, 4)}}};
    for (const auto& [name, slice] : one_range) {
      SCOPED_TRACE(name);
      const size_t i = plan.add(name, slice);
      const tlio::PlanItem& item = plan.items()[i];
      ASSERT_TRUE(item.stored.has_value());
      const std::filesystem::path shard = dir / "sharded" / plan.file_names()[item.stored->file];
      EXPECT_EQ(file_bytes(shard, item.stored->offset, item.byte_size),
                reference(path, name, slice));
    }
    // Several ranges: no single place.
    const std::vector<SliceIndex> columns{SliceIndex::all(), SliceIndex::range(0, 48)},
        planes{SliceIndex::range(1, 3), SliceIndex::at(2)};
    const size_t by_columns = plan.add("w", columns), by_planes = plan.add("cube", planes);
    EXPECT_FALSE(plan.items()[by_columns].stored);
    EXPECT_FALSE(plan.items()[by_planes].stored);
    // A buffer at an address congruent to its item's offset modulo kDirectAlignment, as tlio's
    // Python lays them out for direct plans (the reads land in it), and one that is not.
    plan.clear();
    const std::vector<SliceIndex> some_rows{SliceIndex::range(8, 24)};
    const size_t whole = plan.add("w"), rows = plan.add("w", some_rows);
    const uint64_t page = tlio::kDirectAlignment;
    std::unique_ptr<std::byte[], decltype(&std::free)> block(
        static_cast<std::byte*>(std::aligned_alloc(page, 8 * page + 64 * 96 * 4)), &std::free);
    std::byte* congruent = block.get() + plan.items()[whole].stored->offset % page;
    std::vector<std::byte> other(plan.items()[rows].byte_size + 1);
    plan.set_destination(whole, {congruent, plan.items()[whole].byte_size});
    plan.set_destination(rows, std::span(other).subspan(1));
    plan.execute();
    EXPECT_EQ(std::vector<std::byte>(congruent, congruent + plan.items()[whole].byte_size),
              reference(path, "w", {}));
    EXPECT_EQ(std::vector<std::byte>(other.begin() + 1, other.end()),
              reference(path, "w", some_rows));
  }
  // A quantized weight is decoded, not read as it is stored.
  tlio::ReadPlan q = tlio::ReadPlan::open(write_int4_x(dir, 8));
  const size_t x = q.add("x");
  EXPECT_FALSE(q.items()[x].stored);
}

}  // namespace
