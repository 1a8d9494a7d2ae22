// format/writer.cpp: the canonical streaming writer.
//
// The layout (canonical order, offsets, header text) is fixed before any tensor byte is written,
// so each supplied piece goes straight to its final place with a positional write: nothing is
// buffered beyond what the caller hands over.
#include "tlio/writer.hpp"

#include <fmt/core.h>
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "common/json_text.hpp"
#include "format/header_text.hpp"
#include "common/checked.hpp"
#include "io/os_file.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"

namespace tlio {

using detail::quote_name;

// Pieces this large start their writeback at once, so the disk works while the next ones are
// copied and commit's fsync waits for little (small pieces would only add system calls).
constexpr size_t kWritebackFrom = size_t{4} << 20;

struct detail::WriterState {
  std::unique_ptr<detail::AtomicFile> file;  // null for memory writers
  std::vector<std::byte> memory;
  std::string name = "<memory>";
  Metadata metadata;
  std::vector<TensorInfo> tensors;  // declaration order, then canonical order once frozen
  std::unordered_set<std::string> declared;
  std::unordered_map<std::string_view, size_t> index;  // name -> position in tensors (frozen)
  std::vector<uint64_t> written;                       // bytes supplied per tensor
  uint64_t data_start = 0;
  bool frozen = false;
  bool finished = false;  // committed or aborted
  bool committed = false;

  void check_open() const {
    if (finished) throw_invalid("writer already committed or aborted");
  }

  void check_not_frozen(const char* what) const {
    check_open();
    if (frozen) throw_invalid(fmt::format("{} after the first tensor bytes were written", what));
  }

  void freeze() {
    if (frozen) return;
    check_open();
    detail::canonical_layout(tensors);
    std::string text = detail::canonical_header(metadata, tensors);
    if (text.size() > kMaxHeaderSize)
      throw_invalid(fmt::format("header would be {} bytes, over the limit of {}", text.size(),
                                kMaxHeaderSize));
    data_start = 8 + text.size();
    index.reserve(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) index.emplace(tensors[i].name, i);
    written.assign(tensors.size(), 0);
    std::vector<std::byte> prefix(static_cast<size_t>(data_start));
    uint64_t n = text.size();
    for (int i = 0; i < 8; ++i) prefix[i] = static_cast<std::byte>((n >> (8 * i)) & 0xFF);
    std::memcpy(prefix.data() + 8, text.data(), text.size());
    if (!file) {
      uint64_t data = tensors.empty() ? 0 : tensors.back().end;
      auto total = detail::checked_add(data_start, data);
      if (!total || !detail::to_size(*total)) throw_invalid("file too large for memory");
      memory.assign(static_cast<size_t>(*total), std::byte{0});
    }
    frozen = true;
    put(0, prefix);
  }

  void put(uint64_t offset, std::span<const std::byte> bytes) {
    if (file) {
      detail::pwrite_all(file->fd(), offset, bytes, name);
      if (bytes.size() >= kWritebackFrom) detail::start_writeback(file->fd(), offset, bytes.size());
    } else if (!bytes.empty()) {
      std::memcpy(memory.data() + offset, bytes.data(), bytes.size());
    }
  }

  size_t lookup(std::string_view tensor) {
    freeze();
    auto it = index.find(tensor);
    if (it == index.end())
      throw Error(ErrorCode::not_found, Rule::none, std::string(tensor), std::nullopt,
                  fmt::format("no tensor named {} was declared", quote_name(tensor)));
    return it->second;
  }

