// Tests for the two walks of format/header_parse.hpp: the On-Demand fast path accepts exactly
// the headers the DOM walk accepts, with the same Header, and hands everything else over.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <tuple>

#include "format/header_parse.hpp"
#include "test_util.hpp"
#include "tlio/dtype.hpp"
#include "tlio/error.hpp"

namespace tlio {
namespace {

struct Walks {
  std::optional<Header> fast;    // nullopt: the fast walk handed over
  std::optional<Header> halves;  // the fast walk splitting every header it can
  std::optional<Header> pieces;  // the fast walk in pieces of a member or two (no halves)
  std::optional<Header> halves_in_pieces;
  std::optional<Header> dom;
  std::string dom_error;
};

// Parses `json` (with padding after it) both ways.
Walks walk_both(std::string_view json, uint64_t data_size) {
  std::vector<std::byte> padded(json.size() + detail::kJsonPadding);
  std::memcpy(padded.data(), json.data(), json.size());
  const std::span<const std::byte> text(padded.data(), json.size());
  Walks w;
  try {
    w.dom = detail::parse_header_dom(text, data_size, true);
  } catch (const Error& e) {
    w.dom_error = e.what();
  }
  constexpr size_t kWhole = ~size_t{0}, kTiny = 60;
  for (auto [walk, split_from, piece_bytes] :
       {std::tuple{&w.fast, kWhole, kWhole}, std::tuple{&w.halves, size_t{0}, kWhole},
        std::tuple{&w.pieces, kWhole, kTiny}, std::tuple{&w.halves_in_pieces, size_t{0}, kTiny}}) {
    try {
      *walk = detail::parse_header_on_demand(text, data_size, split_from, piece_bytes);
    } catch (const Error& e) {
      // Only rules 2 (duplicate names) and 5 are checked after an accepting fast walk.
      EXPECT_EQ(e.what(), w.dom_error) << json;
    }
  }
  EXPECT_EQ(w.fast.has_value(), w.halves.has_value()) << json;
  EXPECT_EQ(w.fast.has_value(), w.pieces.has_value()) << json;
  EXPECT_EQ(w.fast.has_value(), w.halves_in_pieces.has_value()) << json;
  return w;
}

void expect_same(const Header& a, const Header& b) {
  ASSERT_EQ(a.tensors().size(), b.tensors().size());
  for (size_t i = 0; i < a.tensors().size(); ++i) {
    const TensorInfo &x = a.tensors()[i], &y = b.tensors()[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.dtype, y.dtype);
    EXPECT_EQ(std::vector<uint64_t>(x.shape.begin(), x.shape.end()),
              std::vector<uint64_t>(y.shape.begin(), y.shape.end()));
    EXPECT_EQ(x.begin, y.begin);
    EXPECT_EQ(x.end, y.end);
    EXPECT_EQ(a.find(x.name), &x);
  }
  EXPECT_EQ(a.has_metadata(), b.has_metadata());
  EXPECT_EQ(a.metadata(), b.metadata());
}

// Returns whether the fast walk took the header (and, in *valid, whether the DOM walk did).
bool expect_agree(std::string_view json, uint64_t data_size, bool* valid = nullptr) {
  SCOPED_TRACE(std::string(json.substr(0, 300)));
  Walks w = walk_both(json, data_size);
  if (valid) *valid = w.dom.has_value();
  if (w.fast) {
    EXPECT_TRUE(w.dom.has_value())
        << "the fast walk accepted what the DOM walk refuses: " << w.dom_error;
    if (w.dom) expect_same(*w.fast, *w.dom);
  }
  for (const std::optional<Header>* split : {&w.halves, &w.pieces, &w.halves_in_pieces})
    if (*split && w.dom) expect_same(**split, *w.dom);
  return w.fast.has_value();
}

// Every test file's header, with its own data size.
TEST(HeaderWalks, AgreeOnEveryTestFile) {
  size_t files = 0, fast = 0, valid = 0;
  for (const char* folder : {"bad", "hf", "realfiles", "bnb", "bnb_bad", "quant", "numpy"}) {
    const auto dir = test::data_dir() / folder;
    if (!std::filesystem::exists(dir)) continue;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() != ".safetensors") continue;
      const auto bytes = test::read_bytes(entry.path());
      if (bytes.size() < 8) continue;
      uint64_t n = 0;
      for (int i = 7; i >= 0; --i) n = (n << 8) | std::to_integer<uint64_t>(bytes[i]);
      if (n > bytes.size() - 8) continue;  // rule 1: neither walk is reached
      const std::string_view json(reinterpret_cast<const char*>(bytes.data()) + 8, n);
      SCOPED_TRACE(entry.path().string());
      bool ok = false;
      if (expect_agree(json, bytes.size() - 8 - n, &ok)) {
        ++fast;
      } else if (ok) {
        ADD_FAILURE() << "valid, but the fast walk handed it over";
      }
      valid += ok;
      ++files;
    }
  }
  EXPECT_GT(files, 200u);
  EXPECT_GT(valid, 140u);
}

