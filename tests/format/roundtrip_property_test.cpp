// Property tests: random names (unicode, escapes, empty), dtypes and shapes. Any valid but
// non-canonical rendering of a header (shuffled keys and fields, pretty-printed, unpadded,
// escaped) reads back the same and rewrites to the canonical bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "common/json_text.hpp"
#include "test_util.hpp"
#include "tlio/file.hpp"
#include "tlio/writer.hpp"

namespace tlio {
namespace {

std::string random_name(std::mt19937_64& rng) {
  static const std::vector<std::string> pieces = {"a",
                                                  "b",
                                                  "layers.",
                                                  "0",
                                                  "9",
                                                  ".",
                                                  "_",
                                                  "/",
                                                  " ",
                                                  "\"",
                                                  "\\",
                                                  "\n",
                                                  "\t",
                                                  std::string(1, '\0'),
                                                  "\x01",
                                                  "\x7f",
                                                  "\xC3\xA9",
                                                  "e\xCC\x81",
                                                  "\xE6\x97\xA5",
                                                  "\xF0\x9F\x98\x80",
                                                  "\xE2\x80\xA8",
                                                  "weight",
                                                  "__metadata",
                                                  "~"};
  std::string s;
  int n = static_cast<int>(rng() % 6);
  for (int i = 0; i < n; ++i) s += pieces[rng() % pieces.size()];
  return s;
}

// Renders a JSON string escaping every character it can (\uXXXX for all of ASCII, surrogate
// pairs for astral characters): valid, but as far from canonical as possible.
std::string escape_everything(const std::string& s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    uint32_t cp;
    size_t len;
    if (c < 0x80) {
      cp = c;
      len = 1;
    } else if (c < 0xE0) {
      cp = c & 0x1F;
      len = 2;
    } else if (c < 0xF0) {
      cp = c & 0x0F;
      len = 3;
    } else {
      cp = c & 0x07;
      len = 4;
    }
    for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    i += len;
    char buf[16];
    if (cp >= 0x10000) {
      uint32_t v = cp - 0x10000;
      snprintf(buf, sizeof buf, "\\u%04X\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
    } else {
      snprintf(buf, sizeof buf, "\\u%04x", cp);
    }
    out += buf;
  }
  return out + "\"";
}

std::string render(const Metadata& meta, std::vector<TensorInfo> tensors, std::mt19937_64& rng,
                   int style) {
  std::shuffle(tensors.begin(), tensors.end(), rng);
  const char* ws = style == 1 ? "\n  " : style == 2 ? " \t" : "";
  auto str = [&](const std::string& s) {
    if (style == 3) return escape_everything(s);
    std::string o;
    detail::append_json_string(o, s);
    return o;
  };
  std::vector<std::string> items;
  for (const auto& t : tensors) {
    std::vector<std::string> fields = {
        std::string("\"dtype\":") + ws + "\"" + std::string(dtype_name(t.dtype)) + "\"",
        std::string("\"shape\":") + ws + "[" +
            [&] {
              std::string d;
              for (size_t i = 0; i < t.shape.size(); ++i)
                d += (i ? "," : "") + std::string(ws) + std::to_string(t.shape[i]);
              return d;
            }() +
            "]",
        std::string("\"data_offsets\":[") + std::to_string(t.begin) + "," + ws +
            std::to_string(t.end) + "]"};
    std::shuffle(fields.begin(), fields.end(), rng);
    std::string e =
        str(t.name) + ":" + ws + "{" + fields[0] + "," + ws + fields[1] + "," + fields[2] + "}";
    items.push_back(e);
  }
  if (!meta.empty()) {
    std::string m = "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : meta) {
      m += (first ? "" : ",") + str(k) + ":" + ws + str(v);
      first = false;
    }
    items.insert(items.begin() + static_cast<long>(rng() % (items.size() + 1)), m + "}");
  }
  std::string out = std::string(ws) + "{";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + std::string(ws) + items[i];
  out += std::string(ws) + "}" + ws;
  if (style == 0) out += std::string(rng() % 20, ' ');  // any amount of padding
  return out;
}

TEST(RoundTripProperty, RandomFilesRewriteCanonically) {
  std::mt19937_64 rng(12345);
  for (int iter = 0; iter < 300; ++iter) {
    std::vector<TensorData> tensors;
    std::vector<std::vector<std::byte>> storage;
    std::set<std::string> names;
    int n = static_cast<int>(rng() % 8);
    for (int i = 0; i < n; ++i) {
      std::string name = random_name(rng);
      if (name == "__metadata__" || !names.insert(name).second) continue;
      TensorData t;
      t.name = name;
      t.dtype = all_dtypes()[rng() % kDtypeCount];
      int rank = static_cast<int>(rng() % 4);
      for (int d = 0; d < rank; ++d) t.shape.push_back(rng() % 4);
      auto bytes = tensor_bytes(t.dtype, t.shape);
      if (!bytes) {  // sub-byte count not whole bytes: use 4 elements (whole for F4 and F6)
        t.shape = {4};
        bytes = tensor_bytes(t.dtype, t.shape);
      }
      std::vector<std::byte> data(*bytes);
      for (auto& b : data) b = static_cast<std::byte>(rng());
      storage.push_back(std::move(data));
      tensors.push_back(std::move(t));
    }
    for (size_t i = 0; i < tensors.size(); ++i) tensors[i].bytes = storage[i];
    Metadata meta;
    for (int i = static_cast<int>(rng() % 3); i > 0; --i) meta[random_name(rng)] = random_name(rng);

    std::vector<std::byte> canonical = serialize(tensors, meta);
    File ref = File::from_bytes(canonical);
    ASSERT_TRUE(ref.is_canonical());
    for (int style = 0; style < 4; ++style) {
      SCOPED_TRACE("iteration " + std::to_string(iter) + " style " + std::to_string(style));
      std::string header = render(meta, ref.tensors(), rng, style);
      auto data = ref.mapped_data();
      File f = File::from_bytes(test::make_file(header, {data.begin(), data.end()}));
      EXPECT_EQ(f.metadata(), meta);
      ASSERT_EQ(f.tensors().size(), tensors.size());
      for (const auto& t : tensors) {
        auto v = f.view(t.name);
        EXPECT_TRUE(std::equal(v.bytes().begin(), v.bytes().end(), t.bytes.begin(), t.bytes.end()));
      }
      Writer w = Writer::to_memory();
      w.set_metadata(f.metadata());
      for (const auto& t : f.tensors()) w.declare(t.name, t.dtype, t.shape);
      for (const auto& t : w.layout()) w.copy_from(t.name, f, t.name);
      w.commit();
      EXPECT_EQ(w.take_bytes(), canonical);
    }
  }
}

}  // namespace
}  // namespace tlio