  // Accepts the next `bytes` of tensor i.
  void accept(size_t i, std::span<const std::byte> bytes) {
    const TensorInfo& t = tensors[i];
    if (bytes.size() > t.byte_size() - written[i])
      throw_invalid(fmt::format("tensor {} is {} bytes; {} supplied so far, {} more given",
                                quote_name(t.name), t.byte_size(), written[i], bytes.size()),
                    t.name);
    put(data_start + t.begin + written[i], bytes);
    written[i] += bytes.size();
  }
};

Writer::Writer(std::unique_ptr<detail::WriterState> impl) : impl_(std::move(impl)) {}
Writer::Writer(Writer&&) noexcept = default;
Writer& Writer::operator=(Writer&&) noexcept = default;
Writer::~Writer() { abort(); }

Writer Writer::to_file(const std::filesystem::path& path) {
  auto impl = std::make_unique<detail::WriterState>();
  impl->name = path.string();
  try {
    impl->file = std::make_unique<detail::AtomicFile>(path);
  } catch (const Error& e) {
    throw e.with_source(impl->name);
  }
  return Writer(std::move(impl));
}

Writer Writer::to_memory() { return Writer(std::make_unique<detail::WriterState>()); }

void Writer::set_metadata(std::string key, std::string value) {
  impl_->check_not_frozen("set_metadata");
  if (!simdjson::validate_utf8(key.data(), key.size()) ||
      !simdjson::validate_utf8(value.data(), value.size()))
    throw_invalid("metadata key or value is not valid UTF-8", key);
  impl_->metadata[std::move(key)] = std::move(value);
}

void Writer::set_metadata(const Metadata& metadata) {
  for (const auto& [k, v] : metadata) set_metadata(k, v);
}

void Writer::declare(std::string name, Dtype dtype, Shape shape) {
  detail::WriterState& w = *impl_;
  w.check_not_frozen("declare");
  if (name == "__metadata__") throw_invalid("a tensor may not be named \"__metadata__\"", name);
  if (!simdjson::validate_utf8(name.data(), name.size()))
    throw_invalid("tensor name is not valid UTF-8", name);
  if (!tensor_bytes(dtype, shape))
    throw_invalid(fmt::format("tensor {}: {} [{}] overflows or is not a whole number of bytes",
                              quote_name(name), dtype_name(dtype), fmt::join(shape, ", ")),
                  name);
  if (!w.declared.insert(name).second)
    throw_invalid(fmt::format("tensor {} declared twice", quote_name(name)), name);
  TensorInfo& t = w.tensors.emplace_back();
  t.name = std::move(name);
  t.dtype = dtype;
  t.shape = std::move(shape);
}

const std::vector<TensorInfo>& Writer::layout() {
  impl_->freeze();
  return impl_->tensors;
}

void Writer::write(std::string_view name, std::span<const std::byte> data) {
  size_t i = impl_->lookup(name);
  const TensorInfo& t = impl_->tensors[i];
  if (impl_->written[i] != 0 || data.size() != t.byte_size())
    throw_invalid(
        fmt::format("tensor {} ({} [{}]) takes exactly {} bytes, got {}{}", quote_name(t.name),
                    dtype_name(t.dtype), fmt::join(t.shape, ", "), t.byte_size(), data.size(),
                    impl_->written[i] ? " after earlier parts" : ""),
        t.name);
  impl_->accept(i, data);
}

void Writer::append(std::string_view name, std::span<const std::byte> part) {
  impl_->accept(impl_->lookup(name), part);
}

void Writer::write_from(std::string_view name,
                        const std::function<void(uint64_t, std::span<std::byte>)>& fill,
                        size_t buffer_bytes) {
  if (buffer_bytes == 0 || buffer_bytes % 8 != 0)
    throw_invalid("write_from buffer size must be a positive multiple of 8");
  size_t i = impl_->lookup(name);
  const uint64_t size = impl_->tensors[i].byte_size();
  if (impl_->written[i] % buffer_bytes != 0)
    throw_invalid(fmt::format("tensor {} was partly written in pieces of another size",
                              quote_name(impl_->tensors[i].name)));
  std::vector<std::byte> buf(static_cast<size_t>(std::min<uint64_t>(size, buffer_bytes)));
  for (uint64_t off = impl_->written[i]; off < size;) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(size - off, buf.size()));
    fill(off, {buf.data(), n});
    impl_->accept(i, {buf.data(), n});
    off += n;
  }
}

