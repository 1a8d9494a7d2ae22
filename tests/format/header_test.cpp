// Tests for tlio/header.hpp: reader rules 1-5, their order, and the messages.
#include "tlio/header.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "test_util.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"

namespace tlio {
namespace {

using test::make_file;

// Parses a whole file image; returns the error (or nullopt when it is accepted).
std::optional<Error> verdict(const std::vector<std::byte>& file) {
  try {
    File::from_buffer(file, "t.safetensors");
    return std::nullopt;
  } catch (const Error& e) {
    return e;
  }
}

std::string rule_of(const std::vector<std::byte>& file) {
  auto e = verdict(file);
  return e ? std::string(e->rule_name()) : "accept";
}

std::vector<std::byte> zeros(size_t n) { return std::vector<std::byte>(n); }

TEST(BadGoldens, EveryFileGetsTheManifestVerdictAndRule) {
  test::Manifest m(test::data_dir() / "bad" / "MANIFEST.json");
  size_t checked = 0;
  for (auto c : m.cases()) {
    std::string_view file = c["file"].get_string().value();
    std::string_view want = c["tlio_verdict"].get_string().value();
    auto bytes = test::read_bytes(test::data_dir() / "bad" / std::string(file));
    auto e = verdict(bytes);
    SCOPED_TRACE(std::string(file) + (e ? std::string(": ") + e->what() : ": accepted"));
    if (want == "accept") {
      EXPECT_FALSE(e.has_value());
    } else {
      ASSERT_TRUE(e.has_value());
      EXPECT_EQ(e->code(), ErrorCode::format);
      EXPECT_EQ(e->rule_name(), std::to_string(c["tlio_rule"].get_int64().value()));
      EXPECT_EQ(std::string(e->what()).rfind(
                    "t.safetensors: rule " + std::string(e->rule_name()) + ": ", 0),
                0u);
    }
    ++checked;
  }
  EXPECT_EQ(checked, 103u);
}

TEST(Rule1, LengthPrefix) {
  EXPECT_EQ(rule_of({}), "1");
  EXPECT_EQ(rule_of(zeros(7)), "1");
  auto f = make_file("{}      ");
  f[0] = std::byte{9};  // N = 9 > 8 available
  EXPECT_EQ(rule_of(f), "1");
  auto big = zeros(16);
  big[0] = std::byte{0x01};
  big[1] = std::byte{0xE1};
  big[2] = std::byte{0xF5};
  big[3] = std::byte{0x05};  // 100,000,001
  EXPECT_EQ(rule_of(big), "1");
  auto e = verdict(big);
  EXPECT_EQ(e->offset(), 0u);
}

// Files that are not safetensors at all are named as what they look like, still under rule 1.
TEST(Rule1, ForeignFilesAreNamed) {
  using namespace std::string_view_literals;
  auto message_of = [](std::string_view bytes) {
    std::vector<std::byte> file(bytes.size());
    std::memcpy(file.data(), bytes.data(), bytes.size());
    auto e = verdict(file);
    EXPECT_TRUE(e.has_value());
    EXPECT_EQ(e->rule(), Rule::r1_length);
    return std::string(e->what());
  };
  const std::pair<std::string_view, std::string_view> cases[] = {
      {"# tlio\n\nA strict, fast tool for model weights.\n", "looks like text (header length"},
      {"{\n  \"architectures\": [\"LlamaForCausalLM\"]\n}\n", "looks like JSON text"},
      // (sv literals keep their NUL bytes; "..." "..." stops a hex escape eating the next letter)
      {"PK\x03\x04\x00\x00\x08\x08\x00\x00"
       "archive/data.pkl"sv,
       "not a safetensors file but a zip archive, as torch.save writes PyTorch checkpoints: convert it with `tlio import`"},
      {"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"sv,
       "a Python pickle, as PyTorch checkpoints before torch 1.6 are: convert it with `tlio import`"},
      {"GGUF\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"sv, "a GGUF file"},
      {"abc", "file is 3 bytes"},
  };
  for (const auto& [bytes, expected] : cases)
    EXPECT_NE(message_of(bytes).find(expected), std::string::npos) << message_of(bytes);
  // A binary prefix that is only a bad length is not guessed at.
  auto big = zeros(16);
  big[7] = std::byte{0x01};
  EXPECT_EQ(verdict(big)->detail().find("looks like"), std::string::npos);
}

TEST(Rule1, ExactlyTheLimitIsAllowed) {
  std::string h = "{}";
  h.resize(kMaxHeaderSize, ' ');
  EXPECT_EQ(rule_of(make_file(h)), "accept");
}

TEST(RuleOrder, SyntaxErrorLaterBeatsBadDtypeEarlier) {
  EXPECT_EQ(rule_of(make_file(R"({"a":{"dtype":"X","shape":[],"data_offsets":[0,4]},"b":})")), "2");
}

TEST(RuleOrder, DuplicateAfterRule4ErrorIsRule2) {
  EXPECT_EQ(rule_of(make_file(R"({"a":{"dtype":"X","shape":[],"data_offsets":[0,4]},"a":1})")),
            "2");
}

TEST(RuleOrder, DuplicateDeepInsideUnknownFieldIsRule2) {
  EXPECT_EQ(rule_of(make_file(
                R"({"a":{"dtype":"F32","shape":[],"data_offsets":[0,4],"x":[{"k":1,"k":2}]}})",
                zeros(4))),
            "2");
}

TEST(RuleOrder, MetadataAfterTensorsStillRule3First) {
  EXPECT_EQ(rule_of(make_file(
                R"({"a":{"dtype":"X","shape":[],"data_offsets":[0,4]},"__metadata__":{"k":1}})")),
            "3");
}

TEST(RuleOrder, Rule4BeforeRule5) {
  // b is misshapen (rule 4), a leaves a gap (rule 5): rule 4 is reported.
  EXPECT_EQ(
      rule_of(make_file(
          R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[8,12]}})",
          zeros(12))),
      "4");
}

