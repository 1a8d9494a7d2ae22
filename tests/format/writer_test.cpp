// Tests for tlio/writer.hpp: streaming, refusals, atomic replacement, bounded memory.
#include "tlio/writer.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "test_util.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"

namespace tlio {
namespace {

std::vector<std::byte> iota_bytes(size_t n, int seed) {
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 7 + seed) & 0xFF);
  return v;
}

std::vector<std::string> dir_entries(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Writer, StreamingInAnyOrderAndPartsMatchesSerialize) {
  auto a = iota_bytes(64, 1), b = iota_bytes(10, 2), c = iota_bytes(8, 3);
  std::vector<TensorData> t = {
      {"a", Dtype::F32, {4, 4}, a}, {"b", Dtype::U8, {10}, b}, {"c", Dtype::I64, {1}, c}};
  auto expected = serialize(t, {{"k", "v"}});
  test::TempDir dir;
  Writer w = Writer::to_file(dir / "s.safetensors");
  w.set_metadata("k", "v");
  w.declare("b", Dtype::U8, {10});
  w.declare("a", Dtype::F32, {4, 4});
  w.declare("c", Dtype::I64, {1});
  w.append("b", std::span(b).first(3));
  w.write("c", c);
  w.append("b", std::span(b).subspan(3));
  w.write_from("a", [&](uint64_t off, std::span<std::byte> buf) {
    std::memcpy(buf.data(), a.data() + off, buf.size());
  });
  EXPECT_EQ(dir_entries(dir.path()).size(), 1u);  // only the temporary so far
  EXPECT_FALSE(std::filesystem::exists(dir / "s.safetensors"));
  w.commit();
  EXPECT_EQ(test::read_bytes(dir / "s.safetensors"), expected);
  EXPECT_EQ(dir_entries(dir.path()), std::vector<std::string>{"s.safetensors"});
}

TEST(Writer, CopyFromFdTakesBytesFromAnotherFile) {
  test::TempDir dir;
  std::vector<std::byte> raw(64);
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<std::byte>(i);
  test::write_bytes(dir / "raw.bin", raw);
  const int fd = ::open((dir / "raw.bin").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  for (bool to_file : {true, false}) {
    Writer w = to_file ? Writer::to_file(dir / "out.safetensors") : Writer::to_memory();
    w.declare("a", Dtype::U8, {8});
    w.declare("b", Dtype::F32, {2});
    w.copy_from_fd("a", fd, 10);
    w.copy_from_fd("b", fd, 56);
    EXPECT_THROW(w.copy_from_fd("b", fd, 0), Error);  // already written
    w.commit();
    const File f = to_file ? File::open(dir / "out.safetensors") : File::from_bytes(w.take_bytes());
    const auto a = f.view("a").bytes();
    EXPECT_TRUE(std::equal(a.begin(), a.end(), raw.begin() + 10));
    const auto b = f.view("b").bytes();
    EXPECT_TRUE(std::equal(b.begin(), b.end(), raw.begin() + 56));
  }
  Writer short_source = Writer::to_file(dir / "short.safetensors");
  short_source.declare("a", Dtype::U8, {16});
  EXPECT_THROW(short_source.copy_from_fd("a", fd, 60), Error);  // 4 bytes left
  short_source.abort();
  ::close(fd);
  EXPECT_FALSE(std::filesystem::exists(dir / "short.safetensors"));
}

TEST(Writer, LayoutIsCanonical) {
  Writer w = Writer::to_memory();
  w.declare("z", Dtype::U8, {1});
  w.declare("y", Dtype::F64, {1});
  w.declare("x", Dtype::U8, {2});
  const auto& l = w.layout();
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(l[0].name, "y");
  EXPECT_EQ(l[1].name, "x");
  EXPECT_EQ(l[1].begin, 8u);
  EXPECT_EQ(l[2].name, "z");
  EXPECT_THROW(w.declare("late", Dtype::U8, {1}), Error);
  EXPECT_THROW(w.set_metadata("late", "x"), Error);
}

TEST(Writer, Refusals) {
  auto expect_invalid = [](auto&& fn) {
    try {
      fn();
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
    }
  };
  Writer w = Writer::to_memory();
  w.declare("a", Dtype::F32, {2});
  expect_invalid([&] { w.declare("a", Dtype::U8, {1}); });
  expect_invalid([&] { w.declare("__metadata__", Dtype::U8, {1}); });
  expect_invalid([&] { w.declare("bad\xFF", Dtype::U8, {1}); });
  expect_invalid([&] { w.set_metadata("k", "\xC0\x80"); });
  expect_invalid([&] { w.declare("f4", Dtype::F4, {3}); });
  expect_invalid([&] { w.declare("f4s", Dtype::F4, {}); });
  expect_invalid([&] { w.declare("huge", Dtype::F32, {UINT64_MAX, 2}); });
  auto twelve = iota_bytes(12, 0);
  expect_invalid([&] { w.write("a", twelve); });
  expect_invalid([&] { w.append("a", twelve); });
  try {
    w.write("nope", twelve);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::not_found);
  }
  w.append("a", std::span(twelve).first(4));
  expect_invalid([&] { w.commit(); });  // a is incomplete
}

