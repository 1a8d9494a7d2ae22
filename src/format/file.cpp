// format/file.cpp: File (open, validate, hand out views) and TensorView.
#include "tlio/file.hpp"

#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "common/checked.hpp"
#include "common/json_text.hpp"
#include "format/file_access.hpp"
#include "format/header_parse.hpp"
#include "format/header_text.hpp"
#include "format/slice.hpp"
#include "io/os_file.hpp"
#include "io/store.hpp"

namespace tlio {

static_assert(kDirectAlignment == detail::kDirectAlign,
              "the public alignment is the one reads use");

struct detail::FileState {
  std::string name;
  Backend backend = Backend::mmap;
  std::shared_ptr<const detail::ByteSource> source;
  std::vector<std::byte> header_bytes;  // the header as read when not in memory: read once
  uint64_t header_size = 0;
  Header header;

  // The whole file when it is in memory, else empty.
  std::span<const std::byte> memory() const noexcept { return source->memory(); }
  uint64_t data_start() const { return 8 + header_size; }
};

namespace {

// Runs `fn`, attributing any tlio::Error it throws to `source`.
template <class Fn>
auto attributed(const std::string& source, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const Error& e) {
    throw e.with_source(source);
  }
}

// Validates the file (rules 1-5): in place when it is in memory, else read through the source
// (the header's bytes kept for raw_header()).
void validate(detail::FileState& s) {
  const detail::ByteSource& src = *s.source;
  const std::span<const std::byte> memory = src.memory();
  const uint64_t file_size = src.size();
  if (!memory.empty() || file_size == 0) {
    s.header_size = detail::read_header_length(
        memory.first(std::min(detail::kSniffBytes, memory.size())), file_size);
    const uint64_t data_size = file_size - 8 - s.header_size;
    s.header = detail::parse_header(memory.subspan(8, static_cast<size_t>(s.header_size)),
                                    data_size, data_size >= detail::kJsonPadding);
    return;
  }
  std::byte prefix[detail::kSniffBytes] = {};
  const auto prefix_size = static_cast<size_t>(std::min<uint64_t>(sizeof prefix, file_size));
  src.read(0, {prefix, prefix_size});
  s.header_size = detail::read_header_length({prefix, prefix_size}, file_size);
  std::vector<std::byte> json(static_cast<size_t>(s.header_size) + detail::kJsonPadding);
  src.read(8, std::span(json).first(s.header_size));
  s.header = detail::parse_header(std::span(json).first(s.header_size),
                                  file_size - 8 - s.header_size, true);
  json.resize(static_cast<size_t>(s.header_size));
  s.header_bytes = std::move(json);
}

File from_source(std::shared_ptr<const detail::ByteSource> source, Backend backend) {
  auto s = std::make_shared<detail::FileState>();
  s->name = source->name();
  s->backend = backend;
  s->source = std::move(source);
  attributed(s->name, [&] { validate(*s); });
  return detail::FileAccess::make(std::move(s));
}

detail::SourceOptions::Access access_for(Backend backend) {
  switch (backend) {
    case Backend::pread:
      return detail::SourceOptions::Access::read;
    case Backend::direct:
      return detail::SourceOptions::Access::direct;
    case Backend::mmap_private:
      return detail::SourceOptions::Access::map_private;
    default:
      return detail::SourceOptions::Access::map_shared;
  }
}

}  // namespace

detail::SourceOptions detail::source_options(const OpenOptions& options) {
  return {
      .access = access_for(options.backend), .token = options.token, .warning = options.warning};
}

File detail::FileAccess::make(std::shared_ptr<const FileState> state) {
  return File(std::move(state));
}

const detail::ByteSource& detail::FileAccess::source(const File& f) noexcept {
  return *f.state_->source;
}

