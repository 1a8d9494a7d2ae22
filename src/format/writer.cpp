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
#include <exception>
#include <functional>
#include <span>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "common/checked.hpp"
#include "common/json_text.hpp"
#include "format/file_access.hpp"
#include "format/header_text.hpp"
#include "format/writer_access.hpp"
#include "io/atomic_file.hpp"
#include "io/os_file.hpp"
#include "io/output_writes.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"

namespace tlio {

using detail::quote_name;

struct detail::WriterState {
  std::unique_ptr<detail::AtomicFile> file;   // null for memory writers
  std::unique_ptr<detail::OutputWrites> out;  // the file's writes, while it is open
  detail::OutputSet* set = nullptr;           // commit() hands the file to this set
  std::vector<std::byte> memory;
  std::string name = "<memory>";
  Metadata metadata;
  Metadata defaults;                // WriterAccess::into_set: entries metadata gets unless set
  std::vector<TensorInfo> tensors;  // declaration order, then canonical order once frozen
  std::unordered_set<std::string> declared;
  std::unordered_map<std::string_view, size_t> index;  // name -> position in tensors (frozen)
  std::vector<uint64_t> written;                       // bytes supplied per tensor
  uint64_t data_start = 0;
  bool frozen = false;
  bool finished = false;  // committed or aborted
  bool committed = false;
  bool probe = false;  // WriterAccess::probe: records declarations, writes nothing
  bool sink = false;   // WriterAccess::sink: takes every byte and keeps none
  std::unordered_map<std::string, WriterState*> routes;  // WriterAccess::routing: name -> holder
  std::vector<std::string> routed;                       // the routed names declared, in order
  std::unordered_set<std::string_view> routed_names;  // the same, to look up (views of `routed`'s
                                                      // strings: reserved, they never move)

  // Where tensor `name`'s bytes go: this writer's tensor, or a routing writer's target's.
  struct Slot {
    WriterState* w;
    size_t i;
  };

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
    if (probe) throw LayoutProbed{};
    for (const auto& [key, value] : defaults) metadata.emplace(key, value);
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
    if (!file && !sink) {
      uint64_t data = tensors.empty() ? 0 : tensors.back().end;
      auto total = detail::checked_add(data_start, data);
      if (!total || !detail::to_size(*total)) throw_invalid("file too large for memory");
      memory.assign(static_cast<size_t>(*total), std::byte{0});
    }
    frozen = true;
    put(0, prefix);
  }

