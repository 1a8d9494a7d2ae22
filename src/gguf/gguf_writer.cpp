// gguf/gguf_writer.cpp: GGUF's layout written (docs/gguf.md "What a GGUF file is").
#include "gguf/gguf_writer.hpp"

#include <fmt/core.h>

#include <cstring>
#include <set>

#include "common/checked.hpp"
#include "gguf/gguf_header.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

namespace {

template <class T>
std::vector<std::byte> bytes_of(const T& v) {
  std::vector<std::byte> out(sizeof(T));
  std::memcpy(out.data(), &v, sizeof(T));
  return out;
}

struct HeaderBytes {
  std::vector<std::byte> out;
  template <class T>
  void num(T v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    out.insert(out.end(), p, p + sizeof(T));
  }
  void str(const std::string& s) {
    num<uint64_t>(s.size());
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    out.insert(out.end(), p, p + s.size());
  }
  void value(const GgufValue& v) {
    num(static_cast<uint32_t>(v.type));
    if (v.type == GgufValueType::STRING) {
      str(v.strings.front());
      return;
    }
    if (v.type == GgufValueType::ARRAY) {
      num(static_cast<uint32_t>(v.element_type));
      num<uint64_t>(v.count);
      if (v.element_type == GgufValueType::STRING) {
        for (const std::string& s : v.strings) str(s);
        return;
      }
    }
    out.insert(out.end(), v.bytes.begin(), v.bytes.end());
  }
};

}  // namespace

GgufValue gguf_u32(uint32_t v) {
  return {GgufValueType::UINT32, GgufValueType::UINT8, 1, bytes_of(v), {}};
}
GgufValue gguf_i32(int32_t v) {
  return {GgufValueType::INT32, GgufValueType::UINT8, 1, bytes_of(v), {}};
}
GgufValue gguf_u16(uint16_t v) {
  return {GgufValueType::UINT16, GgufValueType::UINT8, 1, bytes_of(v), {}};
}
GgufValue gguf_f32(float v) {
  return {GgufValueType::FLOAT32, GgufValueType::UINT8, 1, bytes_of(v), {}};
}
GgufValue gguf_bool(bool v) {
  return {
      GgufValueType::BOOL, GgufValueType::UINT8, 1, {std::byte{v ? uint8_t{1} : uint8_t{0}}}, {}};
}
GgufValue gguf_string(std::string v) {
  return {GgufValueType::STRING, GgufValueType::UINT8, 1, {}, {std::move(v)}};
}
GgufValue gguf_strings(std::vector<std::string> v) {
  const uint64_t n = v.size();
  return {GgufValueType::ARRAY, GgufValueType::STRING, n, {}, std::move(v)};
}
GgufValue gguf_f32s(const std::vector<float>& v) {
  std::vector<std::byte> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return {GgufValueType::ARRAY, GgufValueType::FLOAT32, v.size(), std::move(b), {}};
}
GgufValue gguf_i32s(const std::vector<int32_t>& v) {
  std::vector<std::byte> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return {GgufValueType::ARRAY, GgufValueType::INT32, v.size(), std::move(b), {}};
}

uint64_t gguf_tensor_bytes(uint32_t type, const std::vector<uint64_t>& ne,
                           const std::string& name) {
  const GgmlType t = *ggml_type(type);
  if (ne.empty() || ne[0] % t.block != 0)
    throw_invalid(fmt::format("tensor {}: {} values per row are not whole {} blocks of {}", name,
                              ne.empty() ? 0 : ne[0], t.name, t.block),
                  name);
  std::optional<uint64_t> bytes = checked_mul(ne[0] / t.block, t.block_bytes);
  for (size_t d = 1; d < ne.size() && bytes; ++d) bytes = checked_mul(*bytes, ne[d]);
  if (!bytes) throw_invalid(fmt::format("tensor {} is too large", name), name);
  return *bytes;
}

GgufWriter::GgufWriter(const Location& dest, const std::vector<GgufKeyValue>& metadata,
                       std::vector<GgufTensorDecl> tensors, uint64_t alignment)
    : tensors_(std::move(tensors)), alignment_(alignment) {
  HeaderBytes h;
  h.out = {std::byte{'G'}, std::byte{'G'}, std::byte{'U'}, std::byte{'F'}};
  h.num<uint32_t>(3);
  h.num<uint64_t>(tensors_.size());
  h.num<uint64_t>(metadata.size());
  std::set<std::string_view> keys, names;
  for (const GgufKeyValue& kv : metadata) {
    if (!keys.insert(kv.key).second) throw_invalid(fmt::format("GGUF key {} given twice", kv.key));
    h.str(kv.key);
    h.value(kv.value);
  }
  uint64_t offset = 0;
  for (const GgufTensorDecl& t : tensors_) {
    if (t.name.size() > kMaxGgmlNameBytes)
      throw_invalid(
          fmt::format("tensor name {} is over ggml's {} bytes", t.name, kMaxGgmlNameBytes), t.name);
    if (!names.insert(t.name).second)
      throw_invalid(fmt::format("tensor {} declared twice", t.name), t.name);
    if (t.ne.size() > kMaxGgmlDims)
      throw_invalid(fmt::format("tensor {} has over 4 dimensions", t.name), t.name);
    h.str(t.name);
    h.num(static_cast<uint32_t>(t.ne.size()));
    for (uint64_t d : t.ne) h.num(d);
    h.num(t.type);
    h.num(offset);
    const uint64_t bytes = gguf_tensor_bytes(t.type, t.ne, t.name);
    bytes_.push_back(bytes);
    begin_.push_back(offset);
    offset = gguf_padded(offset + bytes, alignment);
  }
  const uint64_t data_offset = gguf_padded(h.out.size(), alignment);
  h.out.resize(data_offset);
  for (uint64_t& b : begin_) b += data_offset;
  end_ = tensors_.empty() ? data_offset : begin_.back() + bytes_.back();
  out_ = std::make_unique<AtomicFile>(dest);
  writes_ = std::make_unique<OutputWrites>(out_->fd(), out_->name(), out_->lands_on_disk());
  writes_->write(0, h.out);
}

void GgufWriter::append(std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    if (current_ == tensors_.size()) throw_invalid("GGUF writer: bytes past the last tensor");
    const uint64_t take = std::min<uint64_t>(bytes.size(), bytes_[current_] - written_);
    writes_->write(begin_[current_] + written_, bytes.first(take));
    written_ += take;
    bytes = bytes.subspan(take);
    if (written_ == bytes_[current_]) {
      // The padding to the next tensor written too, so the file is written in one run.
      const uint64_t end = begin_[current_] + written_;
      if (++current_ < tensors_.size() && begin_[current_] > end)
        writes_->write(end, std::vector<std::byte>(begin_[current_] - end));
      written_ = 0;
    }
  }
}

void GgufWriter::commit() {
  finish();
  out_->commit();
}

void GgufWriter::commit_into(OutputSet& set) {
  finish();
  set.add(std::move(out_));
}

void GgufWriter::finish() {
  while (current_ < tensors_.size() && bytes_[current_] == 0) ++current_;
  if (current_ != tensors_.size())
    throw_invalid(fmt::format("GGUF writer: tensor {} has {} of its {} bytes",
                              tensors_[current_].name, written_, bytes_[current_]));
  // Padding after the last tensor: ggml's writer pads every tensor, the last one too.
  const uint64_t padded = gguf_padded(end_, alignment_);
  if (padded > end_) {
    writes_->write(end_, std::vector<std::byte>(padded - end_));
    end_ = padded;
  }
  writes_->flush();
  writes_.reset();
}

}  // namespace tlio::detail
