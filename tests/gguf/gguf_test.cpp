// Tests for tlio/gguf.hpp: files built here byte by byte from GGUF's layout (docs/gguf.md) read
// back field for field, and each rule ggml's reader enforces broken once: a clear Error{format}
// (rule gguf) naming the problem, never a crash or an allocation the file cannot back.
#include "tlio/gguf.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "test_util.hpp"
#include "tlio/error.hpp"
#include "tlio/gguf_convert.hpp"

namespace tlio {
namespace {

// A GGUF file written field by field.
struct Builder {
  std::vector<std::byte> out;

  template <class T>
  Builder& num(T v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    out.insert(out.end(), p, p + sizeof(T));
    return *this;
  }
  Builder& str(const std::string& s) {
    num<uint64_t>(s.size());
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    out.insert(out.end(), p, p + s.size());
    return *this;
  }
  Builder& header(uint32_t version, uint64_t tensors, uint64_t keys) {
    out.insert(out.end(), {std::byte{'G'}, std::byte{'G'}, std::byte{'U'}, std::byte{'F'}});
    return num(version).num(tensors).num(keys);
  }
  Builder& kv_u32(const std::string& key, uint32_t v) { return str(key).num<uint32_t>(4).num(v); }
  Builder& kv_str(const std::string& key, const std::string& v) {
    return str(key).num<uint32_t>(8).str(v);
  }
  Builder& tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type,
                  uint64_t offset) {
    str(name).num<uint32_t>(static_cast<uint32_t>(ne.size()));
    for (uint64_t d : ne) num(d);
    return num(type).num(offset);
  }
  Builder& pad(size_t alignment = 32) {
    while (out.size() % alignment) out.push_back(std::byte{0});
    return *this;
  }
  Builder& data(size_t n, uint8_t value = 0) {
    out.insert(out.end(), n, std::byte{value});
    return *this;
  }
};

// Two tensors as ggml lays them out: F32 [4, 2] (32 bytes) and Q8_0 [32, 3] (3 blocks of 34).
Builder valid_file() {
  Builder b;
  b.header(3, 2, 4).kv_str("general.architecture", "llama").kv_u32("llama.block_count", 2);
  b.str("tokenizer.ggml.tokens")
      .num<uint32_t>(9)
      .num<uint32_t>(8)
      .num<uint64_t>(3)
      .str("a")
      .str("bc")
      .str("");
  b.str("tokenizer.ggml.scores")
      .num<uint32_t>(9)
      .num<uint32_t>(6)
      .num<uint64_t>(2)
      .num(0.5f)
      .num(-1.25f);
  b.tensor("w", {4, 2}, 0, 0).tensor("q", {32, 3}, 8, 32).pad();
  b.data(32, 1).data(102, 2).pad();
  return b;
}

std::string error_of(const std::vector<std::byte>& bytes) {
  try {
    GgufFile::from_bytes(bytes, "test.gguf");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::format) << e.what();
    EXPECT_EQ(e.rule(), Rule::gguf) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return {};
}

TEST(Gguf, ReadsWhatWasWritten) {
  const Builder b = valid_file();
  const GgufFile f = GgufFile::from_bytes(b.out, "test.gguf");
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  ASSERT_EQ(f.metadata().size(), 4u);
  EXPECT_EQ(*f.find("general.architecture")->as_string(), "llama");
  EXPECT_EQ(f.find("llama.block_count")->as_uint(), 2u);
  const GgufValue& tokens = *f.find("tokenizer.ggml.tokens");
  EXPECT_EQ(tokens.type, GgufValueType::ARRAY);
  EXPECT_EQ(tokens.strings, (std::vector<std::string>{"a", "bc", ""}));
  EXPECT_EQ(f.find("tokenizer.ggml.scores")->number_at(1), -1.25);
  EXPECT_EQ(f.find("nope"), nullptr);
  ASSERT_EQ(f.tensors().size(), 2u);
  const GgufTensorInfo& q = *f.tensor("q");
  EXPECT_EQ(q.shape(), (std::vector<uint64_t>{3, 32}));  // numpy order
  EXPECT_EQ(q.bytes, 102u);
  EXPECT_EQ(q.offset, 32u);
  EXPECT_EQ(ggml_type(q.type)->name, "Q8_0");
  std::vector<std::byte> got(102);
  f.read(q, 0, got);
  EXPECT_EQ(got, std::vector<std::byte>(102, std::byte{2}));
  EXPECT_THROW(f.read(q, 1, got), Error);
  EXPECT_EQ(f.data_offset() % 32, 0u);
}

TEST(Gguf, OpensFromAPathAndKnowsItsMagic) {
  const test::TempDir tmp;
  const Builder b = valid_file();
  test::write_bytes(tmp / "m.gguf", b.out);
  const GgufFile f = GgufFile::open((tmp / "m.gguf").string());
  EXPECT_EQ(f.tensors().size(), 2u);
  EXPECT_TRUE(looks_like_gguf(b.out));
  EXPECT_FALSE(looks_like_gguf(std::vector<std::byte>(8)));
  EXPECT_THROW(GgufFile::open((tmp / "none.gguf").string()), Error);
}

TEST(Gguf, AlignmentFromTheMetadata) {
  Builder b;
  b.header(3, 1, 1).kv_u32("general.alignment", 64).tensor("w", {2}, 0, 0).pad(64).data(8);
  const GgufFile f = GgufFile::from_bytes(b.out);
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.data_offset() % 64, 0u);
  for (uint32_t bad : {0u, 48u}) {
    Builder c;
    c.header(3, 0, 1).kv_u32("general.alignment", bad);
    EXPECT_NE(error_of(c.out).find("power of two"), std::string::npos);
  }
  Builder wrong_type;
  wrong_type.header(3, 0, 1)
      .str("general.alignment")
      .num<uint32_t>(10)
      .num<uint64_t>(32);  // UINT64
  EXPECT_NE(error_of(wrong_type.out).find("UINT32"), std::string::npos);
}

