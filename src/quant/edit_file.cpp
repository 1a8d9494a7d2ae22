// quant/edit_file.cpp: metadata edits and keep/drop/rename as one atomic rewrite whose tensor
// bytes are copied in the kernel, or, when only the header changes and keeps its length, one
// write of the header in place.
#include <fcntl.h>
#include <fmt/core.h>
#include <simdjson.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <system_error>

#include "common/json_text.hpp"
#include "format/file_access.hpp"
#include "format/header_text.hpp"
#include "io/os_file.hpp"
#include "io/store.hpp"
#include "quant/rewrite_steps.hpp"
#include "quant/tensor_selection.hpp"
#include "tlio/edit.hpp"
#include "tlio/error.hpp"

namespace tlio {

using detail::quote_name;

namespace {

// "'a', 'b'" or "none": the keys a file has, for a message.
std::string key_list(const Metadata& meta) {
  std::string keys;
  for (const auto& entry : meta) keys += (keys.empty() ? "" : ", ") + quote_name(entry.first);
  return keys.empty() ? "none" : keys;
}

// `base` (the source's metadata, its tie records following the selection) with the edits.
Metadata edited_metadata(const Metadata& base, const File& src, const EditOptions& options) {
  Metadata meta = base;
  for (const std::string& key : options.delete_metadata) {
    if (options.set_metadata.contains(key))
      throw_invalid(fmt::format("metadata key {} is both set and deleted", quote_name(key)));
    if (meta.erase(key) == 0)
      throw_invalid(fmt::format("no metadata key {} to delete (the file has {})", quote_name(key),
                                key_list(src.metadata())));
  }
  for (const auto& [key, value] : options.set_metadata) {
    // The rewrite's writer would refuse these too; the in-place write must not get them.
    if (!simdjson::validate_utf8(key.data(), key.size()) ||
        !simdjson::validate_utf8(value.data(), value.size()))
      throw_invalid(
          fmt::format("metadata key {} or its value is not valid UTF-8", quote_name(key)));
    meta[key] = value;
  }
  return meta;
}

// The edited file's canonical header when the tensors keep their offsets (only names and
// metadata change) and it is exactly as long as the source's: then it can be written over the
// old one. nullopt otherwise.
std::optional<std::string> header_in_place(const File& src, const detail::SelectionPlan& plan,
                                           const Metadata& meta) {
  if (plan.tensors.size() != src.tensors().size()) return std::nullopt;
  std::vector<TensorInfo> out;
  out.reserve(plan.tensors.size());
  std::map<std::string_view, const TensorInfo*> source_of;
  for (const detail::SelectedTensor& p : plan.tensors) {
    TensorInfo t = *p.source;
    t.name = p.name;
    out.push_back(std::move(t));
    source_of.emplace(p.name, p.source);
  }
  detail::canonical_layout(out);
  for (const TensorInfo& t : out) {
    const TensorInfo* s = source_of.at(t.name);
    if (t.begin != s->begin || t.end != s->end) return std::nullopt;
  }
  std::string header = detail::canonical_header(meta, out);
  if (header.size() != src.header_size()) return std::nullopt;
  // What is written over the file must be a header the reader takes (rules 2-5).
  Header::parse(std::as_bytes(std::span(header)), src.header().data_size());
  return header;
}

// Writes `header` over the source's own in one write and syncs it. False (nothing written) when
// the file cannot be opened for writing or is no longer the one `src` read.
bool write_header_in_place(const File& src, const std::filesystem::path& path,
                           const std::string& header) {
  const int read_fd = detail::FileAccess::source(src).descriptor();
  if (read_fd < 0) return false;
  detail::Fd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (fd.get() < 0) return false;
  struct stat a {
  }, b{};
  if (::fstat(fd.get(), &a) != 0 || ::fstat(read_fd, &b) != 0 || a.st_dev != b.st_dev ||
      a.st_ino != b.st_ino || !S_ISREG(a.st_mode))
    return false;
  // The bytes on disk must still be the header that was parsed (no one edited it since).
  const std::vector<std::byte> before = src.raw_header();
  std::vector<std::byte> now(before.size());
  detail::pread_exact(fd.get(), 8, now, src.name());
  if (now != before) throw_io("changed while it was edited", src.name());
  if (std::memcmp(before.data(), header.data(), header.size()) == 0) return true;  // no change
  detail::pwrite_all(fd.get(), 8, std::as_bytes(std::span(header)), src.name());
  if (::fsync(fd.get()) != 0)
    throw_io("cannot sync the edited header", src.name(), {errno, std::system_category()});
  return true;
}

bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code ec;
  return std::filesystem::equivalent(a, b, ec);
}

// What an edit of `src` writes: the tensors chosen and named, and its report (counts, metadata).
struct EditPlan {
  detail::SelectionPlan selection;
  EditReport report;
};

EditPlan plan_edit(const File& src, const EditOptions& options, bool allow_empty) {
  EditPlan p;
  EditReport& report = p.report;
  report.metadata = edited_metadata(src.metadata(), src, options);  // its errors first
  p.selection = detail::plan_selection(src, options.tensors, allow_empty);
  const detail::SelectionPlan& plan = p.selection;
  if (plan.metadata != src.metadata())
    report.metadata = edited_metadata(plan.metadata, src, options);
  report.kept = plan.tensors.size();
  report.dropped = plan.dropped;
  report.renamed = plan.renamed;
  report.ties_removed = plan.ties_removed;
  report.ties_repointed = plan.ties_repointed;
  for (const detail::SelectedTensor& t : plan.tensors) report.data_bytes += t.source->byte_size();
  report.source_data_bytes = src.header().data_size();
  return p;
}

// The edited file into `w` (not committed): the tensors' bytes copied in the kernel.
void write_edit(const File& src, Writer& w, const EditPlan& p, const ProgressCallback& progress) {
  w.set_metadata(p.report.metadata);
  for (const detail::SelectedTensor& t : p.selection.tensors)
    w.declare(t.name, t.source->dtype, t.source->shape);
  std::vector<std::string_view> names, src_names;
  {
    std::map<std::string_view, std::string_view> source_name;
    for (const detail::SelectedTensor& t : p.selection.tensors)
      source_name.emplace(t.name, t.source->name);
    for (const TensorInfo& t : w.layout()) {
      names.push_back(t.name);
      src_names.push_back(source_name.at(t.name));
    }
  }
  uint64_t done = 0;
  w.copy_many_from(src, names, src_names, [&](uint64_t bytes) {
    done += bytes;
    if (progress) progress(done, p.report.data_bytes);
  });
}

}  // namespace

