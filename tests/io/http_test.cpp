// Tests for io/http.hpp and File::open of URLs against Debian's nginx, started here on
// 127.0.0.1 with a generated config (so the HTTP code also runs under the sanitizers).
#include "io/http.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "test_util.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"

namespace tlio::detail {
namespace {

int free_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(s);
  return ntohs(a.sin_port);
}

bool listening(int port) {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(s);
  return ok;
}

// nginx serving tests/data for the whole test program.
class Nginx : public ::testing::Environment {
 public:
  static inline std::string url;

  void SetUp() override {
    port_ = free_port();
    conf_ = dir_ / "nginx.conf";
    std::filesystem::create_directories(dir_.path() / "logs");
    std::ofstream(conf_) << (::geteuid() == 0 ? "user root;\n" : "") << "worker_processes 1;\n"
                         << "error_log " << (dir_ / "error.log").string() << ";\npid "
                         << (dir_ / "nginx.pid").string() << ";\nevents { worker_connections 16; }\n"
                         << "http { access_log off; client_body_temp_path " << dir_.path().string()
                         << "; proxy_temp_path " << dir_.path().string() << "; fastcgi_temp_path "
                         << dir_.path().string() << "; uwsgi_temp_path " << dir_.path().string()
                         << "; scgi_temp_path " << dir_.path().string() << ";\n  server { listen 127.0.0.1:"
                         << port_ << "; root " << test::data_dir().string() << "; } }\n";
    pid_ = ::fork();
    if (pid_ == 0) {
      const std::string prefix = dir_.path().string(), conf = conf_.string(), err = (dir_ / "error.log").string();
      ::execl("/usr/sbin/nginx", "nginx", "-p", prefix.c_str(), "-c", conf.c_str(), "-e", err.c_str(), "-g",
              "daemon off;", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    for (int i = 0; i < 200 && !listening(port_); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
    ASSERT_TRUE(listening(port_)) << "nginx did not start (Debian's nginx-light: scripts/install-deps.sh)";
    url = "http://127.0.0.1:" + std::to_string(port_);
  }
  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }

 private:
  test::TempDir dir_;
  std::filesystem::path conf_;
  int port_ = 0;
  pid_t pid_ = -1;
};

const auto* const kNginx = ::testing::AddGlobalTestEnvironment(new Nginx);

TEST(Http, OpenLearnsSizeAndKeepsThePrefix) {
  const auto local = test::read_bytes(test::data_dir() / "hf" / "many_1000.safetensors");
  auto f = HttpFile::open(Nginx::url + "/hf/many_1000.safetensors");
  EXPECT_EQ(f->size(), local.size());
  ASSERT_EQ(f->prefix().size(), std::min<size_t>(local.size(), kHttpFirstRange));
  EXPECT_TRUE(std::equal(f->prefix().begin(), f->prefix().end(), local.begin()));
  std::vector<std::byte> middle(1000);
  f->read(local.size() / 2, middle);
  EXPECT_TRUE(std::equal(middle.begin(), middle.end(), local.begin() + static_cast<ptrdiff_t>(local.size() / 2)));
  EXPECT_THROW(f->read(local.size() - 10, middle), Error);  // past the end
  EXPECT_TRUE(is_url("https://x/y") && is_url("http://x") && !is_url("file:///x") && !is_url("/http://"));
}

TEST(Http, FileOpenOfAUrlReadsAsTheLocalFile) {
  for (const char* name : {"mixed_all_dtypes.safetensors", "zero_size.safetensors", "worked_example.safetensors"}) {
    const File remote = File::open(Nginx::url + "/hf/" + name);
    const File local = File::open(test::data_dir() / "hf" / name);
    EXPECT_EQ(remote.backend(), Backend::http);
    ASSERT_EQ(remote.tensors().size(), local.tensors().size());
    EXPECT_EQ(remote.raw_header(), local.raw_header());
    EXPECT_EQ(remote.is_canonical(), local.is_canonical());
    for (const TensorInfo& t : local.tensors()) {
      const TensorView rv = remote.view(t.name), lv = local.view(t.name);  // remote views own their bytes
      const auto a = rv.bytes(), b = lv.bytes();
      EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << name << " " << t.name;
    }
  }
}

TEST(Http, ErrorsAreIoErrorsWithErrno) {
  try {
    (void)File::open(Nginx::url + "/hf/nope.safetensors");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::io);
    EXPECT_EQ(e.os_error().value(), ENOENT);
    EXPECT_NE(std::string(e.what()).find("404"), std::string::npos);
  }
  // A malformed remote file is the same format error as a local one.
  try {
    (void)File::open(Nginx::url + "/bad/offsets_gap.safetensors");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.rule(), Rule::r5_layout);
  }
  // Nothing listens there: connection errors are retried, then reported.
  setenv("TLIO_HTTP_ATTEMPTS", "2", 1);
  EXPECT_THROW((void)HttpFile::open("http://127.0.0.1:" + std::to_string(free_port()) + "/x"), Error);
  unsetenv("TLIO_HTTP_ATTEMPTS");
}

}  // namespace
}  // namespace tlio::detail