TEST(Rule2, UnrepresentableNumbersAreValidJson) {
  // A dim of 2^64 is valid JSON: rule 4, not rule 2, even with a rule-4-free rest.
  EXPECT_EQ(rule_of(make_file(
                R"({"a":{"dtype":"F32","shape":[18446744073709551616],"data_offsets":[0,4]}})",
                zeros(4))),
            "4");
  EXPECT_EQ(
      rule_of(make_file(R"({"a":{"dtype":"F32","shape":[1e999],"data_offsets":[0,4]}})", zeros(4))),
      "4");
  EXPECT_EQ(
      rule_of(make_file(
          R"({"__metadata__":{"k":99999999999999999999999},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
          zeros(4))),
      "3");
  // ...but a syntax error elsewhere still wins.
  EXPECT_EQ(rule_of(make_file(
                R"({"a":{"dtype":"F32","shape":[18446744073709551616],"data_offsets":[0,4]},})",
                zeros(4))),
            "2");
  EXPECT_EQ(
      rule_of(make_file(R"({"a":{"dtype":"F32","shape":[01],"data_offsets":[0,4]}})", zeros(4))),
      "2");
  // A big number inside a string is not touched.
  EXPECT_EQ(rule_of(make_file(R"({"__metadata__":{"k":"99999999999999999999999"}})")), "accept");
}

TEST(Rule2, LeadingWhitespaceAndUnpaddedAccepted) {
  EXPECT_EQ(rule_of(make_file(" \t\n{} \n")), "accept");
  EXPECT_EQ(rule_of(make_file("{}")), "accept");
  EXPECT_EQ(rule_of(make_file(std::string("{}\0", 3))), "2");
}

TEST(Rule2, DeepNestingIsBoundedNotACrash) {
  std::string deep =
      R"({"__metadata__":{"k":)" + std::string(100000, '[') + std::string(100000, ']') + "}}";
  EXPECT_EQ(rule_of(make_file(deep)), "2");
}

TEST(Rule3, MetadataNullAcceptedAsNone) {
  std::vector<std::byte> f = make_file(R"({"__metadata__":null})");
  File file = File::from_buffer(f);
  EXPECT_FALSE(file.header().has_metadata());
  EXPECT_TRUE(file.metadata().empty());
}

TEST(Rule4, ZeroDimMakesTheProductZeroWhateverTheOrder) {
  EXPECT_EQ(
      rule_of(make_file(
          R"({"a":{"dtype":"F32","shape":[18446744073709551615,18446744073709551615,0],"data_offsets":[0,0]}})")),
      "accept");
  EXPECT_EQ(
      rule_of(make_file(
          R"({"a":{"dtype":"F32","shape":[0,18446744073709551615,18446744073709551615],"data_offsets":[0,0]}})")),
      "accept");
}

TEST(Rule4, SubByteCountsMustBeWholeBytes) {
  EXPECT_EQ(
      rule_of(make_file(R"({"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})", zeros(2))),
      "4");
  EXPECT_EQ(rule_of(make_file(R"({"a":{"dtype":"F4","shape":[],"data_offsets":[0,1]}})", zeros(1))),
            "4");
  EXPECT_EQ(
      rule_of(make_file(R"({"a":{"dtype":"F6_E3M2","shape":[4],"data_offsets":[0,3]}})", zeros(3))),
      "accept");
  EXPECT_EQ(
      rule_of(make_file(R"({"a":{"dtype":"F6_E3M2","shape":[2],"data_offsets":[0,2]}})", zeros(2))),
      "4");
}

