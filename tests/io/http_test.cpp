// Tests for io/http.hpp and File::open of URLs against Debian's nginx, started here on
// 127.0.0.1 with a generated config (so the HTTP code also runs under the sanitizers).
#include "io/http.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "io/curl_library.hpp"
#include "test_util.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/model.hpp"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"  // C's tl_tensor_info names a struct and a function
#include "tlio/tlio.h"
#pragma GCC diagnostic pop
#include "tlio/writer.hpp"

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

// nginx for the whole test program, serving a folder that links tests/data's hf, bad and
// models folders and holds files the tests write (www()); requests go to access_log().
class Nginx : public ::testing::Environment {
 public:
  static inline std::string url;
  static inline std::filesystem::path www, access_log;

  void SetUp() override {
    port_ = free_port();
    conf_ = dir_ / "nginx.conf";
    www = dir_ / "www";
    access_log = dir_ / "access.log";
    std::filesystem::create_directories(www);
    for (const char* sub : {"hf", "bad", "models"})
      std::filesystem::create_directory_symlink(test::data_dir() / sub, www / sub);
    const std::string tmp = dir_.path().string();
    std::ofstream(conf_) << (::geteuid() == 0 ? "user root;\n" : "") << "worker_processes 1;\n"
                         << "error_log " << (dir_ / "error.log").string() << ";\npid "
                         << (dir_ / "nginx.pid").string()
                         << ";\nevents { worker_connections 16; }\n"
                         << "http { log_format ranges '$status $body_bytes_sent $http_range';\n"
                         << "  access_log " << access_log.string()
                         << " ranges;\n  client_body_temp_path " << tmp << "; proxy_temp_path "
                         << tmp << "; fastcgi_temp_path " << tmp << "; uwsgi_temp_path " << tmp
                         << "; scgi_temp_path " << tmp << ";\n  server { listen 127.0.0.1:" << port_
                         << "; root " << www.string() << "; } }\n";
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG,
              SIGTERM);  // nginx goes when this test program does, however it ends
      const std::string prefix = dir_.path().string(), conf = conf_.string(),
                        err = (dir_ / "error.log").string();
      ::execl("/usr/sbin/nginx", "nginx", "-p", prefix.c_str(), "-c", conf.c_str(), "-e",
              err.c_str(), "-g", "daemon off;", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    for (int i = 0; i < 200 && !listening(port_); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    ASSERT_TRUE(listening(port_))
        << "nginx did not start (Debian's nginx-light: scripts/install-deps.sh)";
    url = "http://127.0.0.1:" + std::to_string(port_);
  }
  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  // The access log's lines ("status bytes range"), as far as nginx has written them.
  static std::vector<std::string> log_lines() {
    std::vector<std::string> lines;
    std::ifstream in(access_log);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
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
  EXPECT_TRUE(std::equal(middle.begin(), middle.end(),
                         local.begin() + static_cast<ptrdiff_t>(local.size() / 2)));
  EXPECT_THROW(f->read(local.size() - 10, middle), Error);  // past the end
}

TEST(Http, FileOpenOfAUrlReadsAsTheLocalFile) {
  for (const char* name :
       {"mixed_all_dtypes.safetensors", "zero_size.safetensors", "worked_example.safetensors"}) {
    const File remote = File::open(Nginx::url + "/hf/" + name);
    const File local = File::open(test::data_dir() / "hf" / name);
    EXPECT_TRUE(curl_library_loaded());  // loaded by the first URL
    EXPECT_EQ(remote.backend(), Backend::http);
    ASSERT_EQ(remote.tensors().size(), local.tensors().size());
    EXPECT_EQ(remote.raw_header(), local.raw_header());
    EXPECT_EQ(remote.is_canonical(), local.is_canonical());
    for (const TensorInfo& t : local.tensors()) {
      const TensorView rv = remote.view(t.name),
                       lv = local.view(t.name);  // remote views own their bytes
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
  EXPECT_THROW((void)HttpFile::open("http://127.0.0.1:" + std::to_string(free_port()) + "/x"),
               Error);
  unsetenv("TLIO_HTTP_ATTEMPTS");
}

TEST(Http, UrlHelpers) {
  EXPECT_EQ(url_join("http://h/d", "x.json"), "http://h/d/x.json");
  EXPECT_EQ(url_join("http://h/d/", "x.json"), "http://h/d/x.json");
  EXPECT_EQ(url_join("https://h/d/?sig=1#f", "x"), "https://h/d/x?sig=1#f");
  EXPECT_EQ(url_join("http://h/d/", "a?b #c.json"), "http://h/d/a%3Fb%20%23c.json");
  EXPECT_EQ(url_join("http://h/d/", "model-00001-of-00002.safetensors"),
            "http://h/d/model-00001-of-00002.safetensors");
  EXPECT_TRUE(url_ends_with_slash("http://h/d/") && url_ends_with_slash("http://h/d/?q=1"));
  EXPECT_FALSE(url_ends_with_slash("http://h/d") || url_ends_with_slash("http://h/d?q=/"));
  EXPECT_EQ(url_for_messages("https://user:pw@h:8/x@y"), "https://h:8/x@y");
  EXPECT_EQ(url_for_messages("http://h/a@b"), "http://h/a@b");
  EXPECT_EQ(url_for_messages("https://u:p@h/x.safetensors?X-Amz-Signature=abc&download&t=1#frag"),
            "https://h/x.safetensors?X-Amz-Signature=...&download&t=...");
}

TEST(Http, ResponseHeadersAndContentRanges) {
  HttpResponse r;
  read_response_header("HTTP/1.1 302 Found\r\n", r);
  read_response_header("ETag: \"old\"\r\n", r);
  EXPECT_EQ(r.status, 302);
  read_response_header("HTTP/2 206 \r\n", r);  // after a redirect: the new answer only
  EXPECT_EQ(r.status, 206);
  EXPECT_EQ(r.etag, "");
  read_response_header("content-RANGE:  bytes 0-9/10 \r\n", r);
  read_response_header("Content-Encoding: GZIP\r\n", r);
  read_response_header("Content-Length: 10\r\n", r);
  read_response_header("Retry-After: Wed, 21 Oct 2026 07:28:00 GMT\r\n", r);  // a date: not a delay
  read_response_header("no colon here\r\n", r);
  EXPECT_EQ(r.content_range, "bytes 0-9/10");
  EXPECT_EQ(r.content_encoding, "gzip");
  EXPECT_EQ(r.content_length, 10u);
  EXPECT_FALSE(r.retry_after.has_value());
  HttpResponse bad;
  read_response_header("HTTP/1.1 abc\r\n", bad);
  EXPECT_EQ(bad.status, 0);

  const auto ok = parse_content_range("bytes 5-9/10");
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->first, 5u);
  EXPECT_EQ(ok->last, 9u);
  EXPECT_EQ(ok->total, 10u);
  for (const char* text :
       {"bytes 5-4/10", "bytes 0-10/10", "bytes 0-9/*", "bytes */10", "bytes -9/10",
        "bytes 0-9/10x", "Bytes 0-9/10", "bytes 0+9/10", "bytes 99999999999999999999-1/2", ""})
    EXPECT_FALSE(parse_content_range(text).has_value()) << text;
}

TEST(Http, ReadRangesGivesEveryRangeItsBytes) {
  const auto local = test::read_bytes(test::data_dir() / "hf" / "many_1000.safetensors");
  auto f = HttpFile::open(Nginx::url + "/hf/many_1000.safetensors");
  // Touching, overlapping-free ranges out of order, a gap, an empty one, one at the very end.
  const std::vector<std::pair<uint64_t, uint64_t>> spans = {
      {5000, 300}, {100, 50}, {150, 4000}, {4150, 850}, {9000, 0}, {local.size() - 7, 7}};
  std::vector<std::vector<std::byte>> out;
  std::vector<HttpRange> ranges;
  for (const auto& [off, size] : spans) out.emplace_back(size);
  for (size_t i = 0; i < spans.size(); ++i)
    ranges.push_back({spans[i].first, out[i].data(), spans[i].second});
  f->read_ranges(ranges);
  for (size_t i = 0; i < spans.size(); ++i)
    EXPECT_TRUE(std::equal(out[i].begin(), out[i].end(),
                           local.begin() + static_cast<ptrdiff_t>(spans[i].first)))
        << "range " << i;
  const HttpRange past{local.size() - 3, out[0].data(), 4};
  EXPECT_THROW(f->read_ranges({&past, 1}), Error);
}

TEST(Http, LongRunsSplitOverSeveralRequestsAndCopiesLandInPlace) {
  // 40 MiB in two touching tensors: read_many asks for them as kHttpRequestBytes requests
  // (several in flight), not one per tensor, not one 40 MiB request.
  std::vector<float> big(10u << 20);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i % 65521);
  const auto bytes = std::as_bytes(std::span(big));
  Writer w = Writer::to_file(Nginx::www / "big.safetensors");
  w.declare("a", Dtype::F32, Shape{big.size() / 2});
  w.declare("b", Dtype::F32, Shape{big.size() / 2});
  w.write("a", bytes.first(bytes.size() / 2));
  w.write("b", bytes.last(bytes.size() / 2));
  w.commit();
  const File remote = File::open(Nginx::url + "/big.safetensors");
  std::vector<std::byte> a(bytes.size() / 2), b(bytes.size() / 2);
  const size_t before = Nginx::log_lines().size();
  const TensorTarget targets[] = {{"b", b}, {"a", a}};
  remote.read_many(targets);
  EXPECT_TRUE(std::equal(a.begin(), a.end(), bytes.begin()));
  EXPECT_TRUE(std::equal(b.begin(), b.end(), bytes.begin() + static_cast<ptrdiff_t>(a.size())));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // nginx logs after answering
  const auto lines = Nginx::log_lines();
  EXPECT_EQ(lines.size() - before, (bytes.size() + kHttpRequestBytes - 1) / kHttpRequestBytes);
  // A copy from the URL into a file writer: the same bytes as the local file's.
  test::TempDir dir;
  rewrite_canonical(remote, dir / "copy.safetensors");
  EXPECT_EQ(test::read_bytes(dir / "copy.safetensors"),
            test::read_bytes(Nginx::www / "big.safetensors"));
  // Into a memory writer: straight into its buffer.
  Writer m = Writer::to_memory();
  m.declare("a", Dtype::F32, Shape{big.size() / 2});
  const std::string_view names[] = {"a"};
  uint64_t copied = 0;
  m.copy_many_from(remote, names, {}, [&](uint64_t n) { copied += n; });
  m.commit();
  EXPECT_EQ(copied, a.size());
  const File back = File::from_bytes(m.take_bytes());
  const auto got = back.view("a").bytes();
  EXPECT_TRUE(std::equal(got.begin(), got.end(), a.begin(), a.end()));
}

TEST(Http, ModelDirectoriesByUrl) {
  for (const std::string model : {"bigram", "sharded"}) {
    const Model local = Model::open(test::data_dir() / "models" / model);
    for (const std::string& url :
         {Nginx::url + "/models/" + model + "/", Nginx::url + "/models/" + model}) {
      EXPECT_TRUE(is_model_directory(url));
      const Model remote = Model::open(url);
      EXPECT_EQ(remote.config().arch, local.config().arch);
      EXPECT_EQ(remote.file_names(), local.file_names());
      EXPECT_EQ(remote.sharded(), local.sharded());
      ASSERT_EQ(remote.tensor_names(), local.tensor_names());
      for (std::string_view name : local.tensor_names()) {
        const TensorView rv = remote.view(name),
                         lv = local.view(name);  // remote views own their bytes
        const auto a = rv.bytes(), b = lv.bytes();
        EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << model << " " << name;
      }
      remote.check();
    }
  }
  EXPECT_FALSE(is_model_directory(Nginx::url + "/hf/worked_example.safetensors"));  // no request
  EXPECT_FALSE(is_model_directory(Nginx::url + "/hf/nothing"));  // no config.json under it
  try {
    (void)Model::open(Nginx::url + "/hf/");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.rule(), Rule::model);
    EXPECT_NE(std::string(e.what()).find("config.json"), std::string::npos);
  }
}

TEST(Http, MergeOfAShardedDirectoryUrlEqualsTheLocalMerge) {
  test::TempDir dir;
  merge_shards(Nginx::url + "/models/sharded/", dir / "remote.safetensors");
  merge_shards(test::data_dir() / "models" / "sharded", dir / "local.safetensors");
  EXPECT_EQ(test::read_bytes(dir / "remote.safetensors"),
            test::read_bytes(dir / "local.safetensors"));
}

TEST(Http, CApiOpensUrls) {
  const std::string url = Nginx::url + "/hf/worked_example.safetensors";
  tl_open_options o;
  tl_open_options_init(&o);
  o.token = "c-token";
  tl_file* f = nullptr;
  ASSERT_EQ(tl_open_with(url.c_str(), &o, &f), TL_OK) << tl_last_error();
  const File local = File::open(test::data_dir() / "hf" / "worked_example.safetensors");
  ASSERT_EQ(tl_tensor_count(f), local.tensors().size());
  std::vector<std::vector<std::byte>> bufs;
  std::vector<size_t> indices, sizes;
  std::vector<void*> dsts;
  for (size_t i = 0; i < tl_tensor_count(f); ++i) {
    struct tl_tensor_info info;
    ASSERT_EQ(tl_tensor_info(f, i, &info), TL_OK);
    EXPECT_EQ(info.data, nullptr);  // nothing mapped: read the bytes
    bufs.emplace_back(info.byte_size);
    indices.push_back(i);
    sizes.push_back(info.byte_size);
  }
  for (auto& b : bufs) dsts.push_back(b.data());
  ASSERT_EQ(tl_tensor_read_many(f, indices.data(), dsts.data(), sizes.data(), indices.size()),
            TL_OK);
  for (size_t i = 0; i < bufs.size(); ++i) {
    struct tl_tensor_info info;
    tl_tensor_info(f, i, &info);
    const auto want = local.view(info.name).bytes();
    EXPECT_TRUE(std::equal(bufs[i].begin(), bufs[i].end(), want.begin(), want.end()));
  }
  tl_close(f);

  const std::string missing = Nginx::url + "/hf/nope.safetensors";
  EXPECT_EQ(tl_open(missing.c_str(), &f), TL_EIO);
  EXPECT_EQ(tl_last_error_errno(), ENOENT);

  tl_model* m = nullptr;
  const std::string dir = Nginx::url + "/models/sharded/";
  ASSERT_EQ(tl_model_open_with(dir.c_str(), &o, &m), TL_OK) << tl_last_error();
  EXPECT_EQ(tl_model_file_count(m), 4u);
  EXPECT_STREQ(tl_model_arch(m), "tiny");
  tl_model_close(m);
  o.struct_size = 8;
  EXPECT_EQ(tl_open_with(url.c_str(), &o, &f), TL_EINVAL);
}

}  // namespace
}  // namespace tlio::detail