namespace {

// A stream ("-": standard input; a named pipe or character device given by path), read once into
// an unnamed temporary file. The header is checked as soon as it has arrived (a bad one ends the
// read there), the data is read up to where the header says it ends, and input that goes on past
// it is refused. `what` names the stream in messages ("standard input").
std::shared_ptr<const detail::ByteSource> stream_source(int fd, const std::string& name,
                                                        const std::string& what,
                                                        const OpenOptions& options) {
  detail::Fd spool = detail::unnamed_temp_file(name);
  std::byte prefix[detail::kSniffBytes] = {};
  const size_t got = detail::read_stream(fd, prefix, name);
  const uint64_t header_size =
      detail::read_header_length({prefix, got}, got < sizeof prefix ? got : UINT64_MAX);
  std::vector<std::byte> head(static_cast<size_t>(8 + header_size) + detail::kJsonPadding);
  std::memcpy(head.data(), prefix, got);
  const uint64_t head_size = 8 + header_size;
  if (got < head_size) {
    const size_t more = detail::read_stream(
        fd, std::span(head).subspan(got, static_cast<size_t>(head_size - got)), name);
    if (got + more < head_size)
      throw_format(Rule::r1_length, {},
                   fmt::format("{} ends at {} bytes, inside the {}-byte header", what, got + more,
                               header_size),
                   got + more);
  }
  const Header header = detail::parse_header(
      std::span(head).subspan(8, static_cast<size_t>(header_size)), detail::kDataSizeUnknown, true);
  const std::optional<uint64_t> whole = detail::checked_add(head_size, header.data_size());
  if (!whole)
    throw_format(Rule::r5_layout, {}, "the header describes more than 2^64 bytes", head_size);
  const uint64_t total = *whole;
  const auto too_long = [&] {
    throw_format(Rule::r5_layout, {},
                 fmt::format("{} goes on past the {} bytes its header describes", what, total),
                 total);
  };
  uint64_t at = std::max<uint64_t>(got, head_size);  // bytes read so far (a short header: data too)
  if (at > total) too_long();
  detail::pwrite_all(spool.get(), 0, std::span(head).first(static_cast<size_t>(at)), name);
  std::vector<std::byte> buf(
      static_cast<size_t>(std::clamp<uint64_t>(total - at, 1, uint64_t{8} << 20)));
  while (at < total) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), total - at));
    const size_t n = detail::read_stream(fd, std::span(buf).first(want), name);
    detail::pwrite_all(spool.get(), at, std::span(buf).first(n), name);
    at += n;
    if (n < want) break;  // ended early: the file's own checks say it is truncated
  }
  std::byte extra;
  if (at == total && detail::read_stream(fd, {&extra, 1}, name) == 1) too_long();
  return detail::descriptor_source(std::move(spool), name, access_for(options.backend));
}

// A local node that is a stream rather than a file: a named pipe (mkfifo, <(...)) or a character
// device (/dev/stdin on a pipe). Mapping or sizing one would see 0 bytes.
bool is_stream_node(const std::filesystem::path& node) {
  struct stat st {};
  return ::stat(node.c_str(), &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode));
}

}  // namespace

File detail::open_file(const Location& where, const OpenOptions& options) {
  if (where.is_standard_stream())
    return from_source(
        attributed(
            "<stdin>",
            [&] { return stream_source(STDIN_FILENO, "<stdin>", "standard input", options); }),
        options.backend);
  if (const std::optional<std::filesystem::path> node = store_of(where).local_node(where);
      node && is_stream_node(*node)) {
    const std::string& name = where.display();
    return from_source(attributed(name,
                                  [&] {
                                    const Fd stream = open_read(*node);
                                    return stream_source(stream.get(), name, "the stream " + name,
                                                         options);
                                  }),
                       options.backend);
  }
  std::shared_ptr<const ByteSource> source =
      attributed(where.display(), [&] { return open_source(where, source_options(options)); });
  // A remote file is read by ranges, whatever backend was asked for.
  const Backend backend = source->batches_ranges() ? Backend::http : options.backend;
  return from_source(std::move(source), backend);
}

File::File(std::shared_ptr<const detail::FileState> state) : state_(std::move(state)) {}
File::File(File&&) noexcept = default;
File& File::operator=(File&&) noexcept = default;
File::~File() = default;

File File::open(const std::filesystem::path& path, OpenOptions options) {
  return detail::open_file(detail::Location::parse(path.native()), options);
}

File File::from_buffer(std::span<const std::byte> bytes, std::string name) {
  return from_source(detail::borrowed_memory_source(bytes, std::move(name)), Backend::mmap);
}