TEST(Rule4, TensorNamedInError) {
  auto e =
      verdict(make_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", zeros(4)));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->rule_name(), "4");
  EXPECT_EQ(e->tensor(), "w");
  EXPECT_EQ(std::string(e->what()),
            "t.safetensors: rule 4: tensor \"w\" (F32 [2]) needs 8 bytes but data_offsets [0, 4] "
            "span 4");
}

TEST(Rule5, MessageAndOffsetLikeTheSpecExample) {
  // a [0,12) then b claims [16,20): "begins at 16, expected 12".
  std::string h =
      R"({"a":{"dtype":"U8","shape":[12],"data_offsets":[0,12]},"b":{"dtype":"F32","shape":[1],"data_offsets":[16,20]}})";
  auto e = verdict(make_file(h, zeros(20)));
  ASSERT_TRUE(e);
  EXPECT_EQ(std::string(e->what()),
            "t.safetensors: rule 5: tensor \"b\" begins at 16, expected 12");
  EXPECT_EQ(e->tensor(), "b");
  EXPECT_EQ(e->offset(), 8 + h.size() + 16);
}

TEST(Rule5, TrailingAndMissingBytes) {
  std::string h = R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})";
  auto e = verdict(make_file(h, zeros(5)));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->detail(), "data ends at 4, file has 5 data bytes");
  EXPECT_EQ(rule_of(make_file(h, zeros(3))), "5");
  // Too few bytes: the file was cut short, and the message says so, in readable figures.
  std::string big = R"({"a":{"dtype":"U8","shape":[218103808],"data_offsets":[0,218103808]}})";
  auto cut = verdict(make_file(big, zeros(98656)));
  ASSERT_TRUE(cut);
  EXPECT_EQ(cut->detail(),
            "the file ends at 98,656 of 218,103,808 data bytes: truncated (an incomplete download "
            "or copy?)");
  EXPECT_EQ(cut->rule(), Rule::r5_layout);
}

TEST(Rule5, ZeroSizeTensorsMayShareOffsetsInAnyFileOrder) {
  std::string h =
      R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"z":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"y":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})";
  File f = File::from_bytes(make_file(h, zeros(4)));
  ASSERT_EQ(f.tensors().size(), 3u);
  EXPECT_EQ(f.tensors()[0].name, "z");  // (0,0) sorts before (0,4)
  EXPECT_EQ(f.tensors()[1].name, "b");
  EXPECT_EQ(f.tensors()[2].name, "y");
}

TEST(Header, FindSortedNamesAndMetadata) {
  std::string h =
      R"({"__metadata__":{"b":"2","a":"1"},"zeta":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"alpha":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})";
  File f = File::from_bytes(make_file(h, zeros(2)));
  EXPECT_EQ(f.tensors()[0].name, "zeta");  // offset order
  auto names = f.header().sorted_names();
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[0], "alpha");
  EXPECT_EQ(f.header().find("alpha")->begin, 1u);
  EXPECT_EQ(f.header().find("beta"), nullptr);
  EXPECT_THROW(f.header().at("beta"), Error);
  try {
    f.view("beta");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::not_found);
  }
  EXPECT_EQ(f.metadata().begin()->first, "a");
}

TEST(Header, EscapedNamesCompareUnescaped) {
  EXPECT_EQ(
      rule_of(make_file(
          R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"\u0061":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
          zeros(2))),
      "2");
  File f = File::from_bytes(make_file(
      R"({"\u00e9\ud83d\ude00":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", zeros(1)));
  EXPECT_EQ(f.tensors()[0].name, "\xC3\xA9\xF0\x9F\x98\x80");
}

TEST(Header, TensorBytes) {
  uint64_t big[] = {UINT64_MAX, 2};
  EXPECT_FALSE(tensor_bytes(Dtype::U8, big));
  uint64_t z[] = {UINT64_MAX, 0, UINT64_MAX};
  EXPECT_EQ(tensor_bytes(Dtype::F64, z), 0u);
  uint64_t f4[] = {3};
  EXPECT_FALSE(tensor_bytes(Dtype::F4, f4));
  uint64_t six[] = {2, 2};
  EXPECT_EQ(tensor_bytes(Dtype::F6_E2M3, six), 3u);
  EXPECT_EQ(tensor_bytes(Dtype::C64, {}), 8u);
}

}  // namespace
}  // namespace tlio
