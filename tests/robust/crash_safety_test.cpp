// Crash safety of the writer: a writer killed (SIGKILL) at any moment leaves the destination as
// the old file or the complete new one; a full disk gives a clear error and keeps the old file.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <thread>

#include "test_util.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/writer.hpp"

namespace tlio {
namespace {

constexpr uint64_t kTensorBytes = uint64_t{8} << 20;

// Child process body: writes the new version of `dest` slowly, in 1 MiB parts, then commits.
[[noreturn]] void write_new_version(const std::filesystem::path& dest) {
  try {
    Writer w = Writer::to_file(dest);
    w.set_metadata("version", "new");
    w.declare("a", Dtype::U8, {kTensorBytes});
    w.declare("b", Dtype::U8, {kTensorBytes});
    std::vector<std::byte> part(size_t{1} << 20, std::byte{0x5A});
    for (const char* name : {"a", "b"})
      for (uint64_t off = 0; off < kTensorBytes; off += part.size()) {
        w.append(name, part);
        std::this_thread::sleep_for(std::chrono::microseconds(300));
      }
    w.commit();
  } catch (...) {
    _exit(3);
  }
  _exit(0);
}

TEST(CrashSafety, KilledWriterLeavesOldOrNewFile) {
  test::TempDir dir;
  const auto dest = dir / "model.safetensors";
  std::vector<std::byte> old_data(1000, std::byte{1});
  std::vector<TensorData> old = {{"old", Dtype::U8, {1000}, old_data}};
  save_file(dest, old, {{"version", "old"}});
  const auto old_bytes = test::read_bytes(dest);
  std::mt19937 rng(1234);
  int saw_old = 0, saw_new = 0;
  for (int round = 0; round < 24; ++round) {
    save_file(dest, old, {{"version", "old"}});
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) write_new_version(dest);
    // Kill at a random moment: before, during or (rarely) after the commit.
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 30));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    File f = File::open(dest);  // must always be a valid file
    if (f.metadata().at("version") == "old") {
      EXPECT_EQ(test::read_bytes(dest), old_bytes);
      ++saw_old;
    } else {
      EXPECT_EQ(f.header().data_size(), 2 * kTensorBytes);
      EXPECT_EQ(f.view("b").bytes()[kTensorBytes - 1], std::byte{0x5A});
      ++saw_new;
    }
    // Leftovers are hidden temporaries beside the file, never the destination's name.
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
      const std::string name = e.path().filename();
      if (name != "model.safetensors") {
        EXPECT_EQ(name.rfind(".model.safetensors.tlio-tmp-", 0), 0u) << name;
      }
    }
  }
  EXPECT_GT(saw_old, 0);
  std::cout << "kills that left the old file: " << saw_old << ", the new one: " << saw_new << "\n";
}

TEST(CrashSafety, DiskFullKeepsTheOldFile) {
  test::TempDir dir;
  const auto mnt = dir / "small";
  std::filesystem::create_directories(mnt);
  if (mount("tlio-test", mnt.c_str(), "tmpfs", 0, "size=1m") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here (" << std::strerror(errno)
                 << "); disk-full test skipped";
  std::vector<std::byte> small(100, std::byte{7});
  std::vector<TensorData> t = {{"s", Dtype::U8, {100}, small}};
  save_file(mnt / "m.safetensors", t);
  const auto before = test::read_bytes(mnt / "m.safetensors");
  std::vector<std::byte> big(size_t{4} << 20, std::byte{9});
  std::vector<TensorData> b = {{"big", Dtype::U8, {big.size()}, big}};
  try {
    save_file(mnt / "m.safetensors", b);
    ADD_FAILURE() << "a 4 MiB write fit in a 1 MiB tmpfs";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::io);
    EXPECT_NE(std::string(e.what()).find("No space left"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("m.safetensors"), std::string::npos) << e.what();
  }
  EXPECT_EQ(test::read_bytes(mnt / "m.safetensors"), before);
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(mnt)) ++entries;
  EXPECT_EQ(entries, 1u);  // the temporary was removed
  umount(mnt.c_str());
}

}  // namespace
}  // namespace tlio
