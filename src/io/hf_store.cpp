// io/hf_store.cpp: files of Hugging Face Hub repositories,
// hf://[models/|datasets/]ORG/REPO[@REVISION]/PATH. A file the local Hugging Face cache holds
// ($HF_HUB_CACHE: models--ORG--REPO/refs/REVISION names the commit, snapshots/COMMIT/PATH is
// the file) is read from there, as a local file, without a request; any other is read from
// $HF_ENDPOINT/[datasets/]ORG/REPO/resolve/REVISION/PATH by ranges, with the Hub token.
// HF_HUB_OFFLINE=1 never makes a request.
#include <fmt/core.h>

#include <filesystem>
#include <system_error>

#include "common/text.hpp"
#include "io/aws_sigv4.hpp"
#include "io/digest.hpp"
#include "io/http.hpp"
#include "io/os_file.hpp"
#include "io/store.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

namespace {

std::filesystem::path hf_home() {
  if (const auto h = env_value("HF_HOME")) return *h;
  if (const auto x = env_value("XDG_CACHE_HOME")) return std::filesystem::path(*x) / "huggingface";
  return std::filesystem::path(env_value("HOME").value_or("")) / ".cache" / "huggingface";
}

// As huggingface_hub reads its boolean variables: 1, ON, YES, TRUE in any case.
bool offline() {
  const auto v = env_value("HF_HUB_OFFLINE");
  if (!v) return false;
  const std::string l = ascii_lower(*v);
  return l == "1" || l == "on" || l == "yes" || l == "true";
}

// %XX sequences decoded (a revision such as refs%2Fpr%2F1).
std::string percent_decode(std::string_view s) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

struct HubFile {
  std::string kind;      // "models" or "datasets"
  std::string repo;      // "ORG/REPO"
  std::string revision;  // "main", a branch, a tag or a commit
  std::string path;      // inside the repository; "" for its root
};

HubFile parse_hub_url(std::string_view text) {
  std::string_view rest = text.substr(text.find("://") + 3);
  HubFile f;
  f.kind = "models";
  for (const std::string_view kind : {"models/", "datasets/"})
    if (rest.starts_with(kind)) {
      f.kind = std::string(kind.substr(0, kind.size() - 1));
      rest.remove_prefix(kind.size());
    }
  const size_t org_end = rest.find('/');
  if (org_end == std::string_view::npos || org_end == 0)
    throw_invalid(
        fmt::format("{} names no repository (hf://ORG/REPO[@REVISION]/PATH)", std::string(text)));
  size_t repo_end = std::min(rest.find('/', org_end + 1), rest.size());
  // A pull request's revision may be written as it is named: @refs/pr/N (as HfFileSystem).
  if (const std::string_view head = rest.substr(0, repo_end);
      head.ends_with("@refs") && rest.substr(repo_end).starts_with("/pr/")) {
    const size_t number_end = std::min(rest.find('/', repo_end + 4), rest.size());
    repo_end = number_end;
  }
  std::string_view repo = rest.substr(0, repo_end);
  f.path = repo_end < rest.size() ? std::string(rest.substr(repo_end + 1)) : std::string();
  const size_t at = repo.find('@');
  f.revision = at == std::string_view::npos ? "main" : percent_decode(repo.substr(at + 1));
  repo = repo.substr(0, at);
  // The revision names a file under refs/ of the cache: it may not climb out of it.
  if (f.revision.front() == '/' || f.revision.find("..") != std::string::npos)
    throw_invalid(fmt::format("'{}' is not a revision", f.revision));
  if (repo.size() <= org_end + 1 || f.revision.empty())
    throw_invalid(
        fmt::format("{} names no repository (hf://ORG/REPO[@REVISION]/PATH)", std::string(text)));
  for (const char c : repo)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
          c == '_' || c == '.' || c == '/'))
      throw_invalid(fmt::format("'{}' is not a Hub repository name", std::string(repo)));
  // The path is joined to a cache folder: no segment may climb out of it, none may be absolute.
  for (size_t start = 0; start <= f.path.size();) {
    const size_t end = std::min(f.path.find('/', start), f.path.size());
    const std::string_view segment = std::string_view(f.path).substr(start, end - start);
    if (segment == ".." || segment == "." || (segment.empty() && end < f.path.size()))
      throw_invalid(fmt::format("{}: the path inside the repository has an empty, '.' or '..' part",
                                std::string(text)));
    start = end + 1;
  }
  f.repo = std::string(repo);
  return f;
}

