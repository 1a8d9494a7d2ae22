// gguf/gguf_header.cpp: the GGUF header read field by field, as ggml's gguf_init_from_file
// reads it, with its checks (docs/gguf.md lists them).
#include "gguf/gguf_header.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "common/checked.hpp"
#include "common/json_text.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

namespace {

constexpr uint64_t kFirstPiece = uint64_t{1} << 20;  // a remote header's first read
constexpr uint64_t kInt64Max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
// Entries reserved ahead at most: a count that only the file's size bounds (a big file can
// claim billions) grows the lists as they fill instead.
constexpr uint64_t kMaxReserved = uint64_t{1} << 16;

size_t reserved(uint64_t count) { return static_cast<size_t>(std::min(count, kMaxReserved)); }

// The file's bytes from its start, fetched as the parse reaches them: all of a source in
// memory, else pieces that double in size (a header of a few MB, as a big vocabulary makes it,
// takes a few reads).
class Reader {
 public:
  explicit Reader(const ByteSource& source) : source_(source) {
    if (!source.memory().empty()) view_ = source.memory();
  }

  uint64_t offset() const noexcept { return at_; }
  uint64_t left() const noexcept { return source_.size() - at_; }

  [[noreturn]] void fail(const std::string& what, std::string key = {}) const {
    throw_format(Rule::gguf, std::move(key), what, at_);
  }

  // The next n bytes (the file must hold them).
  std::span<const std::byte> take(uint64_t n, const char* what) {
    if (n > left())
      fail(fmt::format("the file ends inside {} ({} bytes needed, {} left)", what, n, left()));
    if (at_ + n > view_.size()) fetch(at_ + n);
    const auto out = view_.subspan(static_cast<size_t>(at_), static_cast<size_t>(n));
    at_ += n;
    return out;
  }

  template <class T>
  T number(const char* what) {
    T v;
    std::memcpy(&v, take(sizeof(T), what).data(), sizeof(T));
    return v;
  }

  std::string string(const char* what, std::string_view key = {}) {
    const uint64_t n = number<uint64_t>(what);
    if (n > kMaxGgufStringBytes)
      fail(fmt::format("{} is {} bytes long, over the limit of {}", what, n, kMaxGgufStringBytes),
           std::string(key));
    const auto bytes = take(n, what);
    return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }

 private:
  void fetch(uint64_t end) {
    uint64_t want = std::max({end, 2 * buffer_.size(), kFirstPiece});
    want = std::min(want, source_.size());
    const size_t have = buffer_.size();
    buffer_.resize(static_cast<size_t>(want));
    source_.read(have, std::span(buffer_).subspan(have));
    view_ = buffer_;
  }