TEST(Gguf, EveryRuleOfGgmlsReader) {
  const auto with = [](auto&& edit) {
    Builder b;
    edit(b);
    return error_of(b.out);
  };
  EXPECT_NE(with([](Builder& b) { b.data(4, 'X'); }).find("not a GGUF file"), std::string::npos);
  EXPECT_NE(with([](Builder& b) { b.header(1, 0, 0); }).find("version 1"), std::string::npos);
  EXPECT_NE(with([](Builder& b) { b.header(4, 0, 0); }).find("versions 2 and 3"),
            std::string::npos);
  EXPECT_NE(with([](Builder& b) { b.header(0x03000000, 0, 0); }).find("big-endian"),
            std::string::npos);
  EXPECT_NE(with([](Builder& b) { b.header(3, 0, 1).kv_u32("", 1); }).find("empty key"),
            std::string::npos);
  EXPECT_NE(with([](Builder& b) { b.header(3, 0, 2).kv_u32("k", 1).kv_u32("k", 2); }).find("twice"),
            std::string::npos);
  EXPECT_NE(
      with([](Builder& b) { b.header(3, 0, 1).str("k").num<uint32_t>(13); }).find("value type 13"),
      std::string::npos);
  EXPECT_NE(with([](Builder& b) {
              b.header(3, 0, 1).str("k").num<uint32_t>(9).num<uint32_t>(9).num<uint64_t>(0);
            }).find("array of arrays"),
            std::string::npos);
  EXPECT_NE(with([](Builder& b) {
              b.header(3, 1, 0).tensor(std::string(64, 'n'), {1}, 0, 0);
            }).find("63"),
            std::string::npos);
  EXPECT_NE(with([](Builder& b) {
              b.header(3, 2, 0).tensor("a", {1}, 0, 0).tensor("a", {1}, 0, 32);
            }).find("twice"),
            std::string::npos);
  EXPECT_NE(with([](Builder& b) {
              b.header(3, 1, 0).tensor("a", {1, 1, 1, 1, 1}, 0, 0);
            }).find("5 dimensions"),
            std::string::npos);
  EXPECT_NE(with([](Builder& b) { b.header(3, 1, 0).tensor("a", {1}, 4, 0); }).find("ggml type 4"),
            std::string::npos);
  EXPECT_NE(
      with([](Builder& b) { b.header(3, 1, 0).tensor("a", {16}, 8, 0); }).find("whole number"),
      std::string::npos);
  EXPECT_NE(with([](Builder& b) {
              b.header(3, 1, 0).tensor("a", {uint64_t{1} << 62, 4}, 0, 0);
            }).find("overflow"),
            std::string::npos);
  // Data not where ggml expects it, or past the end of the file.
  EXPECT_NE(with([](Builder& b) {
              b.header(3, 2, 0).tensor("a", {2}, 0, 0).tensor("b", {2}, 0, 8).pad().data(64);
            }).find("ggml expects 32"),
            std::string::npos);
  EXPECT_NE(with([](Builder& b) {
              b.header(3, 1, 0).tensor("a", {64}, 0, 0).pad().data(100);
            }).find("end of the file"),
            std::string::npos);
}