File File::from_bytes(std::vector<std::byte> bytes, std::string name) {
  return from_source(detail::owned_memory_source(std::move(bytes), std::move(name)), Backend::mmap);
}

const Header& File::header() const& noexcept { return state_->header; }
const std::string& File::name() const& noexcept { return state_->name; }
Backend File::backend() const noexcept { return state_->backend; }
bool File::views_in_memory() const noexcept { return !state_->memory().empty(); }
uint64_t File::file_size() const noexcept { return state_->source->size(); }
uint64_t File::header_size() const noexcept { return state_->header_size; }
int File::native_handle() const noexcept { return state_->source->descriptor(); }

std::span<const std::byte> File::mapped_data() const noexcept {
  if (state_->memory().empty()) return {};
  return state_->memory().subspan(static_cast<size_t>(state_->data_start()));
}

std::vector<std::byte> File::raw_header() const {
  if (state_->memory().empty()) return state_->header_bytes;
  const auto header = state_->memory().subspan(8, static_cast<size_t>(state_->header_size));
  return {header.begin(), header.end()};
}

bool File::is_canonical() const {
  std::vector<TensorInfo> layout = tensors();
  detail::canonical_layout(layout);
  std::string text = detail::canonical_header(metadata(), layout);
  std::vector<std::byte> raw = raw_header();
  return text.size() == raw.size() &&
         std::equal(text.begin(), text.end(), raw.begin(),
                    [](char c, std::byte b) { return static_cast<std::byte>(c) == b; });
}

void File::read_data(uint64_t offset, std::span<std::byte> dst) const {
  const detail::FileState& s = *state_;
  auto end = detail::checked_add(offset, dst.size());
  if (!end || *end > s.header.data_size())
    throw_invalid(fmt::format("read of {} bytes at data offset {} is past the data ({} bytes)",
                              dst.size(), offset, s.header.data_size()));
  attributed(s.name, [&] { s.source->read(s.data_start() + offset, dst); });
}

TensorView File::view(std::string_view name) const {
  const TensorInfo& info =
      attributed(state_->name, [&]() -> const TensorInfo& { return state_->header.at(name); });
  if (!state_->memory().empty() || info.byte_size() == 0) {
    std::span<const std::byte> bytes;
    if (info.byte_size() != 0)
      bytes = state_->memory().subspan(static_cast<size_t>(state_->data_start() + info.begin),
                                       static_cast<size_t>(info.byte_size()));
    // Writable where the memory is this process's own: a private mapping or from_bytes (and
    // the empty views of pread files).
    const bool writable = state_->memory().empty() || state_->source->memory_writable();
    return TensorView(state_, info, bytes, writable);
  }
  // Not in memory (pread, remote): the view owns a copy, and keeps the state (and so the info)
  // alive. Its memory is not zeroed first: the read's copy is the first write to each page (a
  // zeroing pass took half of a warm 2 GiB load, docs/benchmarks.md).
  struct Owned {
    std::shared_ptr<const detail::FileState> state;
    std::unique_ptr<std::byte[]> bytes;
  };
  const auto size = static_cast<size_t>(info.byte_size());
  auto owned = std::make_shared<Owned>();
  owned->state = state_;
  owned->bytes = std::make_unique_for_overwrite<std::byte[]>(size);
  const std::span<std::byte> bytes(owned->bytes.get(), size);
  read_data(info.begin, bytes);
  return TensorView(std::move(owned), info, bytes, true);
}

void File::read(std::string_view name, std::span<std::byte> dst) const {
  const TensorInfo& info =
      attributed(state_->name, [&]() -> const TensorInfo& { return state_->header.at(name); });
  if (dst.size() != info.byte_size())
    throw_invalid(fmt::format("destination holds {} bytes, tensor {} has {}", dst.size(),
                              detail::quote_name(info.name), info.byte_size()),
                  info.name);
  read_data(info.begin, dst);
}

