// Tests for tlio/file.hpp: backends, views and their lifetime, typed copies.
#include "tlio/file.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <type_traits>
#include <utility>

#include "test_util.hpp"
#include "tlio/writer.hpp"

namespace tlio {
namespace {

// References into a File cannot be taken from a temporary File (they would dangle), and there is
// no empty TensorView whose accessors have nothing to refer to.
template <class F>
concept HasHeader = requires(F&& f) {
  std::forward<F>(f).header().at("x");
};
template <class F>
concept HasTensors = requires(F&& f) {
  std::forward<F>(f).tensors();
};
template <class F>
concept HasMetadata = requires(F&& f) {
  std::forward<F>(f).metadata();
};
template <class F>
concept HasName = requires(F&& f) {
  std::forward<F>(f).name();
};
static_assert(HasHeader<const File&> && HasTensors<File&> && HasMetadata<File&> && HasName<File&>);
static_assert(!HasHeader<File> && !HasTensors<File> && !HasMetadata<File> && !HasName<File>);
static_assert(!std::is_default_constructible_v<TensorView>);

std::vector<std::byte> sample_file() {
  std::vector<float> w = {1, 2, 3, 4, 5, 6};
  std::vector<int64_t> ids = {7, -8};
  std::vector<uint8_t> flag = {1};
  std::vector<TensorData> t = {
      {"w", Dtype::F32, {2, 3}, std::as_bytes(std::span(w))},
      {"ids", Dtype::I64, {2}, std::as_bytes(std::span(ids))},
      {"flag", Dtype::U8, {}, std::as_bytes(std::span(flag))},
      {"empty", Dtype::F16, {0, 5}, {}},
  };
  return serialize(t, {{"format", "tinyllm"}});
}

TEST(File, AllBackendsAgree) {
  test::TempDir dir;
  test::write_bytes(dir / "s.safetensors", sample_file());
  auto bytes = sample_file();
  std::vector<File> files;
  files.push_back(File::open(dir / "s.safetensors"));
  files.push_back(File::open(dir / "s.safetensors", {Backend::pread}));
  files.push_back(File::from_buffer(bytes));
  files.push_back(File::from_bytes(sample_file()));
  files.push_back(File::open(dir / "s.safetensors", {Backend::mmap_private}));
  for (const File& f : files) {
    EXPECT_EQ(f.metadata().at("format"), "tinyllm");
    EXPECT_EQ(f.copy_as<float>("w"), (std::vector<float>{1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(f.copy_as<int64_t>("ids"), (std::vector<int64_t>{7, -8}));
    EXPECT_EQ(f.view("empty").bytes().size(), 0u);
    EXPECT_EQ(f.view("flag").shape(), std::vector<uint64_t>{});
    std::vector<std::byte> dst(16);
    f.read("ids", dst);
    EXPECT_EQ(dst[0], std::byte{7});
    EXPECT_EQ(dst[8], std::byte{0xF8});
    EXPECT_THROW(f.read("ids", std::span<std::byte>(dst).first(8)), Error);
    EXPECT_TRUE(f.is_canonical());
  }
  EXPECT_EQ(files[0].backend(), Backend::mmap);
  EXPECT_EQ(files[1].backend(), Backend::pread);
  EXPECT_TRUE(files[1].mapped_data().empty());
  EXPECT_EQ(files[0].file_size(), bytes.size());
}

TEST(File, MmapViewsAreZeroCopy) {
  test::TempDir dir;
  test::write_bytes(dir / "s.safetensors", sample_file());
  File f = File::open(dir / "s.safetensors");
  auto data = f.mapped_data();
  auto v = f.view("w");
  EXPECT_EQ(v.bytes().data(), data.data() + f.header().at("w").begin);
}

TEST(File, ViewsOutliveTheFile) {
  // The lifetime rule: a view keeps the mapping (or its pread copy) alive.
  test::TempDir dir;
  test::write_bytes(dir / "s.safetensors", sample_file());
  for (Backend b : {Backend::mmap, Backend::pread}) {
    TensorView v = [&] {
      File f = File::open(dir / "s.safetensors", {b});
      return f.view("w");
    }();
    std::filesystem::remove(dir / "s.safetensors");
    EXPECT_EQ(v.name(), "w");
    EXPECT_EQ(v.copy_as<float>()[5], 6.0f);
    test::write_bytes(dir / "s.safetensors", sample_file());
  }
}

TEST(File, TypedCopyChecksTheType) {
  File f = File::from_bytes(sample_file());
  EXPECT_THROW(f.copy_as<double>("w"), Error);
  EXPECT_EQ(f.copy_as<uint32_t>("w")[0], 0x3F800000u);  // raw bits of a float type are allowed
  EXPECT_THROW(f.copy_as<int32_t>("w"), Error);
  EXPECT_THROW(f.copy_as<float>("ids"), Error);
  EXPECT_THROW(f.copy_as<uint64_t>("ids"), Error);  // I64 is not U64
  try {
    f.copy_as<double>("w");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_EQ(e.tensor(), "w");
  }
}

TEST(File, RawBitsOfFloatTypes) {
  std::vector<uint16_t> bits = {0x3F80, 0x4000};
  std::vector<TensorData> t = {{"b", Dtype::BF16, {2}, std::as_bytes(std::span(bits))}};
  File f = File::from_bytes(serialize(t));
  EXPECT_EQ(f.copy_as<uint16_t>("b"), bits);
  EXPECT_THROW(f.copy_as<int16_t>("b"), Error);
}

TEST(File, MisalignedDataCopiesCorrectly) {
  // A U8 tensor of 1 byte first puts the F32 tensor at an odd offset.
  std::vector<uint8_t> one = {9};
  std::vector<float> w = {1.5f, -2.25f};
  std::vector<TensorData> t = {{"a", Dtype::U8, {1}, std::as_bytes(std::span(one))},
                               {"b", Dtype::F32, {2}, std::as_bytes(std::span(w))}};
  File f = File::from_bytes(serialize(t));
  // F32 sorts first canonically; build a misaligned layout by hand instead.
  std::string h =
      R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"F32","shape":[2],"data_offsets":[1,9]}})";
  std::vector<std::byte> data(9);
  data[0] = std::byte{9};
  std::memcpy(data.data() + 1, w.data(), 8);
  File m = File::from_bytes(test::make_file(h, data));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m.view("b").bytes().data()) % 4 != 0 ||
                (8 + h.size() + 1) % 4 != 0,
            true);
  EXPECT_EQ(m.copy_as<float>("b"), w);
  EXPECT_FALSE(m.is_canonical());
}