TEST(Gguf, CountsAndLengthsTheFileCannotHoldAreRefusedBeforeAllocating) {
  const auto with = [](auto&& edit) {
    Builder b;
    edit(b);
    return error_of(b.out);
  };
  EXPECT_NE(with([](Builder& b) { b.header(3, 0, uint64_t{1} << 40); }).find("metadata entries"),
            std::string::npos);
  EXPECT_NE(with([](Builder& b) { b.header(3, uint64_t{1} << 40, 0); }).find("tensors, more than"),
            std::string::npos);
  EXPECT_NE(with([](Builder& b) {
              b.header(3, 0, 1).str("k").num<uint32_t>(8).num<uint64_t>(uint64_t{1} << 50);
            }).find("over the limit"),
            std::string::npos);
  EXPECT_NE(with([](Builder& b) {
              b.header(3, 0, 1).str("k").num<uint32_t>(8).num<uint64_t>(1000);
            }).find("the file ends inside"),
            std::string::npos);
  EXPECT_NE(with([](Builder& b) {
              b.header(3, 0, 1).str("k").num<uint32_t>(9).num<uint32_t>(8).num<uint64_t>(uint64_t{1}
                                                                                         << 29);
            }).find("more than the rest of the file holds"),
            std::string::npos);
  EXPECT_NE(with([](Builder& b) { b.header(3, 0, 0).out.resize(10); }).find("the file ends inside"),
            std::string::npos);
  // Every prefix of a valid file is refused cleanly.
  const Builder whole = valid_file();
  for (size_t n = 0; n + 40 < whole.out.size(); ++n)
    EXPECT_THROW(GgufFile::from_bytes(std::span(whole.out).first(n)), Error) << n;
}

// A slice read by read_slice against the same elements picked out of read_values' whole tensor.
std::vector<float> picked(const std::vector<float>& whole, uint64_t cols, uint64_t r0, uint64_t r1,
                          uint64_t c0, uint64_t c1) {
  std::vector<float> out;
  for (uint64_t r = r0; r < r1; ++r)
    for (uint64_t c = c0; c < c1; ++c) out.push_back(whole[r * cols + c]);
  return out;
}