  const ByteSource& source_;
  std::vector<std::byte> buffer_;
  std::span<const std::byte> view_;
  uint64_t at_ = 0;
};

// Bytes of one element of a value type that is not STRING or ARRAY (0 for those, and for an
// unknown type).
uint64_t scalar_bytes(GgufValueType t) {
  switch (t) {
    case GgufValueType::UINT8:
    case GgufValueType::INT8:
    case GgufValueType::BOOL:
      return 1;
    case GgufValueType::UINT16:
    case GgufValueType::INT16:
      return 2;
    case GgufValueType::UINT32:
    case GgufValueType::INT32:
    case GgufValueType::FLOAT32:
      return 4;
    case GgufValueType::UINT64:
    case GgufValueType::INT64:
    case GgufValueType::FLOAT64:
      return 8;
    default:
      return 0;
  }
}

GgufValueType value_type(Reader& r, const std::string& key, const char* what) {
  const uint32_t t = r.number<uint32_t>(what);
  if (t > static_cast<uint32_t>(GgufValueType::FLOAT64))
    r.fail(fmt::format("key {} has value type {}, which GGUF does not define", quote_name(key), t),
           key);
  return static_cast<GgufValueType>(t);
}

GgufValue read_value(Reader& r, const std::string& key) {
  GgufValue v;
  v.type = value_type(r, key, "a value type");
  if (v.type == GgufValueType::STRING) {
    v.strings.push_back(r.string("a string value", key));
    return v;
  }
  if (v.type != GgufValueType::ARRAY) {
    const auto bytes = r.take(scalar_bytes(v.type), "a value");
    v.bytes.assign(bytes.begin(), bytes.end());
    return v;
  }
  v.element_type = value_type(r, key, "an array's element type");
  if (v.element_type == GgufValueType::ARRAY)
    r.fail(fmt::format("key {} is an array of arrays, which ggml refuses", quote_name(key)), key);
  v.count = r.number<uint64_t>("an array's length");
  // Each element takes at least a byte (a string its 8-byte length): a count the rest of the
  // file cannot hold is refused before anything is reserved.
  const uint64_t least = v.element_type == GgufValueType::STRING ? 8 : scalar_bytes(v.element_type);
  if (v.count > kMaxGgufArrayElements || v.count > r.left() / least)
    r.fail(fmt::format("key {} is an array of {} {} values, more than {}", quote_name(key), v.count,
                       gguf_value_type_name(v.element_type),
                       v.count > kMaxGgufArrayElements ? "the limit of 2^30"
                                                       : "the rest of the file holds"),
           key);
  if (v.element_type == GgufValueType::STRING) {
    v.strings.reserve(reserved(v.count));
    for (uint64_t i = 0; i < v.count; ++i) v.strings.push_back(r.string("an array's string", key));
  } else {
    const auto bytes = r.take(v.count * least, "an array's values");
    v.bytes.assign(bytes.begin(), bytes.end());
  }
  return v;
}

void read_metadata(Reader& r, uint64_t count, GgufHeader& h) {
  if (count > r.left() / 13)  // a key's length (8), a type (4) and at least one byte
    r.fail(fmt::format("the header says {} metadata entries, more than the file holds", count));
  h.metadata.reserve(reserved(count));
  for (uint64_t i = 0; i < count; ++i) {
    std::string key = r.string("a metadata key");
    if (key.empty()) r.fail(fmt::format("metadata entry {} has an empty key", i));
    if (h.key_index.contains(key))
      r.fail(fmt::format("metadata key {} appears twice", quote_name(key)), key);
    GgufValue value = read_value(r, key);
    h.key_index.emplace(key, h.metadata.size());
    h.metadata.push_back({std::move(key), std::move(value)});
  }
  if (const auto it = h.key_index.find("general.alignment"); it != h.key_index.end()) {
    const GgufValue& a = h.metadata[it->second].value;
    const std::optional<uint64_t> n = a.as_uint();
    if (a.type != GgufValueType::UINT32 || !n || *n == 0 || (*n & (*n - 1)) != 0)
      throw_format(
          Rule::gguf, "general.alignment",
          fmt::format("general.alignment must be a UINT32 power of two, not {} {}",
                      gguf_value_type_name(a.type), n ? std::to_string(*n) : std::string("?")));
    h.alignment = *n;
  }
}

GgufTensorInfo read_tensor_info(Reader& r, const GgufHeader& h) {
  GgufTensorInfo t;
  t.name = r.string("a tensor name");
  if (t.name.size() > kMaxGgmlNameBytes)
    r.fail(fmt::format("tensor name {} is {} bytes, over ggml's {}", quote_name(t.name),
                       t.name.size(), kMaxGgmlNameBytes),
           t.name);
  if (h.tensor_index.contains(t.name))
    r.fail(fmt::format("tensor {} appears twice", quote_name(t.name)), t.name);
  const uint32_t dims = r.number<uint32_t>("a tensor's dimension count");
  if (dims > kMaxGgmlDims)
    r.fail(fmt::format("tensor {} has {} dimensions, over ggml's {}", quote_name(t.name), dims,
                       kMaxGgmlDims),
           t.name);
  uint64_t elements = 1;
  for (uint32_t d = 0; d < dims; ++d) {
    const uint64_t n = r.number<uint64_t>("a tensor's dimension");
    const std::optional<uint64_t> product = checked_mul(elements, n);
    if (n > kInt64Max || !product || *product > kInt64Max)
      r.fail(fmt::format("tensor {}'s dimensions overflow", quote_name(t.name)), t.name);
    elements = *product;
    t.ne.push_back(n);
  }
  t.type = r.number<uint32_t>("a tensor's type");
  const std::optional<GgmlType> type = ggml_type(t.type);
  if (!type)
    r.fail(fmt::format("tensor {} has ggml type {}, which ggml does not know", quote_name(t.name),
                       t.type),
           t.name);
  const uint64_t ne0 = t.ne.empty() ? 1 : t.ne[0];
  if (ne0 % type->block != 0)
    r.fail(fmt::format("tensor {}'s first dimension {} is not a whole number of {} blocks of {}",
                       quote_name(t.name), ne0, type->name, type->block),
           t.name);
  const std::optional<uint64_t> bytes = checked_mul(elements / type->block, type->block_bytes);
  if (!bytes) r.fail(fmt::format("tensor {}'s size overflows", quote_name(t.name)), t.name);
  t.bytes = *bytes;
  t.offset = r.number<uint64_t>("a tensor's offset");
  return t;
}

}  // namespace