namespace detail {

EditReport edit_into(const File& src, Writer& w, const EditOptions& options, bool allow_empty) {
  const EditPlan p = plan_edit(src, options, allow_empty);
  write_edit(src, w, p, options.progress);
  return p.report;
}

}  // namespace detail

EditReport edit_file(const std::filesystem::path& src_path, const std::filesystem::path& dst,
                     const EditOptions& options) {
  const detail::Location where = detail::Location::parse(src_path.string());
  const bool stdin_source = where.is_standard_stream();
  const bool local =
      detail::store_of(where).local_node(where).has_value();  // can be edited in place
  if (dst.empty() && !local)
    throw_invalid(fmt::format("{} is not a local file: an edit of it needs a destination",
                              stdin_source ? "standard input" : where.display()));
  const File src = File::open(src_path, options.open);
  EditPlan p = plan_edit(src, options, false);

  const bool into_source = dst.empty() || same_file(src_path, dst);
  if (into_source && local)
    if (const std::optional<std::string> header =
            header_in_place(src, p.selection, p.report.metadata))
      if (write_header_in_place(src, src_path, *header)) {
        p.report.in_place = true;
        return p.report;
      }

  Writer w = Writer::to_file(dst.empty() ? src_path : dst);
  write_edit(src, w, p, options.progress);
  w.commit();
  return p.report;
}

}  // namespace tlio