TEST(Gguf, SlicesReadOnlyTheirBlocksAndEqualTheWholeTensorsElements) {
  // Q4_K [40, 512] (two 144-byte blocks a row) encoded from known values, then F32 [2, 2^20 + 8]
  // whose rows are longer than a slice's read window.
  constexpr uint64_t kRows = 40, kCols = 512, kLong = (uint64_t{1} << 20) + 8;
  std::vector<float> values(kRows * kCols);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>((i * 7919) % 1000) / 500.0f - 1.0f;
  std::vector<std::byte> q4k(kRows * 2 * 144);
  ggml_encode(12, values, q4k);
  Builder b;
  b.header(3, 2, 0)
      .tensor("q", {kCols, kRows}, 12, 0)
      .tensor("long", {kLong, 2}, 0, q4k.size())
      .pad();
  b.out.insert(b.out.end(), q4k.begin(), q4k.end());
  for (uint64_t i = 0; i < 2 * kLong; ++i) b.num(static_cast<float>(i));
  const GgufFile f = GgufFile::from_bytes(b.out, "test.gguf");
  const GgufTensorInfo& q = *f.tensor("q");
  std::vector<float> whole(kRows * kCols);
  f.read_values(q, 0, whole.size(), Dtype::F32, std::as_writable_bytes(std::span(whole)));

  const auto slice = [&](const GgufTensorInfo& t, std::vector<SliceIndex> ix, uint64_t n) {
    std::vector<float> out(n);
    f.read_slice(t, ix, Dtype::F32, std::as_writable_bytes(std::span(out)));
    return out;
  };
  // Rows, then columns crossing a block boundary (runs of every row in one read), then an index.
  EXPECT_EQ(slice(q, {SliceIndex::range(3, 9)}, 6 * kCols), picked(whole, kCols, 3, 9, 0, kCols));
  EXPECT_EQ(slice(q, {SliceIndex::all(), SliceIndex::range(200, 300)}, kRows * 100),
            picked(whole, kCols, 0, kRows, 200, 300));
  EXPECT_EQ(slice(q, {SliceIndex::at(39), SliceIndex::range(511, 512)}, 1),
            picked(whole, kCols, 39, 40, 511, 512));
  const SlicePlan none = f.plan_slice(q, std::vector{SliceIndex::range(5, 5)});
  EXPECT_EQ(none.shape, (std::vector<uint64_t>{0, kCols}));
  EXPECT_TRUE(none.ranges.empty());
  EXPECT_EQ(none.byte_size, 0u);

  // Columns 100:200 lie in each row's first block (256 elements): one read of rows 1..39's, the
  // gaps between them included; only their blocks are needed.
  const SlicePlan plan =
      f.plan_slice(q, std::vector{SliceIndex::range(1, kRows), SliceIndex::range(100, 200)});
  EXPECT_EQ(plan.shape, (std::vector<uint64_t>{kRows - 1, 100}));
  ASSERT_EQ(plan.ranges.size(), 1u);
  EXPECT_EQ(plan.ranges[0].offset, 288u);
  EXPECT_EQ(plan.ranges[0].length, (kRows - 2) * 288 + 144);
  EXPECT_EQ(plan.byte_size, (kRows - 1) * 144);

  // Runs longer than a read window are cut where 2^20 F32 values (4 MiB) end: reads of at most
  // that, the cut pieces of the two rows' runs that lie close together sharing one.
  const GgufTensorInfo& big = *f.tensor("long");
  const std::vector<float> tail =
      slice(big, {SliceIndex::all(), SliceIndex::range(3, kLong)}, 2 * (kLong - 3));
  EXPECT_EQ(tail.front(), 3.0f);
  EXPECT_EQ(tail[kLong - 4], static_cast<float>(kLong - 1));
  EXPECT_EQ(tail[kLong - 3], static_cast<float>(kLong + 3));
  EXPECT_EQ(tail.back(), static_cast<float>(2 * kLong - 1));
  const SlicePlan reads =
      f.plan_slice(big, std::vector{SliceIndex::all(), SliceIndex::range(3, kLong)});
  ASSERT_EQ(reads.ranges.size(), 3u);
  EXPECT_EQ(reads.ranges[0].offset, 12u);
  EXPECT_EQ(reads.ranges[0].length, (uint64_t{4} << 20) - 12);
  EXPECT_EQ(reads.ranges[1].offset, uint64_t{4} << 20);
  EXPECT_EQ(reads.ranges[1].length, uint64_t{4} << 20);
  EXPECT_EQ(reads.ranges[2].length, 64u);
  EXPECT_EQ(reads.byte_size, 2 * (kLong - 3) * 4);

  // F16 out, and what is refused: a bad slice, a destination of another size.
  std::vector<uint16_t> half(kCols), row_two(kCols);
  f.read_slice(q, std::vector{SliceIndex::at(2)}, Dtype::F16,
               std::as_writable_bytes(std::span(half)));
  f.read_values(q, 2 * kCols, kCols, Dtype::F16, std::as_writable_bytes(std::span(row_two)));
  EXPECT_EQ(half, row_two);
  EXPECT_THROW(slice(q, {SliceIndex::range(0, kRows + 1)}, 0), Error);
  EXPECT_THROW(slice(q, {SliceIndex::at(0), SliceIndex::at(0), SliceIndex::at(0)}, 1), Error);
  EXPECT_THROW(slice(q, {SliceIndex::at(0)}, kCols - 1), Error);
}

TEST(Gguf, TypeTable) {
  EXPECT_EQ(ggml_type(12)->name, "Q4_K");
  EXPECT_EQ(ggml_type(12)->block, 256u);
  EXPECT_EQ(ggml_type(12)->block_bytes, 144u);
  EXPECT_EQ(ggml_type(30)->name, "BF16");
  for (uint32_t removed : {4u, 5u, 31u, 33u, 36u, 38u, 43u, 1000u})
    EXPECT_FALSE(ggml_type(removed)) << removed;
  EXPECT_EQ(gguf_value_type_name(GgufValueType::FLOAT32), "FLOAT32");
}

}  // namespace
}  // namespace tlio