bool is_commit(std::string_view rev) {
  if (rev.size() != 40) return false;
  for (const char c : rev)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// The file in the local cache, if it is there (huggingface_hub's layout). `commit` is set to
// the commit the cache's ref names, when it names one, even if the file is not there.
std::optional<std::filesystem::path> cached(const HubFile& f, std::string* commit_out = nullptr) {
  const auto cache_setting = env_value("HF_HUB_CACHE");
  const std::filesystem::path cache =
      cache_setting ? std::filesystem::path(*cache_setting) : hf_home() / "hub";
  std::string folder = f.kind + "--" + f.repo;
  for (size_t p; (p = folder.find('/')) != std::string::npos;) folder.replace(p, 1, "--");
  const std::filesystem::path repo = cache / folder;
  std::string commit = f.revision;
  if (!is_commit(commit)) {
    std::error_code ec;
    const std::filesystem::path ref = repo / "refs" / f.revision;
    if (!std::filesystem::is_regular_file(ref, ec)) return std::nullopt;
    commit = std::string(trim_blanks(read_text_file(ref)));
    if (!is_commit(commit)) return std::nullopt;
  }
  if (commit_out) *commit_out = commit;
  const std::filesystem::path file = repo / "snapshots" / commit / f.path;
  std::error_code ec;
  if (f.path.empty() || !std::filesystem::is_regular_file(file, ec))
    return std::nullopt;  // follows the blob link
  return file;
}

std::string token(const SourceOptions& options) {
  if (!options.token.empty()) return options.token;
  if (const auto t = env_value("HF_TOKEN")) return *t;
  const auto token_path = env_value("HF_TOKEN_PATH");
  const std::filesystem::path file =
      token_path ? std::filesystem::path(*token_path) : hf_home() / "token";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) return {};
  return std::string(trim_blanks(read_text_file(file)));
}

// The file's URL at the Hub: at the commit the cache's ref names, when it names one, so that a
// folder read partly from the cache and partly from the Hub is of one commit.
std::string resolve_url(HubFile f) {
  std::string commit;
  (void)cached(f, &commit);
  if (!commit.empty()) f.revision = commit;
  std::string endpoint = env_value("HF_ENDPOINT").value_or("https://huggingface.co");
  while (endpoint.ends_with('/')) endpoint.pop_back();
  return fmt::format("{}/{}{}/resolve/{}/{}", endpoint, f.kind == "datasets" ? "datasets/" : "",
                     f.repo, aws_uri_encode(f.revision, false), aws_uri_encode(f.path, true));
}

[[noreturn]] void offline_miss(const Location& where) {
  throw_io("not in the local Hugging Face cache, and HF_HUB_OFFLINE is set", where.display(),
           std::error_code(ENOENT, std::generic_category()));
}

HttpOptions hub_options(const Location& where, const SourceOptions& options) {
  HttpOptions o;
  o.token = token(options);
  o.warning = options.warning;
  o.display = where.display();
  return o;
}

// A file of the cache, which names the blobs of LFS files after their SHA-256 (the snapshot's
// entry links to blobs/SHA256): that is the digest the Hub published for it.
class CachedSource final : public ByteSource {
 public:
  CachedSource(std::shared_ptr<const ByteSource> file, std::string sha256)
      : ByteSource(file->name(), file->size()), file_(std::move(file)), sha256_(std::move(sha256)) {
    set_memory(file_->memory(), file_->memory_writable());
  }
  int descriptor() const noexcept override { return file_->descriptor(); }
  void read(uint64_t offset, std::span<std::byte> dst) const override { file_->read(offset, dst); }
  void read_ranges(std::span<const ReadRange> ranges, unsigned threads) const override {
    file_->read_ranges(ranges, threads);
  }
  PublishedDigest published_sha256() const override {
    return {sha256_, "the Hugging Face cache's blob name"};
  }

 private:
  std::shared_ptr<const ByteSource> file_;
  std::string sha256_;
};

std::shared_ptr<const ByteSource> cached_source(const std::filesystem::path& file,
                                                const SourceOptions& options) {
  std::shared_ptr<const ByteSource> source = open_source(Location::parse(file.string()), options);
  std::error_code ec;
  const std::string blob = std::filesystem::canonical(file, ec).filename().string();
  if (ec || !is_sha256_hex(blob) || ascii_lower(blob) != blob)
    return source;  // a git object (named by its SHA-1), or a cache laid out by hand
  return std::make_shared<CachedSource>(std::move(source), blob);
}

class HubStore final : public Store {
 public:
  std::shared_ptr<const ByteSource> open(const Location& where,
                                         const SourceOptions& options) const override {
    const HubFile f = parse_hub_url(where.text());
    if (const auto file = cached(f)) return cached_source(*file, options);
    if (offline()) offline_miss(where);
    return http_source(HttpFile::open(resolve_url(f), hub_options(where, options)),
                       where.display());
  }

  std::optional<std::string> read_small(const Location& where,
                                        const SourceOptions& options) const override {
    const HubFile f = parse_hub_url(where.text());
    if (const auto file = cached(f)) return read_text_file(*file);
    if (offline()) return std::nullopt;
    return read_small_http(resolve_url(f), hub_options(where, options));
  }

  bool exists(const Location& where, const SourceOptions& options) const override {
    const HubFile f = parse_hub_url(where.text());
    if (cached(f)) return true;
    if (offline()) return false;
    try {
      HttpFile::open(resolve_url(f), hub_options(where, options), 1);
      return true;
    } catch (const Error& e) {
      if (e.os_error() == std::errc::no_such_file_or_directory) return false;
      throw;
    }
  }

  std::optional<bool> is_directory(const Location& where) const override {
    const std::string& text = where.text();
    if (text.ends_with('/') || parse_hub_url(text).path.empty()) return true;
    if (text.ends_with(".safetensors")) return false;
    return std::nullopt;
  }

  void check_directory(const Location& where) const override { (void)parse_hub_url(where.text()); }

  std::string join(const std::string& dir, std::string_view name) const override {
    return join_key(dir, name);
  }

  std::string display(const std::string& text) const override { return text; }
};

}  // namespace

const Store& hf_store() noexcept {
  static const HubStore store;
  return store;
}

}  // namespace tlio::detail