  void put(uint64_t offset, std::span<const std::byte> bytes) {
    if (sink) return;
    if (file) {
      out->write(offset, bytes);
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

  Slot slot(std::string_view tensor) {
    if (routes.empty()) return {this, lookup(tensor)};
    check_open();
    const auto it = routes.find(std::string(tensor));
    if (it == routes.end() || !routed_names.contains(tensor))
      throw Error(ErrorCode::not_found, Rule::none, std::string(tensor), std::nullopt,
                  fmt::format("no tensor named {} was declared", quote_name(tensor)));
    it->second->check_open();
    return {it->second, it->second->lookup(tensor)};
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
  return detail::WriterAccess::to_file(detail::Location::parse(path.native()));
}

Writer detail::WriterAccess::to_file(const Location& where) {
  auto impl = std::make_unique<detail::WriterState>();
  impl->name = where.display();
  try {
    impl->file = std::make_unique<detail::AtomicFile>(where);
    impl->out = std::make_unique<detail::OutputWrites>(impl->file->fd(), impl->name,
                                                       impl->file->lands_on_disk());
  } catch (const Error& e) {
    throw e.with_source(impl->name);
  }
  return Writer(std::move(impl));
}

Writer detail::WriterAccess::into_set(OutputSet& set, const Location& where, Metadata defaults) {
  Writer w = to_file(where);
  w.impl_->set = &set;
  w.impl_->defaults = std::move(defaults);
  return w;
}

Writer detail::WriterAccess::probe() {
  Writer w = Writer::to_memory();
  w.impl_->probe = true;
  return w;
}

Writer detail::WriterAccess::sink() {
  Writer w = Writer::to_memory();
  w.impl_->sink = true;
  return w;
}

const Metadata& detail::WriterAccess::probed_metadata(const Writer& probe) {
  return probe.impl_->metadata;
}

const std::vector<TensorInfo>& detail::WriterAccess::probed_tensors(const Writer& probe) {
  return probe.impl_->tensors;
}

Writer detail::WriterAccess::routing(std::unordered_map<std::string, Writer*> routes) {
  Writer w = Writer::to_memory();
  for (auto& [name, target] : routes) w.impl_->routes.emplace(name, target->impl_.get());
  return w;
}

Writer Writer::to_memory() { return Writer(std::make_unique<detail::WriterState>()); }

void Writer::set_metadata(std::string key, std::string value) {
  if (!impl_->routes.empty()) return;  // the targets have theirs
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
  if (!w.routes.empty()) {  // declared in its target already: the same tensor, or an error
    const auto it = w.routes.find(name);
    const TensorInfo* t =
        it == w.routes.end() ? nullptr : &it->second->tensors[it->second->lookup(name)];
    if (!t || t->dtype != dtype || t->shape != shape)
      throw_invalid(fmt::format("tensor {} ({} [{}]) is not in the planned output",
                                quote_name(name), dtype_name(dtype), fmt::join(shape, ", ")),
                    name);
    if (w.routed_names.contains(name))
      throw_invalid(fmt::format("tensor {} declared twice", quote_name(name)), name);
    if (w.routed.empty()) w.routed.reserve(w.routes.size());  // views of them are kept
    w.routed.push_back(std::move(name));
    w.routed_names.insert(w.routed.back());
    return;
  }
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
  detail::WriterState& w = *impl_;
  if (w.routes.empty()) {
    w.freeze();
  } else if (!w.frozen) {  // the routed tensors as their writers lay them out
    w.check_open();
    for (const std::string& name : w.routed) {
      const auto [target, i] = w.slot(name);
      w.tensors.push_back(target->tensors[i]);
    }
    w.frozen = true;
  }
  return w.tensors;
}

void Writer::write(std::string_view name, std::span<const std::byte> data) {
  const auto [w, i] = impl_->slot(name);
  const TensorInfo& t = w->tensors[i];
  if (w->written[i] != 0 || data.size() != t.byte_size())
    throw_invalid(
        fmt::format("tensor {} ({} [{}]) takes exactly {} bytes, got {}{}", quote_name(t.name),
                    dtype_name(t.dtype), fmt::join(t.shape, ", "), t.byte_size(), data.size(),
                    w->written[i] ? " after earlier parts" : ""),
        t.name);
  w->accept(i, data);
}

void Writer::append(std::string_view name, std::span<const std::byte> part) {
  const auto [w, i] = impl_->slot(name);
  w->accept(i, part);
}

void Writer::write_from(std::string_view name,
                        const std::function<void(uint64_t, std::span<std::byte>)>& fill,
                        size_t buffer_bytes) {
  if (buffer_bytes == 0 || buffer_bytes % 8 != 0)
    throw_invalid("write_from buffer size must be a positive multiple of 8");
  const auto [w, i] = impl_->slot(name);
  const uint64_t size = w->tensors[i].byte_size();
  if (w->written[i] % buffer_bytes != 0)
    throw_invalid(fmt::format("tensor {} was partly written in pieces of another size",
                              quote_name(w->tensors[i].name)));
  std::vector<std::byte> buf(static_cast<size_t>(std::min<uint64_t>(size, buffer_bytes)));
  for (uint64_t off = w->written[i]; off < size;) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(size - off, buf.size()));
    fill(off, {buf.data(), n});
    w->accept(i, {buf.data(), n});
    off += n;
  }
}

namespace {
// Bytes a copy by ranges holds in memory at once, per batch (two batches: one fetched while the
// other is written).
constexpr uint64_t kRangeCopyBatch = uint64_t{64} << 20;

// One tensor of a copy: the writer's tensor i takes the source's tensor s.
struct CopyPiece {
  size_t i;
  const TensorInfo* s;
};
using CopyTick = std::function<void(uint64_t)>;

// Into a memory writer: every range read straight into its buffer at once.
void copy_into_memory(detail::WriterState& w, const File& src, std::span<const CopyPiece> pieces,
                      const CopyTick& tick) {
  std::vector<DataRange> ranges;
  for (const CopyPiece& p : pieces) {
    const TensorInfo& t = w.tensors[p.i];
    ranges.push_back(
        {p.s->begin,
         {w.memory.data() + w.data_start + t.begin, static_cast<size_t>(t.byte_size())}});
  }
  src.read_data_many(ranges);
  for (const CopyPiece& p : pieces) {
    w.written[p.i] = w.tensors[p.i].byte_size();
    tick(w.written[p.i]);
  }
}

// From a descriptor, in the kernel: no trip through user memory (and no page faults on a mapping).
void copy_in_kernel(detail::WriterState& w, const File& src, int in_fd,
                    std::span<const CopyPiece> pieces, const CopyTick& tick) {
  for (const CopyPiece& p : pieces) {
    const TensorInfo& t = w.tensors[p.i];
    w.out->copy_from(in_fd, 8 + src.header_size() + p.s->begin, w.data_start + t.begin,
                     t.byte_size());
    w.written[p.i] = t.byte_size();
    tick(t.byte_size());
  }
}

// From a source in memory (a buffer): written as it is.
void copy_from_memory(detail::WriterState& w, const File& src, std::span<const CopyPiece> pieces,
                      const CopyTick& tick) {
  for (const CopyPiece& p : pieces) {
    w.accept(p.i, src.mapped_data().subspan(p.s->begin, p.s->byte_size()));
    tick(p.s->byte_size());
  }
}

// From a source read by ranges (a URL): in source order (touching tensors share requests), in
// batches of kRangeCopyBatch bytes; the next batch is fetched while this one is written.
void copy_by_ranges(detail::WriterState& w, const File& src, std::vector<CopyPiece> pieces,
                    const CopyTick& tick) {
  std::sort(pieces.begin(), pieces.end(),
            [](const CopyPiece& a, const CopyPiece& b) { return a.s->begin < b.s->begin; });
  struct Part {
    size_t i;
    uint64_t src_offset, size;
  };
  std::vector<std::vector<Part>> batches(1);
  uint64_t in_batch = 0, largest = 0;
  for (const CopyPiece& p : pieces)
    for (uint64_t done = 0, size = p.s->byte_size(); done < size;) {
      if (in_batch == kRangeCopyBatch) {
        batches.emplace_back();
        in_batch = 0;
      }
      const uint64_t n = std::min(size - done, kRangeCopyBatch - in_batch);
      batches.back().push_back({p.i, p.s->begin + done, n});
      in_batch += n;
      largest = std::max(largest, in_batch);
      done += n;
    }
  std::vector<std::byte> buffers[2];
  auto fetch = [&](size_t b) {
    std::vector<std::byte>& buf = buffers[b % 2];
    buf.resize(static_cast<size_t>(largest));
    std::vector<DataRange> ranges;
    uint64_t at = 0;
    for (const Part& part : batches[b]) {
      ranges.push_back({part.src_offset, {buf.data() + at, static_cast<size_t>(part.size)}});
      at += part.size;
    }
    src.read_data_many(ranges);
  };
  std::exception_ptr fetch_error;
  std::thread next;
  auto join_next = [&] {
    if (next.joinable()) next.join();
    if (fetch_error) std::rethrow_exception(std::exchange(fetch_error, nullptr));
  };
  try {
    fetch(0);
    for (size_t b = 0; b < batches.size(); ++b) {
      if (b + 1 < batches.size())
        next = std::thread([&, b] {
          try {
            fetch(b + 1);
          } catch (...) {
            fetch_error = std::current_exception();
          }
        });
      uint64_t at = 0;
      for (const Part& part : batches[b]) {
        w.accept(part.i, {buffers[b % 2].data() + at, static_cast<size_t>(part.size)});
        at += part.size;
        tick(part.size);
      }
      join_next();
    }
  } catch (...) {
    if (next.joinable()) next.join();
    throw;
  }
}
// Copies tensors of `src` into the writer state `w` (Writer::copy_many_from, names checked).
void copy_tensors(detail::WriterState& w, const File& src, std::span<const std::string_view> names,
                  std::span<const std::string_view> src_names,
                  const std::function<void(uint64_t)>& copied) {
  std::vector<CopyPiece> pieces;
  std::unordered_set<size_t> seen;
  for (size_t k = 0; k < names.size(); ++k) {
    const size_t i = w.lookup(names[k]);
    const TensorInfo& t = w.tensors[i];
    const TensorInfo& s = src.header().at(src_names.empty() ? names[k] : src_names[k]);
    if (s.dtype != t.dtype || s.shape != t.shape)
      throw_invalid(fmt::format("cannot copy {} ({} [{}]) into {} ({} [{}])", quote_name(s.name),
                                dtype_name(s.dtype), fmt::join(s.shape, ", "), quote_name(t.name),
                                dtype_name(t.dtype), fmt::join(t.shape, ", ")),
                    t.name);
    if (w.written[i] != 0 || !seen.insert(i).second)
      throw_invalid(fmt::format("tensor {} already written", quote_name(t.name)));
    pieces.push_back({i, &s});
  }
  const CopyTick tick = [&](uint64_t n) {
    if (copied && n) copied(n);
  };
  if (w.sink) {
    for (const CopyPiece& p : pieces) w.written[p.i] = w.tensors[p.i].byte_size();
    return;
  }
  if (!w.file) return copy_into_memory(w, src, pieces, tick);
  // What the source can do decides how: the kernel copies from a descriptor, memory is
  // written as it is, anything else is read in batches.
  const detail::ByteSource& source = detail::FileAccess::source(src);
  if (const int in_fd = source.descriptor(); in_fd >= 0)
    return copy_in_kernel(w, src, in_fd, pieces, tick);
  if (!source.memory().empty()) return copy_from_memory(w, src, pieces, tick);
  copy_by_ranges(w, src, std::move(pieces), tick);
}

}  // namespace

void Writer::copy_from(std::string_view name, const File& src, std::string_view src_name) {
  const std::string_view names[] = {name};
  const std::string_view src_names[] = {src_name};
  copy_many_from(src, names, src_names);
}

void Writer::copy_many_from(const File& src, std::span<const std::string_view> names,
                            std::span<const std::string_view> src_names,
                            const std::function<void(uint64_t)>& copied) {
  if (!src_names.empty() && src_names.size() != names.size())
    throw_invalid(
        fmt::format("{} names to copy to, {} to copy from", names.size(), src_names.size()));
  if (!impl_->routes.empty()) {  // each target's tensors as one copy, targets in first-named order
    std::vector<std::pair<detail::WriterState*, std::vector<size_t>>> groups;
    for (size_t k = 0; k < names.size(); ++k) {
      detail::WriterState* target = impl_->slot(names[k]).w;
      auto g = std::find_if(groups.begin(), groups.end(),
                            [&](const auto& x) { return x.first == target; });
      if (g == groups.end()) g = groups.insert(g, {target, {}});
      g->second.push_back(k);
    }
    for (const auto& [target, ks] : groups) {
      std::vector<std::string_view> to, from;
      for (size_t k : ks) {
        to.push_back(names[k]);
        from.push_back(src_names.empty() ? names[k] : src_names[k]);
      }
      copy_tensors(*target, src, to, from, copied);
    }
    return;
  }
  copy_tensors(*impl_, src, names, src_names, copied);
}

void Writer::copy_from_fd(std::string_view name, int fd, uint64_t offset) {
  const auto [target, i] = impl_->slot(name);
  detail::WriterState& w = *target;
  const TensorInfo& t = w.tensors[i];
  if (w.written[i] != 0)
    throw_invalid(fmt::format("tensor {} already written", quote_name(t.name)));
  if (w.file) {
    w.out->copy_from(fd, offset, w.data_start + t.begin, t.byte_size());
  } else if (t.byte_size() != 0 && !w.sink) {
    detail::pread_exact(
        fd, offset, {w.memory.data() + w.data_start + t.begin, static_cast<size_t>(t.byte_size())},
        w.name);
  }
  w.written[i] = t.byte_size();
}

void Writer::commit() {
  detail::WriterState& w = *impl_;
  if (!w.routes.empty()) {  // the routed tensors whole; their writers commit themselves
    w.check_open();
    for (const std::string& name : w.routed) {
      const auto [target, i] = w.slot(name);
      if (target->written[i] != target->tensors[i].byte_size())
        throw_invalid(fmt::format("tensor {} incomplete: {} of {} bytes supplied", quote_name(name),
                                  target->written[i], target->tensors[i].byte_size()),
                      name);
    }
    w.finished = w.committed = true;
    return;
  }
  w.check_open();
  w.freeze();
  for (size_t i = 0; i < w.tensors.size(); ++i)
    if (w.written[i] != w.tensors[i].byte_size())
      throw_invalid(
          fmt::format("tensor {} incomplete: {} of {} bytes supplied",
                      quote_name(w.tensors[i].name), w.written[i], w.tensors[i].byte_size()),
          w.tensors[i].name);
  if (w.file) {
    try {
      w.out->flush();
      w.out.reset();
      if (w.set)
        w.set->add(std::move(w.file));
      else
        w.file->commit();
    } catch (const Error& e) {
      w.finished = true;
      if (w.file) w.file->abort();
      throw e.with_source(w.name);
    }
  }
  w.finished = true;
  w.committed = true;
}

void Writer::abort() noexcept {
  if (!impl_ || impl_->finished) return;
  impl_->finished = true;
  impl_->out.reset();
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
  std::vector<std::string_view> names;
  for (const auto& t : w.layout()) names.push_back(t.name);
  w.copy_many_from(src, names);
  w.commit();
}

}  // namespace tlio
