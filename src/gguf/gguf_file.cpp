// gguf/gguf_file.cpp: GgufFile (tlio/gguf.hpp) over a byte source of any store, and GgufValue's
// accessors.
#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <system_error>
#include <utility>

#include "format/file_access.hpp"
#include "format/slice.hpp"
#include "gguf/gguf_header.hpp"
#include "io/location.hpp"
#include "io/store.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"
#include "tlio/gguf.hpp"
#include "tlio/location.hpp"

namespace tlio {

// One file, or the files of a split set: the header is the first's, with every file's tensors.
struct GgufFile::State {
  std::shared_ptr<const detail::ByteSource> source;
  detail::GgufHeader header;
  std::vector<std::shared_ptr<const detail::ByteSource>> more_sources;  // splits 2..n
  std::vector<uint64_t> more_data_offsets;
  uint64_t size = 0;  // of every file
};

namespace {

template <class T>
T load(const std::vector<std::byte>& bytes, uint64_t i = 0) {
  T v;
  std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof(T));
  return v;
}

// Element i of `bytes` read as `type`, as a double; nullopt for a type that is not a number.
std::optional<double> number(GgufValueType type, const std::vector<std::byte>& bytes, uint64_t i) {
  switch (type) {
    case GgufValueType::UINT8:
      return load<uint8_t>(bytes, i);
    case GgufValueType::INT8:
      return load<int8_t>(bytes, i);
    case GgufValueType::UINT16:
      return load<uint16_t>(bytes, i);
    case GgufValueType::INT16:
      return load<int16_t>(bytes, i);
    case GgufValueType::UINT32:
      return load<uint32_t>(bytes, i);
    case GgufValueType::INT32:
      return load<int32_t>(bytes, i);
    case GgufValueType::FLOAT32:
      return load<float>(bytes, i);
    case GgufValueType::BOOL:
      return load<uint8_t>(bytes, i) != 0 ? 1.0 : 0.0;
    case GgufValueType::UINT64:
      return static_cast<double>(load<uint64_t>(bytes, i));
    case GgufValueType::INT64:
      return static_cast<double>(load<int64_t>(bytes, i));
    case GgufValueType::FLOAT64:
      return load<double>(bytes, i);
    default:
      return std::nullopt;
  }
}

}  // namespace

std::optional<uint64_t> GgufValue::as_uint() const noexcept {
  switch (type) {
    case GgufValueType::UINT8:
    case GgufValueType::BOOL:
      return load<uint8_t>(bytes);
    case GgufValueType::UINT16:
      return load<uint16_t>(bytes);
    case GgufValueType::UINT32:
      return load<uint32_t>(bytes);
    case GgufValueType::UINT64:
      return load<uint64_t>(bytes);
    case GgufValueType::INT8:
    case GgufValueType::INT16:
    case GgufValueType::INT32:
    case GgufValueType::INT64: {
      const int64_t v = type == GgufValueType::INT8    ? load<int8_t>(bytes)
                        : type == GgufValueType::INT16 ? load<int16_t>(bytes)
                        : type == GgufValueType::INT32 ? load<int32_t>(bytes)
                                                       : load<int64_t>(bytes);
      if (v < 0) return std::nullopt;
      return static_cast<uint64_t>(v);
    }
    default:
      return std::nullopt;
  }
}

std::optional<double> GgufValue::as_double() const noexcept {
  if (type == GgufValueType::STRING || type == GgufValueType::ARRAY) return std::nullopt;
  return number(type, bytes, 0);
}

const std::string* GgufValue::as_string() const noexcept {
  return type == GgufValueType::STRING && !strings.empty() ? &strings.front() : nullptr;
}

std::optional<double> GgufValue::number_at(uint64_t i) const noexcept {
  if (type != GgufValueType::ARRAY || i >= count) return std::nullopt;
  return number(element_type, bytes, i);
}

std::vector<uint64_t> GgufTensorInfo::shape() const { return {ne.rbegin(), ne.rend()}; }

uint64_t GgufTensorInfo::element_count() const noexcept {
  uint64_t n = 1;
  for (uint64_t d : ne) n *= d;  // checked when the file was opened
  return n;
}