TEST(HeaderWalks, TakesPlainHeaders) {
  EXPECT_TRUE(expect_agree(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4));
  EXPECT_TRUE(expect_agree(
      R"( {"__metadata__":{"format":"pt","x":"\u00e9\n"},"b":{"data_offsets":[4,8],"shape":[],"dtype":"I32"},"a\"q":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}} )",
      8));
  EXPECT_TRUE(expect_agree(R"({"__metadata__":null})", 0));
  EXPECT_TRUE(expect_agree(R"({})", 0));
}

// Headers whose text has `},"` past the middle inside strings, or the metadata in the second
// half, or an error only in one half: the split walk gives what the whole walk gives.
TEST(HeaderWalks, HalvesAgreeWithTheWhole) {
  std::string entries;
  uint64_t offset = 0;
  for (int i = 0; i < 40; ++i) {
    entries += (i ? "," : "") + std::string("\"t") + std::to_string(i) +
               "\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[" + std::to_string(offset) +
               "," + std::to_string(offset + 4) + "]}";
    offset += 4;
  }
  const std::string tail_meta = R"(,"__metadata__":{"k":"},\"x\":{},\"y\":{","z":"},"}})";
  EXPECT_TRUE(expect_agree("{" + entries + "}", offset));
  EXPECT_TRUE(expect_agree("{" + entries + tail_meta, offset));
  EXPECT_TRUE(expect_agree(R"({"__metadata__":{"a":"b"},)" + entries + "}", offset));
  // A name that holds `},"` right past the middle.
  EXPECT_TRUE(expect_agree("{" + entries +
                               R"(,"q},\"r":{"dtype":"U8","shape":[0],"data_offsets":[)" +
                               std::to_string(offset) + "," + std::to_string(offset) + "]}}",
                           offset));
  // The metadata's object ending where the first half is cut (the middle is in its value).
  std::string first, rest;
  for (size_t at = 0, member = 0; at < entries.size(); ++member) {
    const size_t end = entries.find("]},", at);
    const std::string one =
        entries.substr(at, end == std::string::npos ? std::string::npos : end + 2 - at);
    (member < 20 ? first : rest) += (member % 20 ? "," : "") + one;
    at = end == std::string::npos ? entries.size() : end + 3;
  }
  const std::string long_meta =
      R"(,"__metadata__":{"a":"},\"b\":{)" + std::string(200, 'x') + R"("},)";
  EXPECT_TRUE(expect_agree("{" + first + long_meta + rest + "}", offset));
  EXPECT_FALSE(expect_agree(R"({"__metadata__":{},)" + entries + R"(,"__metadata__":{}})", offset));
  EXPECT_FALSE(expect_agree(
      "{" + entries + ",\"t3\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
      offset));                                                 // duplicate across halves
  EXPECT_FALSE(expect_agree("{" + entries + "} x", offset));    // trailing text
  EXPECT_FALSE(expect_agree("{" + entries + "}", offset + 4));  // rule 5
  std::string broken = "{" + entries + "}";
  broken[broken.size() * 3 / 4] = '\x01';  // a control byte late
  EXPECT_FALSE(expect_agree(broken, offset));
  broken = "{" + entries + "}";
  broken[broken.size() / 4] = '\x01';  // and early
  EXPECT_FALSE(expect_agree(broken, offset));
}