void File::read_many(std::span<const TensorTarget> targets, unsigned threads) const {
  std::vector<DataRange> ranges;
  ranges.reserve(targets.size());
  for (const TensorTarget& t : targets) {
    const TensorInfo& info =
        attributed(state_->name, [&]() -> const TensorInfo& { return state_->header.at(t.name); });
    if (t.dst.size() != info.byte_size())
      throw_invalid(fmt::format("destination holds {} bytes, tensor {} has {}", t.dst.size(),
                                detail::quote_name(info.name), info.byte_size()),
                    info.name);
    ranges.push_back({info.begin, t.dst});
  }
  read_data_many(ranges, threads);
}

void File::read_data_many(std::span<const DataRange> ranges, unsigned threads) const {
  const detail::FileState& s = *state_;
  std::vector<detail::ReadRange> reads;
  reads.reserve(ranges.size());
  for (const DataRange& r : ranges) {
    auto end = detail::checked_add(r.offset, r.dst.size());
    if (!end || *end > s.header.data_size())
      throw_invalid(fmt::format("read of {} bytes at data offset {} is past the data ({} bytes)",
                                r.dst.size(), r.offset, s.header.data_size()));
    reads.push_back({s.data_start() + r.offset, r.dst.data(), r.dst.size()});
  }
  attributed(s.name, [&] { s.source->read_ranges(reads, threads); });
}

std::vector<std::byte> File::read_slice(std::string_view name, std::span<const SliceIndex> indices,
                                        std::vector<uint64_t>* shape) const {
  const TensorInfo& info =
      attributed(state_->name, [&]() -> const TensorInfo& { return state_->header.at(name); });
  detail::SliceGeometry g = detail::slice_geometry(info, indices);
  std::vector<std::byte> out(static_cast<size_t>(g.byte_size()));
  // The runs in one call: from a URL, runs that touch come in one request, several at once.
  std::vector<DataRange> runs;
  size_t pos = 0;
  g.for_each_run([&](uint64_t off, uint64_t len) {
    runs.push_back({info.begin + off, {out.data() + pos, static_cast<size_t>(len)}});
    pos += static_cast<size_t>(len);
  });
  read_data_many(runs);
  if (shape) *shape = std::move(g.out_shape);
  return out;
}

void TensorView::check_element_type(Dtype requested, unsigned bits, bool raw_ok) const {
  const Dtype d = info_->dtype;
  if (requested == d) return;
  if (raw_ok && bits == dtype_bits(d) && !is_integer(d)) return;  // raw bits of a float type
  throw_invalid(fmt::format("tensor {} is {}; cannot copy it as {}",
                            detail::quote_name(info_->name), dtype_name(d), dtype_name(requested)),
                info_->name);
}

std::span<std::byte> TensorView::writable_bytes() const {
  if (!writable_)
    throw_invalid(fmt::format("tensor {} views read-only memory (open with Backend::mmap_private "
                              "for writable views)",
                              detail::quote_name(info_->name)),
                  info_->name);
  // The memory is a private mapping or a buffer this process allocated: never const objects.
  return {const_cast<std::byte*>(bytes_.data()), bytes_.size()};
}

std::vector<std::span<const std::byte>> TensorView::slice_chunks(
    std::span<const SliceIndex> indices, std::vector<uint64_t>* shape) const {
  detail::SliceGeometry g = detail::slice_geometry(*info_, indices);
  std::vector<std::span<const std::byte>> chunks;
  chunks.reserve(static_cast<size_t>(g.run_count));
  g.for_each_run([&](uint64_t off, uint64_t len) {
    chunks.push_back(bytes_.subspan(static_cast<size_t>(off), static_cast<size_t>(len)));
  });
  if (shape) *shape = std::move(g.out_shape);
  return chunks;
}

std::vector<std::byte> TensorView::slice_copy(std::span<const SliceIndex> indices,
                                              std::vector<uint64_t>* shape) const {
  detail::SliceGeometry g = detail::slice_geometry(*info_, indices);
  std::vector<std::byte> out(static_cast<size_t>(g.byte_size()));
  size_t pos = 0;
  g.for_each_run([&](uint64_t off, uint64_t len) {
    std::memcpy(out.data() + pos, bytes_.data() + off, static_cast<size_t>(len));
    pos += static_cast<size_t>(len);
  });
  if (shape) *shape = std::move(g.out_shape);
  return out;
}

}  // namespace tlio