GgufHeader parse_gguf_header(const ByteSource& source) {
  try {
    Reader r(source);
    GgufHeader h;
    const auto magic = r.take(4, "the magic");
    if (std::memcmp(magic.data(), "GGUF", 4) != 0)
      r.fail(std::memcmp(magic.data(), "FUGG", 4) == 0
                 ? "a big-endian GGUF file (byte-swapped throughout), which tlio does not read"
                 : "not a GGUF file: it does not start with \"GGUF\"");
    h.version = r.number<uint32_t>("the version");
    if (h.version != 2 && h.version != 3)
      r.fail(h.version == 1 ? std::string("GGUF version 1, which ggml no longer reads")
             : (h.version & 0xFFFF) == 0
                 ? fmt::format("GGUF version {:#x}: a big-endian file, which tlio does not read",
                               h.version)
                 : fmt::format("GGUF version {}; ggml reads versions 2 and 3", h.version));
    const uint64_t tensors = r.number<uint64_t>("the tensor count");
    const uint64_t keys = r.number<uint64_t>("the metadata count");
    if (tensors > kInt64Max || keys > kInt64Max) r.fail("a count past ggml's signed 64-bit range");
    read_metadata(r, keys, h);
    if (tensors > r.left() / 24)  // a name's length, a dimension count, a type and an offset
      r.fail(fmt::format("the header says {} tensors, more than the file holds", tensors));
    h.tensors.reserve(reserved(tensors));
    for (uint64_t i = 0; i < tensors; ++i) {
      GgufTensorInfo t = read_tensor_info(r, h);
      h.tensor_index.emplace(t.name, h.tensors.size());
      h.tensors.push_back(std::move(t));
    }
    h.data_offset = tensors > 0 ? gguf_padded(r.offset(), h.alignment) : r.offset();
    // Each tensor's data where the one before it ends, padded: ggml's layout, checked as it is.
    uint64_t expected = 0;
    for (const GgufTensorInfo& t : h.tensors) {
      if (t.offset != expected)
        throw_format(
            Rule::gguf, t.name,
            fmt::format("tensor {}'s data is at offset {} of the data section; ggml expects {} "
                        "(each tensor right after the one before, padded to {})",
                        quote_name(t.name), t.offset, expected, h.alignment));
      const std::optional<uint64_t> end = checked_add(t.offset, t.bytes);
      if (!end || !checked_add(h.data_offset, *end) || h.data_offset + *end > source.size())
        throw_format(
            Rule::gguf, t.name,
            fmt::format("tensor {}'s {} bytes at offset {} of the data section pass the end of the "
                        "file ({} bytes)",
                        quote_name(t.name), t.bytes, t.offset, source.size()));
      expected = gguf_padded(*end, h.alignment);
    }
    return h;
  } catch (const Error& e) {
    throw e.with_source(source.name());
  }
}

}  // namespace tlio::detail