TEST(File, ErrorsNameTheFile) {
  test::TempDir dir;
  try {
    File::open(dir / "missing.safetensors");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::io);
    EXPECT_NE(std::string(e.what()).find("missing.safetensors: cannot open"), std::string::npos);
  }
  try {
    File::open(dir.path());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::io);
  }
  test::write_bytes(dir / "bad.safetensors", test::make_file("{", {}));
  try {
    File::open(dir / "bad.safetensors", {Backend::pread});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::format);
    EXPECT_EQ(std::string(e.what()).rfind((dir / "bad.safetensors").string() + ": rule 2: ", 0),
              0u);
  }
}

TEST(File, PreadBackendReportsTruncationAsIoError) {
  test::TempDir dir;
  auto bytes = sample_file();
  test::write_bytes(dir / "s.safetensors", bytes);
  File f = File::open(dir / "s.safetensors", {Backend::pread});
  ASSERT_EQ(::truncate((dir / "s.safetensors").c_str(), static_cast<off_t>(bytes.size() - 30)), 0);
  try {
    (void)f.view("w");
    (void)f.view("ids");
    (void)f.view("flag");
    FAIL() << "truncation not noticed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::io);
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos);
  }
}

TEST(File, PrivateMappingIsWritableAndLeavesTheFileAlone) {
  test::TempDir dir;
  const auto bytes = sample_file();
  test::write_bytes(dir / "s.safetensors", bytes);
  File f = File::open(dir / "s.safetensors", {Backend::mmap_private});
  EXPECT_EQ(f.backend(), Backend::mmap_private);
  TensorView w = f.view("w");
  ASSERT_TRUE(w.writable());
  const float changed = 42;
  std::memcpy(w.writable_bytes().data(), &changed, sizeof changed);
  EXPECT_EQ(f.copy_as<float>("w")[0], 42.0f);  // seen by later views of the same File
  EXPECT_EQ(File::open(dir / "s.safetensors").copy_as<float>("w")[0], 1.0f);
  EXPECT_EQ(test::read_bytes(dir / "s.safetensors"), bytes);
  EXPECT_TRUE(f.view("empty").writable());

  // Read-only memory: a shared mapping, a caller's buffer. Owned memory: pread, from_bytes.
  File shared = File::open(dir / "s.safetensors");
  File borrowed = File::from_buffer(bytes);
  for (const File* ro : {&shared, &borrowed}) {
    EXPECT_FALSE(ro->view("w").writable());
    EXPECT_THROW((void)ro->view("w").writable_bytes(), Error);
  }
  EXPECT_TRUE(File::open(dir / "s.safetensors", {Backend::pread}).view("w").writable());
  EXPECT_TRUE(File::from_bytes(bytes).view("w").writable());
}