TEST(Writer, IncompleteOrAbortedLeavesDestinationAlone) {
  test::TempDir dir;
  auto old = test::make_file("{}      ");
  test::write_bytes(dir / "d.safetensors", old);
  {
    Writer w = Writer::to_file(dir / "d.safetensors");
    w.declare("a", Dtype::U8, {4});
    w.append("a", iota_bytes(2, 0));
    EXPECT_THROW(w.commit(), Error);
  }  // destroyed without commit
  EXPECT_EQ(test::read_bytes(dir / "d.safetensors"), old);
  {
    Writer w = Writer::to_file(dir / "d.safetensors");
    w.declare("a", Dtype::U8, {4});
    w.write("a", iota_bytes(4, 0));
    w.abort();
    EXPECT_THROW(w.commit(), Error);
  }
  EXPECT_EQ(test::read_bytes(dir / "d.safetensors"), old);
  EXPECT_EQ(dir_entries(dir.path()), std::vector<std::string>{"d.safetensors"});
}

TEST(Writer, Permissions) {
  test::TempDir dir;
  mode_t old_mask = ::umask(022);
  save_file(dir / "new.safetensors", {});
  struct stat st;
  ASSERT_EQ(::stat((dir / "new.safetensors").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  ASSERT_EQ(::chmod((dir / "new.safetensors").c_str(), 0600), 0);
  save_file(dir / "new.safetensors", {});
  ASSERT_EQ(::stat((dir / "new.safetensors").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);  // replacing keeps the mode
  ::umask(old_mask);
}

TEST(Writer, OverwritingTheMappedSourceIsSafe) {
  test::TempDir dir;
  auto a = iota_bytes(4096, 5);
  std::vector<TensorData> t = {{"a", Dtype::U8, {4096}, a}};
  save_file(dir / "m.safetensors", t, {{"v", "1"}});
  File f = File::open(dir / "m.safetensors");
  TensorView view = f.view("a");
  Writer w = Writer::to_file(dir / "m.safetensors");
  w.set_metadata("v", "2");
  w.declare("a", Dtype::U8, {4096});
  w.declare("b", Dtype::U8, {1});
  w.copy_from("a", f, "a");
  w.write("b", iota_bytes(1, 0));
  w.commit();
  EXPECT_TRUE(std::equal(view.bytes().begin(), view.bytes().end(), a.begin(), a.end()));
  File g = File::open(dir / "m.safetensors");
  EXPECT_EQ(g.metadata().at("v"), "2");
  auto ga = g.view("a").bytes();
  EXPECT_TRUE(std::equal(ga.begin(), ga.end(), a.begin(), a.end()));
  // rewrite_canonical over its own source.
  rewrite_canonical(g, dir / "m.safetensors");
  const File rewritten = File::open(dir / "m.safetensors");
  EXPECT_EQ(rewritten.tensors().size(), 2u);
}

TEST(Writer, HeaderLimitBoundary) {
  // One tensor whose padded header is exactly kMaxHeaderSize is written; one byte more is not.
  const std::string base = R"({"":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}})";
  const size_t fixed = base.size();
  {
    Writer w = Writer::to_memory();
    w.declare(std::string(kMaxHeaderSize - fixed, 'x'), Dtype::U8, {0});
    w.commit();
    auto bytes = w.take_bytes();
    EXPECT_EQ(bytes.size(), 8 + kMaxHeaderSize);
    EXPECT_NO_THROW(File::from_bytes(std::move(bytes)));
  }
  {
    Writer w = Writer::to_memory();
    w.declare(std::string(kMaxHeaderSize - fixed + 1, 'x'), Dtype::U8, {0});
    EXPECT_THROW(w.layout(), Error);
  }
}

TEST(Writer, TwoGiBInBoundedHeap) {
  test::TempDir dir;
  struct statvfs vfs;
  const uint64_t total = uint64_t{2} << 30;
  if (::statvfs(dir.path().c_str(), &vfs) != 0 || uint64_t(vfs.f_bavail) * vfs.f_frsize < total * 3)
    GTEST_SKIP() << "needs 6 GiB free in " << dir.path();
  auto heap = [] {
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
  };
  const size_t before = heap();
  size_t peak = before;
  Writer w = Writer::to_file(dir / "big.safetensors");
  const uint64_t n = 8;
  for (uint64_t i = 0; i < n; ++i) w.declare("t" + std::to_string(i), Dtype::U8, {total / n});
  for (uint64_t i = 0; i < n; ++i)
    w.write_from("t" + std::to_string(i), [&](uint64_t off, std::span<std::byte> buf) {
      std::memset(buf.data(), static_cast<int>((off >> 20) + i), buf.size());
      peak = std::max(peak, heap());
    });
  w.commit();
  EXPECT_LT(peak - before, size_t{64} << 20);
  // In fact: the 1 MiB fill buffer and two 8 MiB stages (one gathered while the other is written).
  EXPECT_LT(peak - before, size_t{20} << 20);
  File f = File::open(dir / "big.safetensors");
  EXPECT_EQ(f.header().data_size(), total);
  EXPECT_EQ(f.view("t3").bytes()[(5u << 20) + 7], static_cast<std::byte>(5 + 3));
}

}  // namespace
}  // namespace tlio