bool looks_like_gguf(std::span<const std::byte> first_bytes) noexcept {
  return first_bytes.size() >= 4 && (std::memcmp(first_bytes.data(), "GGUF", 4) == 0 ||
                                     std::memcmp(first_bytes.data(), "FUGG", 4) == 0);
}

bool is_gguf_location(const std::string& location) {
  std::string lower = location;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (lower.ends_with(".gguf")) return true;
  if (is_standard_stream(location) || location.find("://") != std::string::npos) return false;
  // Only a regular file is opened: opening a named pipe, even without waiting, would be seen by
  // its writer (and its bytes are never taken).
  struct stat st {};
  if (::stat(location.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  const int fd = ::open(location.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  std::byte magic[4] = {};
  const bool gguf = ::pread(fd, magic, 4, 0) == 4 && looks_like_gguf(magic);
  ::close(fd);
  return gguf;
}

GgufFile::GgufFile(std::shared_ptr<const State> state) : state_(std::move(state)) {}

namespace {

std::shared_ptr<const detail::ByteSource> open_gguf_source(const std::string& location,
                                                           const OpenOptions& options) {
  const detail::Location where = detail::Location::parse(location);
  try {
    return detail::open_source(where, detail::source_options(options));
  } catch (const Error& e) {
    throw e.with_source(where.display());
  }
}

// A split key's value, when the header has it as a whole number.
std::optional<uint64_t> split_key(const detail::GgufHeader& h, const char* key) {
  const auto it = h.key_index.find(key);
  return it == h.key_index.end() ? std::nullopt : h.metadata[it->second].value.as_uint();
}

// Split `index` of `count` of a set named by `prefix`, as llama_split_path formats it (the prefix
// as it is: a set may be named "model.gguf-00001-of-00002.gguf").
std::string split_file_name(const std::string& prefix, uint64_t index, uint64_t count) {
  return fmt::format("{}-{:05}-of-{:05}.gguf", prefix, index + 1, count);
}

[[noreturn]] void split_error(const std::string& source, const std::string& what) {
  throw Error(ErrorCode::format, Rule::gguf, "split", std::nullopt, what, source);
}

// The files of a split set after its first (whose header is `h`): found by llama.cpp's names,
// each checked, their tensors added to `h`, their sources and data offsets to the others.
struct MoreSplits {
  std::vector<std::shared_ptr<const detail::ByteSource>> sources;
  std::vector<uint64_t> data_offsets;
  uint64_t size = 0;
};
MoreSplits open_splits(detail::GgufHeader& h, const std::string& location,
                       const std::string& prefix, uint64_t count, const OpenOptions& options) {
  MoreSplits more;
  for (uint64_t i = 1; i < count; ++i) {
    const std::string name = split_file_name(prefix, i, count);
    auto source = open_gguf_source(name, options);
    detail::GgufHeader part = detail::parse_gguf_header(*source);
    if (split_key(part, "split.no") != i || split_key(part, "split.count") != count)
      split_error(name, fmt::format("{} is not split {} of {} (its split.no and split.count)", name,
                                    i + 1, count));
    for (GgufTensorInfo& t : part.tensors) {
      t.split = static_cast<uint32_t>(i);
      if (!h.tensor_index.emplace(t.name, h.tensors.size()).second)
        split_error(name, fmt::format("tensor {} is in two files of the set", t.name));
      h.tensors.push_back(std::move(t));
    }
    more.size += source->size();
    more.data_offsets.push_back(part.data_offset);
    more.sources.push_back(std::move(source));
  }
  if (const std::optional<uint64_t> total = split_key(h, "split.tensors.count");
      total && *total != h.tensors.size())
    split_error(location,
                fmt::format("the set has {} tensors, not the {} its split.tensors.count says",
                            h.tensors.size(), *total));
  return more;
}

}  // namespace

GgufFile GgufFile::open(const std::string& location, const OpenOptions& options) {
  auto state = std::make_shared<State>();
  state->source = open_gguf_source(location, options);
  state->header = detail::parse_gguf_header(*state->source);
  state->size = state->source->size();
  const std::optional<uint64_t> count = split_key(state->header, "split.count");
  if (count && *count > 1) {
    constexpr size_t kSuffix = 20;  // "-00001-of-00003.gguf"
    const std::string prefix =
        location.size() > kSuffix ? location.substr(0, location.size() - kSuffix) : "";
    if (*count > UINT16_MAX)
      split_error(location, fmt::format("split.count {} is past {}", *count, UINT16_MAX));
    const uint64_t no = split_key(state->header, "split.no").value_or(0);
    if (no != 0)
      split_error(location,
                  fmt::format("this is split {} of {}: a set is opened by its first file ({})",
                              no + 1, *count, split_file_name(prefix, 0, *count)));
    if (split_file_name(prefix, 0, *count) != location)
      split_error(
          location,
          fmt::format("the first file of a set of {} is named PREFIX-00001-of-{:05}.gguf (the "
                      "others are found by their names)",
                      *count, *count));
    MoreSplits more = open_splits(state->header, location, prefix, *count, options);
    state->more_sources = std::move(more.sources);
    state->more_data_offsets = std::move(more.data_offsets);
    state->size += more.size;
  }
  return GgufFile(std::move(state));
}

GgufFile GgufFile::from_bytes(std::span<const std::byte> bytes, std::string name) {
  auto state = std::make_shared<State>();
  state->source = detail::borrowed_memory_source(bytes, std::move(name));
  state->header = detail::parse_gguf_header(*state->source);
  state->size = state->source->size();
  return GgufFile(std::move(state));
}

const std::string& GgufFile::name() const noexcept { return state_->source->name(); }
uint64_t GgufFile::size() const noexcept { return state_->size; }
size_t GgufFile::splits() const noexcept { return 1 + state_->more_sources.size(); }
const std::string& GgufFile::split_name(size_t split) const {
  if (split >= splits())
    throw_invalid(fmt::format("no split {} in a set of {}", split + 1, splits()), {});
  return split == 0 ? name() : state_->more_sources[split - 1]->name();
}
uint32_t GgufFile::version() const noexcept { return state_->header.version; }
uint64_t GgufFile::alignment() const noexcept { return state_->header.alignment; }
uint64_t GgufFile::data_offset() const noexcept { return state_->header.data_offset; }
const std::vector<GgufKeyValue>& GgufFile::metadata() const noexcept {
  return state_->header.metadata;
}
const std::vector<GgufTensorInfo>& GgufFile::tensors() const noexcept {
  return state_->header.tensors;
}

const GgufValue* GgufFile::find(std::string_view key) const noexcept {
  const auto it = state_->header.key_index.find(std::string(key));
  return it == state_->header.key_index.end() ? nullptr
                                              : &state_->header.metadata[it->second].value;
}

const GgufTensorInfo* GgufFile::tensor(std::string_view name) const noexcept {
  const auto it = state_->header.tensor_index.find(std::string(name));
  return it == state_->header.tensor_index.end() ? nullptr : &state_->header.tensors[it->second];
}

void GgufFile::read(const GgufTensorInfo& t, uint64_t offset, std::span<std::byte> dst) const {
  if (offset > t.bytes || dst.size() > t.bytes - offset)
    throw_invalid(fmt::format("{} bytes at {} of tensor {} pass its {} bytes", dst.size(), offset,
                              t.name, t.bytes),
                  t.name);
  if (t.split > state_->more_sources.size())
    throw_invalid(
        fmt::format("tensor {} is in split {} of a set of {}", t.name, t.split + 1, splits()),
        t.name);
  const bool first = t.split == 0;
  const uint64_t at =
      (first ? state_->header.data_offset : state_->more_data_offsets[t.split - 1]) + t.offset +
      offset;
  const detail::ByteSource& s = first ? *state_->source : *state_->more_sources[t.split - 1];
  if (!s.memory().empty())
    std::memcpy(dst.data(), s.memory().data() + at, dst.size());
  else if (!dst.empty())
    s.read(at, dst);
}

namespace {

// The element runs of slice `indices` of `t` in output order, as slice_geometry walks a tensor of
// one-byte elements (so its offsets and lengths count elements): whole trailing dimensions merged.
detail::SliceGeometry element_runs(const GgufTensorInfo& t, std::span<const SliceIndex> indices) {
  TensorInfo info;
  info.name = t.name;
  info.dtype = Dtype::I8;
  info.shape = Shape(t.shape());
  info.end = t.element_count();
  return detail::slice_geometry(info, indices);
}

// Stored bytes [begin, end) of the whole blocks holding elements [first, first + count).
std::pair<uint64_t, uint64_t> block_bytes(const GgmlType& type, uint64_t first, uint64_t count) {
  return {first / type.block * type.block_bytes,
          (first + count + type.block - 1) / type.block * type.block_bytes};
}

// A slice's runs are read in windows of at most this many stored bytes, one read each, spanning
// gaps up to kSliceGap between runs (a column slice of a row-major tensor reads its rows' blocks
// in a few reads, not one per row: a request each for a remote file). A longer run is cut at
// multiples of the window's worth of blocks.
constexpr uint64_t kSliceWindowBytes = uint64_t{4} << 20;
constexpr uint64_t kSliceGap = uint64_t{64} << 10;

// One read of a slice: stored bytes [begin, end) of the tensor and the runs decoded from them
// (elements of the tensor, and where they go in the output, in elements).
struct SliceWindow {
  struct Run {
    uint64_t first, count, out;
  };
  uint64_t begin = 0, end = 0;
  std::vector<Run> runs;
};

// Calls on_window(window) for each read of slice `g` in order; `needed` gets the bytes of the
// blocks the runs hold (the windows' bytes less their gaps).
template <class OnWindow>
void for_each_window(const detail::SliceGeometry& g, const GgmlType& type, uint64_t& needed,
                     OnWindow&& on_window) {
  SliceWindow w;
  uint64_t out = 0, needed_end = 0;
  const auto flush = [&] {
    if (!w.runs.empty()) on_window(std::as_const(w));
    w.runs.clear();
  };
  const auto add = [&](uint64_t first, uint64_t count) {
    const auto [begin, end] = block_bytes(type, first, count);
    needed += end - std::max(begin, needed_end);  // runs may share a block
    needed_end = end;
    if (!w.runs.empty() && (begin > w.end + kSliceGap || end - w.begin > kSliceWindowBytes))
      flush();
    if (w.runs.empty()) w.begin = w.end = begin;
    w.end = std::max(w.end, end);
    w.runs.push_back({first, count, out});
    out += count;
  };
  // Pieces of a run end at multiples of `chunk` elements (whole blocks), so none passes a window.
  const uint64_t chunk = std::max<uint64_t>(kSliceWindowBytes / type.block_bytes, 1) * type.block;
  g.for_each_run([&](uint64_t first, uint64_t count) {
    while (count > 0) {
      const uint64_t n = std::min(count, chunk - first % chunk);
      add(first, n);
      first += n;
      count -= n;
    }
  });
  flush();
}

// Error{unsupported} unless t's values can be read as `to`.
void check_readable(const GgufTensorInfo& t, Dtype to, const std::string& source) {
  const std::optional<GgmlType> type = ggml_type(t.type);  // known: checked at open
  if (!ggml_decodes(t.type))
    throw Error(
        ErrorCode::unsupported, Rule::gguf, t.name, std::nullopt,
        fmt::format("tensor {} is {}, a ggml type tlio does not decode", t.name, type->name),
        source);
  const Dtype from = ggml_plain_dtype(t.type).value_or(Dtype::F32);
  if (dtype_bits(to) % 8 != 0 || !can_convert(from, to))
    throw Error(ErrorCode::unsupported, Rule::none, t.name, std::nullopt,
                fmt::format("tensor {} cannot be read as {}", t.name, dtype_name(to)), source);
}

// Elements [skip, skip + take) of the whole blocks `raw` (of t's type), as `to` into dst.
void convert_blocks(const GgufTensorInfo& t, std::span<const std::byte> raw, uint64_t skip,
                    uint64_t take, Dtype to, std::span<std::byte> dst,
                    std::vector<float>& scratch) {
  const Dtype from = ggml_plain_dtype(t.type).value_or(Dtype::F32);
  std::span<const std::byte> values = raw;
  if (!ggml_plain_dtype(t.type)) {
    const GgmlType type = *ggml_type(t.type);
    scratch.resize(raw.size() / type.block_bytes * type.block);
    ggml_decode(t.type, raw, scratch);
    values = std::as_bytes(std::span(scratch));
  }
  const uint64_t in_size = dtype_bits(from) / 8;
  convert(from, values.subspan(skip * in_size, take * in_size), to, dst, take);
}

}  // namespace

void GgufFile::read_values(const GgufTensorInfo& t, uint64_t first, uint64_t count, Dtype to,
                           std::span<std::byte> dst) const {
  const uint64_t n = t.element_count();
  if (first > n || count > n - first)
    throw_invalid(
        fmt::format("elements [{}, {}) of tensor {} pass its {}", first, first + count, t.name, n),
        t.name);
  check_readable(t, to, name());
  const uint64_t out_size = dtype_bits(to) / 8;
  if (dst.size() != count * out_size)
    throw_invalid(fmt::format("{} elements of {} take {} bytes, not {}", count, dtype_name(to),
                              count * out_size, dst.size()),
                  t.name);
  // Whole blocks at a time, a bounded piece of them per step, up to the block holding the last
  // element asked for (a row read alone reads its own blocks).
  constexpr uint64_t kStepElements = uint64_t{1} << 16;
  const GgmlType type = *ggml_type(t.type);
  const uint64_t block = type.block, step = std::max<uint64_t>(kStepElements / block, 1) * block;
  const uint64_t end = std::min(n, (first + count + block - 1) / block * block);
  std::vector<std::byte> raw;
  std::vector<float> decoded;
  for (uint64_t at = first / block * block, done = 0; done < count; at += step) {
    const uint64_t elements = std::min(step, end - at), skip = first > at ? first - at : 0;
    const uint64_t take = std::min(elements - skip, count - done);
    raw.resize(elements / block * type.block_bytes);
    read(t, at / block * type.block_bytes, raw);
    convert_blocks(t, raw, skip, take, to, dst.subspan(done * out_size, take * out_size), decoded);
    done += take;
  }
}

SlicePlan GgufFile::plan_slice(const GgufTensorInfo& t, std::span<const SliceIndex> indices) const {
  const detail::SliceGeometry g = element_runs(t, indices);
  SlicePlan plan;
  plan.shape = g.out_shape;
  for_each_window(g, *ggml_type(t.type), plan.byte_size, [&](const SliceWindow& w) {
    plan.ranges.push_back({w.begin, w.end - w.begin});
  });
  return plan;
}

void GgufFile::read_slice(const GgufTensorInfo& t, std::span<const SliceIndex> indices, Dtype to,
                          std::span<std::byte> dst) const {
  const detail::SliceGeometry g = element_runs(t, indices);
  check_readable(t, to, name());
  const uint64_t out_size = dtype_bits(to) / 8, count = g.byte_size();  // one-byte elements
  if (dst.size() != count * out_size)
    throw_invalid(fmt::format("the slice of tensor {} is {} elements of {}: {} bytes, not {}",
                              t.name, count, dtype_name(to), count * out_size, dst.size()),
                  t.name);
  const GgmlType type = *ggml_type(t.type);
  std::vector<std::byte> raw;
  std::vector<float> scratch;
  uint64_t needed = 0;
  for_each_window(g, type, needed, [&](const SliceWindow& w) {
    raw.resize(w.end - w.begin);
    read(t, w.begin, raw);
    for (const SliceWindow::Run& r : w.runs) {
      const auto [begin, end] = block_bytes(type, r.first, r.count);
      convert_blocks(t, std::span<const std::byte>(raw).subspan(begin - w.begin, end - begin),
                     r.first % type.block, r.count, to,
                     dst.subspan(r.out * out_size, r.count * out_size), scratch);
    }
  });
}

}  // namespace tlio
