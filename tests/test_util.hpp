// tests/test_util.hpp: test data paths, file and hex helpers, temporary folders and whether
// they take O_DIRECT, manifest loading.
#pragma once

#include <fcntl.h>
#include <simdjson.h>
#include <unistd.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace tlio::test {

// tests/data in the source tree; defined in test_data_dir.cpp, the one object that holds the
// checkout's path (so the other test objects compile alike in every clone and hit ccache).
std::filesystem::path data_dir();

inline std::vector<std::byte> read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(c.size());
  for (size_t i = 0; i < c.size(); ++i) out[i] = static_cast<std::byte>(c[i]);
  return out;
}

inline void write_bytes(const std::filesystem::path& p, const std::vector<std::byte>& b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

inline std::vector<std::byte> from_hex(std::string_view hex) {
  std::vector<std::byte> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<std::byte>(std::stoi(std::string(hex.substr(2 * i, 2)), nullptr, 16));
  return out;
}

inline std::vector<std::byte> to_bytes(std::string_view s) {
  std::vector<std::byte> out(s.size());
  for (size_t i = 0; i < s.size(); ++i) out[i] = static_cast<std::byte>(s[i]);
  return out;
}

/// A file image: 8-byte little-endian N, the header text as given, then `data`.
inline std::vector<std::byte> make_file(std::string_view header, std::vector<std::byte> data = {}) {
  std::vector<std::byte> out(8);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<std::byte>((n >> (8 * i)) & 0xFF);
  auto h = to_bytes(header);
  out.insert(out.end(), h.begin(), h.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

/// A fresh temporary directory, removed with the object.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tlio-test-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

/// Whether files in `dir` open with O_DIRECT (tmpfs before Linux 6.6 and some FUSE mounts
/// refuse it).
inline bool o_direct_works(const std::filesystem::path& dir) {
  const auto probe = dir / "o_direct_probe";
  const int fd = ::open(probe.c_str(), O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
  if (fd >= 0) ::close(fd);
  std::error_code ec;
  std::filesystem::remove(probe, ec);
  return fd >= 0;
}

/// Parsed MANIFEST.json of a golden folder (kept alive with its parser).
struct Manifest {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  explicit Manifest(const std::filesystem::path& p) {
    auto err = parser.load(p.string()).get(root);
    if (err) throw std::runtime_error("cannot parse " + p.string());
  }
  simdjson::dom::array cases() { return root["cases"].get_array().value(); }
};

}  // namespace tlio::test