TEST(HeaderWalks, TakesEveryDtype) {
  for (int i = 0; i < kDtypeCount; ++i) {
    const Dtype d = static_cast<Dtype>(i);
    const unsigned bytes = dtype_bits(d);  // 8 elements
    const std::string json = "{\"a\":{\"dtype\":\"" + std::string(dtype_name(d)) +
                             "\",\"shape\":[8],\"data_offsets\":[0," + std::to_string(bytes) +
                             "]},\"b\":{\"dtype\":\"" + std::string(dtype_name(d)) +
                             "\",\"shape\":[],\"data_offsets\":[" + std::to_string(bytes) + "," +
                             std::to_string(bytes + (bytes % 8 == 0 ? bytes / 8 : 0)) + "]}}";
    // A scalar of a sub-byte dtype is not whole bytes (rule 4): handed over, still agreeing.
    EXPECT_EQ(expect_agree(json, bytes + (bytes % 8 == 0 ? bytes / 8 : 0)), bytes % 8 == 0)
        << dtype_name(d);
  }
  // Escaped or unknown dtype names go to the DOM walk, which accepts the first.
  bool valid = false;
  EXPECT_FALSE(expect_agree(R"({"a":{"dtype":"F\u0033\u0032","shape":[1],"data_offsets":[0,4]}})",
                            4, &valid));
  EXPECT_TRUE(valid);
  for (const char* bad :
       {"", "F3", "F322", "f32", "F8_E4M3FNUZZ", "F8_E4M3FNUZ\u0000", "F32\u0001"})
    EXPECT_FALSE(expect_agree(
        std::string(R"({"a":{"dtype":")") + bad + R"(","shape":[1],"data_offsets":[0,4]}})", 4));
}

TEST(HeaderWalks, HandsOverWhatItDoesNotTake) {
  // Each is refused, or valid but left to the DOM walk; either way the walks agree.
  for (
      const char* json : {
          R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}} {})",  // trailing value
          R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}x)",
          R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},})",  // trailing comma
          R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],}})",
          R"({"a":{"dtype":"F32","shape":[1,],"data_offsets":[0,4]}})",
          R"({"a":{"dtype":"F32" "shape":[1],"data_offsets":[0,4]}})",  // missing comma
          R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})",
          R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})",
          R"({"a":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}})",
          R"({"a":{"dtype":"F32","shape":[01],"data_offsets":[0,4]}})",
          R"({"a":{"dtype":"F32","shape":[-0],"data_offsets":[0,4]}})",
          R"({"a":{"dtype":"F32","shape":[1e0],"data_offsets":[0,4]}})",
          R"({"a":{"dtype":"F32","shape":[18446744073709551616],"data_offsets":[0,4]}})",
          R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
          R"({"a":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
          R"({"a":{"dt\u0079pe":"F32","shape":[1],"data_offsets":[0,4]}})",  // escaped field name
          R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})",
          R"({"a":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})",
          R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})",
          R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",  // rule 5
          R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
          R"({"__metadata__":{"k":1}})",
          R"({"__metadata__":{"k":"v","k":"w"}})",
          R"({"__metadata__":{},"__metadata__":{}})",
          R"({"__metadata__":nul})",
          R"({"__metadata__":[]})",
          R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
          "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"b\x01\":{}}",
          "{\"\xff\":1}",
          R"([])",
          R"("x")",
          R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4])",  // unclosed
          R"({"a":{"dtype":"F32","shape":[[1]],"data_offsets":[0,4]}})",
          R"({"a":[{"dtype":"F32","shape":[1],"data_offsets":[0,4]}]})",
      }) {
    expect_agree(json, 0);
    expect_agree(json, 4);
  }
  // Names are viewed in the JSON text when they hold no escape: raw control bytes (invalid
  // JSON) must still be refused, and escaped names still compare unescaped.
  for (const char* name : {"c\x01d", "c\td", "c\x1f", "\x7f", "c\\u0001d", "\\u00e9", "\xc3\xa9"}) {
    bool valid = false;
    expect_agree(
        std::string("{\"") + name + R"(":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4,
        &valid);
    const std::string_view n(name);
    const bool raw_control = std::any_of(
        n.begin(), n.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; });
    EXPECT_EQ(valid, !raw_control) << name;
  }
  EXPECT_FALSE(expect_agree(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}} {})", 4));
  EXPECT_FALSE(expect_agree(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],}})", 4));
}

}  // namespace
}  // namespace tlio