void Writer::copy_from(std::string_view name, const File& src, std::string_view src_name) {
  detail::WriterState& w = *impl_;
  size_t i = w.lookup(name);
  const TensorInfo& t = w.tensors[i];
  const TensorInfo& s = src.header().at(src_name);
  if (s.dtype != t.dtype || s.shape != t.shape)
    throw_invalid(fmt::format("cannot copy {} ({} [{}]) into {} ({} [{}])", quote_name(s.name),
                              dtype_name(s.dtype), fmt::join(s.shape, ", "), quote_name(t.name),
                              dtype_name(t.dtype), fmt::join(t.shape, ", ")),
                  t.name);
  if (w.written[i] != 0)
    throw_invalid(fmt::format("tensor {} already written", quote_name(t.name)));
  if (w.file && src.native_handle() >= 0) {
    // In-kernel copy: no trip through user memory (and no page faults on a mapping).
    detail::copy_range(src.native_handle(), 8 + src.header_size() + s.begin, w.file->fd(),
                       w.data_start + t.begin, t.byte_size(), w.name);
    if (t.byte_size() >= kWritebackFrom) detail::start_writeback(w.file->fd(), w.data_start + t.begin, t.byte_size());
    w.written[i] = t.byte_size();
    return;
  }
  w.accept(i, src.view(src_name).bytes());
}

void Writer::copy_from_fd(std::string_view name, int fd, uint64_t offset) {
  detail::WriterState& w = *impl_;
  size_t i = w.lookup(name);
  const TensorInfo& t = w.tensors[i];
  if (w.written[i] != 0) throw_invalid(fmt::format("tensor {} already written", quote_name(t.name)));
  if (w.file) {
    detail::copy_range(fd, offset, w.file->fd(), w.data_start + t.begin, t.byte_size(), w.name);
    if (t.byte_size() >= kWritebackFrom) detail::start_writeback(w.file->fd(), w.data_start + t.begin, t.byte_size());
  } else if (t.byte_size() != 0) {
    detail::pread_exact(fd, offset, {w.memory.data() + w.data_start + t.begin, static_cast<size_t>(t.byte_size())}, w.name);
  }
  w.written[i] = t.byte_size();
}

void Writer::commit() {
  detail::WriterState& w = *impl_;
  w.freeze();
  for (size_t i = 0; i < w.tensors.size(); ++i)
    if (w.written[i] != w.tensors[i].byte_size())
      throw_invalid(
          fmt::format("tensor {} incomplete: {} of {} bytes supplied",
                      quote_name(w.tensors[i].name), w.written[i], w.tensors[i].byte_size()),
          w.tensors[i].name);
  if (w.file) {
    try {
      w.file->commit();
    } catch (const Error& e) {
      w.finished = true;
      w.file->abort();
      throw e.with_source(w.name);
    }
  }
  w.finished = true;
  w.committed = true;
}

void Writer::abort() noexcept {
  if (!impl_ || impl_->finished) return;
  impl_->finished = true;
  if (impl_->file) impl_->file->abort();
  impl_->memory.clear();
}

std::vector<std::byte> Writer::take_bytes() {
  if (impl_->file) throw_invalid("take_bytes() is for memory writers");
  if (!impl_->committed) throw_invalid("take_bytes() needs a committed writer");
  return std::move(impl_->memory);
}

namespace {

void write_all(Writer& w, std::span<const TensorData> tensors, const Metadata& metadata) {
  w.set_metadata(metadata);
  for (const auto& t : tensors) w.declare(t.name, t.dtype, t.shape);
  for (const auto& t : tensors) w.write(t.name, t.bytes);
  w.commit();
}

}  // namespace

void save_file(const std::filesystem::path& path, std::span<const TensorData> tensors,
               const Metadata& metadata) {
  Writer w = Writer::to_file(path);
  write_all(w, tensors, metadata);
}

std::vector<std::byte> serialize(std::span<const TensorData> tensors, const Metadata& metadata) {
  Writer w = Writer::to_memory();
  write_all(w, tensors, metadata);
  return w.take_bytes();
}

void rewrite_canonical(const File& src, const std::filesystem::path& path) {
  Writer w = Writer::to_file(path);
  w.set_metadata(src.metadata());
  for (const auto& t : src.tensors()) w.declare(t.name, t.dtype, t.shape);
  for (const auto& t : w.layout()) w.copy_from(t.name, src, t.name);
  w.commit();
}

}  // namespace tlio