TEST(File, ReadManySplitsTheBytesOverThreads) {
  // 12 MiB in tensors of different sizes, so the parts of the threads cut through tensors.
  std::vector<std::vector<uint32_t>> values;
  std::vector<TensorData> t;
  const std::vector<uint64_t> counts = {1u << 20, 3, 0, (1u << 20) + 777, 5, 1u << 20};
  for (size_t i = 0; i < counts.size(); ++i) {
    values.emplace_back(counts[i]);
    for (uint64_t j = 0; j < counts[i]; ++j)
      values.back()[j] = static_cast<uint32_t>(j * 2654435761u + i);
  }
  for (size_t i = 0; i < counts.size(); ++i)
    t.push_back(
        {"t" + std::to_string(i), Dtype::U32, {counts[i]}, std::as_bytes(std::span(values[i]))});
  test::TempDir dir;
  test::write_bytes(dir / "m.safetensors", serialize(t, {}));
  for (Backend b : {Backend::mmap, Backend::pread, Backend::mmap_private}) {
    File f = File::open(dir / "m.safetensors", {b});
    for (unsigned threads : {1u, 2u, 3u}) {
      std::vector<std::vector<uint32_t>> out;
      std::vector<TensorTarget> targets;
      for (size_t i = 0; i < counts.size(); ++i) out.emplace_back(counts[i], 0xFFFFFFFFu);
      for (size_t i = counts.size(); i-- > 0;)  // any order
        targets.push_back({t[i].name, std::as_writable_bytes(std::span(out[i]))});
      f.read_many(targets, threads);
      for (size_t i = 0; i < counts.size(); ++i)
        EXPECT_EQ(out[i], values[i]) << i << " " << threads;
    }
    // Checked before any byte moves: a wrong size or name leaves every destination alone.
    std::vector<uint32_t> a(counts[0], 7), small(2, 7);
    std::vector<TensorTarget> bad = {{"t0", std::as_writable_bytes(std::span(a))},
                                     {"t1", std::as_writable_bytes(std::span(small))}};
    EXPECT_THROW(f.read_many(bad), Error);
    bad[1].name = "nope";
    EXPECT_THROW(f.read_many(bad), Error);
    EXPECT_EQ(a[0], 7u);
  }
}

}  // namespace
}  // namespace tlio
