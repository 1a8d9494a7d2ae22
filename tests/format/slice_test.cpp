// Tests for slicing (plan_slice, TensorView::slice_*, File::read_slice).
#include <gtest/gtest.h>

#include "test_util.hpp"
#include "tlio/file.hpp"
#include "tlio/writer.hpp"

namespace tlio {
namespace {

using SI = SliceIndex;

TensorInfo info(Dtype d, std::vector<uint64_t> shape) {
  TensorInfo t;
  t.name = "t";
  t.dtype = d;
  t.shape = std::move(shape);
  t.end = *tensor_bytes(d, t.shape);
  return t;
}

std::vector<std::pair<uint64_t, uint64_t>> ranges(const SlicePlan& p) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (auto r : p.ranges) out.emplace_back(r.offset, r.length);
  return out;
}

TEST(Slice, ReferenceExamplesOnF32_2x3) {
  TensorInfo t = info(Dtype::F32, {2, 3});
  SI a[] = {SI::at(1)};
  auto p = plan_slice(t, a);
  EXPECT_EQ(p.shape, std::vector<uint64_t>{3});
  EXPECT_EQ(ranges(p), (std::vector<std::pair<uint64_t, uint64_t>>{{12, 12}}));
  SI b[] = {SI::all(), SI::at(1)};
  p = plan_slice(t, b);
  EXPECT_EQ(p.shape, std::vector<uint64_t>{2});
  EXPECT_EQ(ranges(p), (std::vector<std::pair<uint64_t, uint64_t>>{{4, 4}, {16, 4}}));
  SI c[] = {SI::all(), SI::range(1, 3)};
  p = plan_slice(t, c);
  EXPECT_EQ(ranges(p), (std::vector<std::pair<uint64_t, uint64_t>>{{4, 8}, {16, 8}}));
  SI d[] = {SI::range(1, 1)};
  p = plan_slice(t, d);
  EXPECT_EQ(p.shape, (std::vector<uint64_t>{0, 3}));
  EXPECT_TRUE(p.ranges.empty());
  EXPECT_EQ(p.byte_size, 0u);
}

TEST(Slice, EdgeCasesTheReferenceGetsWrong) {
  TensorInfo t = info(Dtype::F32, {2, 3});
  SI end_empty[] = {SI::range(2, 2)};  // empty range at the end: fine
  EXPECT_EQ(plan_slice(t, end_empty).shape, (std::vector<uint64_t>{0, 3}));
  SI outer_empty[] = {SI::range(1, 1), SI::range(0, 2)};  // not the whole buffer
  auto p = plan_slice(t, outer_empty);
  EXPECT_EQ(p.shape, (std::vector<uint64_t>{0, 2}));
  EXPECT_EQ(p.byte_size, 0u);
  SI reversed[] = {SI::range(1, 0)};
  EXPECT_THROW(plan_slice(t, reversed), Error);
  SI past[] = {SI::range(0, 5)};
  EXPECT_THROW(plan_slice(t, past), Error);
  SI index_past[] = {SI::at(2)};
  EXPECT_THROW(plan_slice(t, index_past), Error);
  SI too_many[] = {SI::all(), SI::all(), SI::all()};
  EXPECT_THROW(plan_slice(t, too_many), Error);
  try {
    plan_slice(t, reversed);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  }
}

TEST(Slice, ZeroSizeDims) {
  TensorInfo t = info(Dtype::F32, {0, 4});
  SI all[] = {SI::all()};
  auto p = plan_slice(t, all);
  EXPECT_EQ(p.shape, (std::vector<uint64_t>{0, 4}));
  EXPECT_EQ(p.byte_size, 0u);
  SI cols[] = {SI::all(), SI::range(1, 3)};
  EXPECT_EQ(plan_slice(t, cols).shape, (std::vector<uint64_t>{0, 2}));
  TensorInfo huge = info(Dtype::F32, {UINT64_MAX, 0, UINT64_MAX});
  SI first[] = {SI::range(5, 10)};
  EXPECT_EQ(plan_slice(huge, first).shape, (std::vector<uint64_t>{5, 0, UINT64_MAX}));
}

TEST(Slice, ScalarAndWholeTensor) {
  TensorInfo s = info(Dtype::F64, {});
  auto p = plan_slice(s, {});
  EXPECT_EQ(ranges(p), (std::vector<std::pair<uint64_t, uint64_t>>{{0, 8}}));
  TensorInfo t = info(Dtype::U8, {3, 4, 5});
  SI whole[] = {SI::all(), SI::range(0, 4)};
  EXPECT_EQ(ranges(plan_slice(t, whole)), (std::vector<std::pair<uint64_t, uint64_t>>{{0, 60}}));
  SI mid[] = {SI::range(1, 3), SI::at(2), SI::range(1, 4)};
  p = plan_slice(t, mid);
  EXPECT_EQ(p.shape, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(ranges(p), (std::vector<std::pair<uint64_t, uint64_t>>{{31, 3}, {51, 3}}));
}

TEST(Slice, SubByteNeedsByteBoundaries) {
  TensorInfo t = info(Dtype::F4, {2, 4});
  SI row[] = {SI::at(1)};
  EXPECT_EQ(ranges(plan_slice(t, row)), (std::vector<std::pair<uint64_t, uint64_t>>{{2, 2}}));
  SI half[] = {SI::all(), SI::range(2, 4)};
  EXPECT_EQ(ranges(plan_slice(t, half)),
            (std::vector<std::pair<uint64_t, uint64_t>>{{1, 1}, {3, 1}}));
  SI odd[] = {SI::all(), SI::range(1, 2)};
  EXPECT_THROW(plan_slice(t, odd), Error);
  TensorInfo six = info(Dtype::F6_E2M3, {4, 4});
  SI r[] = {SI::at(1)};
  EXPECT_EQ(ranges(plan_slice(six, r)), (std::vector<std::pair<uint64_t, uint64_t>>{{3, 3}}));
  SI c[] = {SI::all(), SI::at(0)};
  EXPECT_THROW(plan_slice(six, c), Error);
}

TEST(Slice, CopiesAndChunksFromEveryBackend) {
  std::vector<float> v(24);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  std::vector<TensorData> t = {{"x", Dtype::F32, {2, 3, 4}, std::as_bytes(std::span(v))}};
  test::TempDir dir;
  save_file(dir / "x.safetensors", t);
  SI idx[] = {SI::all(), SI::range(1, 3), SI::at(2)};
  for (Backend b : {Backend::mmap, Backend::pread}) {
    File f = File::open(dir / "x.safetensors", {b});
    std::vector<uint64_t> shape;
    auto bytes = f.read_slice("x", idx, &shape);
    EXPECT_EQ(shape, (std::vector<uint64_t>{2, 2}));
    std::vector<float> got(4);
    std::memcpy(got.data(), bytes.data(), 16);
    EXPECT_EQ(got, (std::vector<float>{6, 10, 18, 22}));
    TensorView view = f.view("x");
    EXPECT_EQ(view.slice_copy(idx), bytes);
    auto chunks = view.slice_chunks(idx);
    ASSERT_EQ(chunks.size(), 4u);
    EXPECT_EQ(chunks[1].data(), view.bytes().data() + 10 * 4);
  }
}

}  // namespace
}  // namespace tlio
