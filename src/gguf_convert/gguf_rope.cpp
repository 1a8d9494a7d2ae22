// gguf_convert/gguf_rope.cpp: rope_scaling to GGUF and back (gguf_rope.hpp).
#include "gguf_convert/gguf_rope.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <span>

#include "gguf/gguf_writer.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

namespace {

// What llama.cpp's converter takes when config.json leaves Llama 3's parameters out.
constexpr double kLlama3Factor = 8.0, kLlama3Low = 1.0, kLlama3High = 4.0;
constexpr uint64_t kLlama3OriginalContext = 8192;

// YaRN's optional parameters and their GGUF keys (after {arch}.rope.scaling.), in the order
// llama.cpp's converter writes them.
constexpr std::pair<std::string_view, std::optional<double> RopeScaling::*> kYarnKeys[] = {
    {"yarn_ext_factor", &RopeScaling::extrapolation_factor},
    {"yarn_attn_factor", &RopeScaling::attention_factor},
    {"yarn_beta_fast", &RopeScaling::beta_fast},
    {"yarn_beta_slow", &RopeScaling::beta_slow},
};

[[noreturn]] void refuse(const std::string& source, const std::string& what) {
  throw Error(ErrorCode::unsupported, Rule::model, "rope_scaling", std::nullopt, what, source);
}

std::optional<double> member_number(simdjson::dom::object o, const JsonDoc& doc,
                                    std::string_view key) {
  const auto v = o[key];
  if (v.error() || v.is_null()) return std::nullopt;
  double d;
  if (v.get_double().get(d) == simdjson::SUCCESS && std::isfinite(d)) return d;
  int64_t i;
  if (v.get_int64().get(i) == simdjson::SUCCESS) return static_cast<double>(i);
  doc.fail("rope_scaling", fmt::format("rope_scaling's {} is not a number", key));
}

}  // namespace

std::optional<simdjson::dom::element> rope_parameters(const JsonDoc& doc, bool sliding) {
  simdjson::dom::element all, own;
  if (doc.root()["rope_parameters"].get(all) != simdjson::SUCCESS || all.is_null())
    return std::nullopt;
  if (all[sliding ? "sliding_attention" : "full_attention"].get(own) == simdjson::SUCCESS)
    return own;
  return sliding ? std::nullopt : std::optional(all);
}

std::optional<double> rope_parameter(const JsonDoc& doc, const char* key, bool sliding) {
  const std::optional<simdjson::dom::element> rope = rope_parameters(doc, sliding);
  simdjson::dom::element v;
  if (!rope || (*rope)[key].get(v) != simdjson::SUCCESS || v.is_null()) return std::nullopt;
  double d;
  if (v.get_double().get(d) != simdjson::SUCCESS)
    doc.fail("rope_parameters", fmt::format("rope_parameters' {}{} is not a number",
                                            sliding ? "sliding_attention " : "", key));
  return d;
}

RopeScaling parse_rope_scaling(const JsonDoc& doc, const std::string& source, YarnExtras extras) {
  RopeScaling r;
  simdjson::dom::element member;
  if (doc.root()["rope_scaling"].get(member) != simdjson::SUCCESS || member.is_null()) {
    // transformers 5 writes rope_parameters (with rope_theta; per kind of layer where they differ)
    const std::optional<simdjson::dom::element> rope = rope_parameters(doc);
    if (!rope) return r;
    member = *rope;
  }
  simdjson::dom::object o;
  if (member.get_object().get(o) != simdjson::SUCCESS)
    doc.fail("rope_scaling", "rope_scaling is not an object");
  std::string_view kind;
  if (o["rope_type"].get_string().get(kind) != simdjson::SUCCESS &&
      o["type"].get_string().get(kind) != simdjson::SUCCESS)
    doc.fail("rope_scaling", "rope_scaling has no rope_type");
  if (kind == "default") return r;
  const std::optional<double> factor = member_number(o, doc, "factor");
  if (kind == "linear") {
    r.kind = RopeScaling::Kind::linear;
  } else if (kind == "llama3") {
    r.kind = RopeScaling::Kind::llama3;
    r.low_freq_factor = member_number(o, doc, "low_freq_factor").value_or(kLlama3Low);
    r.high_freq_factor = member_number(o, doc, "high_freq_factor").value_or(kLlama3High);
    // rope_scaling's, as transformers reads it (llama.cpp's converter reads a top-level key,
    // which Llama 3.x configs do not have, and so takes 8192, which is also theirs).
    const std::optional<double> original =
        member_number(o, doc, "original_max_position_embeddings");
    r.original_context = original ? static_cast<uint64_t>(*original)
                                  : doc.optional_uint("original_max_position_embeddings")
                                        .value_or(kLlama3OriginalContext);
    if (!(r.high_freq_factor > r.low_freq_factor) || r.low_freq_factor <= 0 ||
        r.original_context == 0)
      doc.fail("rope_scaling",
               "rope_scaling's high_freq_factor must exceed low_freq_factor, both positive, and "
               "original_max_position_embeddings must not be 0");
  } else if (kind == "yarn") {
    r.kind = RopeScaling::Kind::yarn;
    const std::optional<double> original =
        member_number(o, doc, "original_max_position_embeddings");
    if (!original || !(*original >= 1) || *original > UINT32_MAX)
      doc.fail("rope_scaling",
               "YaRN's rope_scaling needs original_max_position_embeddings (a positive u32)");
    r.original_context = static_cast<uint64_t>(*original);
    r.beta_fast = member_number(o, doc, "beta_fast");
    r.beta_slow = member_number(o, doc, "beta_slow");
    r.extrapolation_factor = member_number(o, doc, "extrapolation_factor");
    r.attention_factor = member_number(o, doc, "attention_factor");
    std::ignore = o["truncate"].get_bool().get(r.truncate);
    if (!r.truncate && !extras.untruncated)
      refuse(source,
             "config.json's YaRN has truncate false: llama.cpp always rounds the ramp's "
             "ends, so its RoPE would not be this model's");
    if (extras.mscale) {
      r.mscale_all_dim = member_number(o, doc, "mscale_all_dim");
      const std::optional<double> mscale = member_number(o, doc, "mscale");
      if (mscale && r.mscale_all_dim != mscale)
        refuse(source,
               "config.json's YaRN mscale differs from mscale_all_dim: llama.cpp's graph "
               "has the second alone");
    }
  } else {
    refuse(source, fmt::format("config.json's rope_scaling of type \"{}\" is not exported to "
                               "GGUF (linear, llama3 and yarn are)",
                               kind));
  }
  for (const auto [key, value] : o) {
    const bool yarn = r.kind == RopeScaling::Kind::yarn;
    // YaRN's truncate and DeepSeek's mscale have no keys (YarnExtras says when they are taken).
    const bool known =
        key == "rope_type" || key == "type" || key == "factor" || key == "rope_theta" ||
        key == "partial_rotary_factor" ||
        (r.kind == RopeScaling::Kind::llama3 &&
         (key == "low_freq_factor" || key == "high_freq_factor" ||
          key == "original_max_position_embeddings")) ||
        (yarn && (key == "original_max_position_embeddings" || key == "beta_fast" ||
                  key == "beta_slow" || key == "extrapolation_factor" ||
                  key == "attention_factor" || (key == "truncate" && value.is_bool()) ||
                  (extras.mscale && (key == "mscale_all_dim" || key == "mscale"))));
    if (!known)
      refuse(source,
             fmt::format("config.json's rope_scaling has {}, which llama.cpp has no key for", key));
  }
  r.factor = factor.value_or(r.kind == RopeScaling::Kind::llama3 ? kLlama3Factor : 0.0);
  if (!(r.factor >= 1.0)) doc.fail("rope_scaling", "rope_scaling's factor is missing or below 1");
  return r;
}

std::vector<GgufKeyValue> rope_scaling_keys(const std::string& arch, const RopeScaling& r) {
  if (r.kind != RopeScaling::Kind::linear && r.kind != RopeScaling::Kind::yarn) return {};
  const bool yarn = r.kind == RopeScaling::Kind::yarn;
  std::vector<GgufKeyValue> kv = {
      {arch + ".rope.scaling.type", gguf_string(yarn ? "yarn" : "linear")},
      {arch + ".rope.scaling.factor", gguf_f32(static_cast<float>(r.factor))}};
  if (!yarn) return kv;
  kv.push_back({arch + ".rope.scaling.original_context_length",
                gguf_u32(static_cast<uint32_t>(r.original_context))});
  for (const auto& [key, value] : kYarnKeys)
    if (const std::optional<double>& v = r.*value)
      kv.push_back(
          {fmt::format("{}.rope.scaling.{}", arch, key), gguf_f32(static_cast<float>(*v))});
  return kv;
}

std::vector<float> llama3_rope_factors(const RopeScaling& r, double theta, uint64_t head_dim) {
  // float32 throughout, as torch computes the converter's expressions; no FMA (GGUF's module).
  const float factor = static_cast<float>(r.factor), low = static_cast<float>(r.low_freq_factor);
  const float span = static_cast<float>(r.high_freq_factor - r.low_freq_factor);
  const float old = static_cast<float>(r.original_context),
              two_pi = static_cast<float>(2 * std::numbers::pi);
  const auto high_wavelen =
      static_cast<float>(static_cast<double>(r.original_context) / r.high_freq_factor);
  const auto low_wavelen =
      static_cast<float>(static_cast<double>(r.original_context) / r.low_freq_factor);
  std::vector<float> out;
  for (uint64_t i = 0; i < head_dim; i += 2) {
    const float exponent = static_cast<float>(i) / static_cast<float>(head_dim);
    const float freq = 1.0f / static_cast<float>(std::pow(theta, static_cast<double>(exponent)));
    const float wavelen = two_pi / freq;
    if (wavelen < high_wavelen) {
      out.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      out.push_back(factor);
    } else {
      const float smooth = (old / wavelen - low) / span;
      out.push_back(1.0f / ((1.0f - smooth) / factor + smooth));
    }
  }
  return out;
}

namespace {

bool same_factors(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::fabs(a[i] - b[i]) > 1e-5f * std::fabs(b[i])) return false;  // an ulp of pow aside
  return true;
}

// A fitted parameter kept to 4 significant digits: what configs hold (1.0, 4.0, 0.5, 32.0).
double round_4(double v) {
  if (v == 0) return 0;
  const double scale = std::pow(10.0, 3 - std::floor(std::log10(std::fabs(v))));
  return std::round(v * scale) / scale;
}

// Llama 3's parameters whose factors are `got`: Llama 3's own (1, 4, 8192), else fitted to the
// smoothed band. There 1/g = (1 - s)/f + s with s = (old / wavelen - low) / (high - low), linear
// in 1/wavelen; only low/old and high/old count, so low is taken as 1 (as in every Llama 3
// config) and two points of the band give high and old; one point, high taken as 4, gives old.
std::optional<RopeScaling> llama3_matching(const std::vector<float>& got, double theta,
                                           uint64_t head_dim) {
  RopeScaling r;
  r.kind = RopeScaling::Kind::llama3;
  r.factor = got.empty() ? 1.0 : static_cast<double>(*std::max_element(got.begin(), got.end()));
  r.original_context = kLlama3OriginalContext;
  if (same_factors(llama3_rope_factors(r, theta, head_dim), got)) return r;
  std::vector<std::pair<double, double>> band;  // (1 / wavelen, s)
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i];
    if (!(g > 1.0 && g < r.factor)) continue;
    const double freq =
        1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(head_dim));
    band.emplace_back(freq / (2 * std::numbers::pi),
                      (1.0 / g - 1.0 / r.factor) / (1.0 - 1.0 / r.factor));
  }
  if (band.empty()) return std::nullopt;
  const auto [x0, s0] = band.front();
  const auto [x1, s1] = band.back();
  double old = 0;
  if (band.size() == 1) {
    old = (s0 * (kLlama3High - kLlama3Low) + kLlama3Low) / x0;
  } else {
    const double slope = (s1 - s0) / (x1 - x0),
                 intercept = s0 - slope * x0;  // old/(high-1), -1/(high-1)
    if (!(intercept < 0)) return std::nullopt;
    r.high_freq_factor = round_4(kLlama3Low - 1.0 / intercept);
    old = slope * (r.high_freq_factor - kLlama3Low);
  }
  if (!(old >= 1 && old < 1e12)) return std::nullopt;
  r.original_context = static_cast<uint64_t>(std::llround(old));
  if (!same_factors(llama3_rope_factors(r, theta, head_dim), got)) return std::nullopt;
  return r;
}

}  // namespace

RopeScaling rope_scaling_of(const GgufFile& f, const std::string& arch, double theta,
                            uint64_t head_dim) {
  RopeScaling r;
  const GgufValue* type = f.find(arch + ".rope.scaling.type");
  const std::string* kind = type ? type->as_string() : nullptr;
  if (kind && (*kind == "linear" || *kind == "yarn")) {
    const GgufValue* factor = f.find(arch + ".rope.scaling.factor");
    const std::optional<double> v = factor ? factor->as_double() : std::nullopt;
    if (!v || !(*v >= 1.0) || !std::isfinite(*v))
      throw Error(ErrorCode::format, Rule::gguf, arch + ".rope.scaling.factor", std::nullopt,
                  fmt::format("{} RoPE scaling without a factor of at least 1", *kind), f.name());
    r.kind = *kind == "yarn" ? RopeScaling::Kind::yarn : RopeScaling::Kind::linear;
    r.factor = *v;
  } else if (kind && *kind != "none") {
    throw Error(ErrorCode::unsupported, Rule::gguf, arch + ".rope.scaling.type", std::nullopt,
                fmt::format("RoPE scaling \"{}\" is not imported to config.json (linear, yarn and "
                            "Llama 3's are)",
                            *kind),
                f.name());
  }
  if (r.kind == RopeScaling::Kind::yarn) {
    const std::string key = arch + ".rope.scaling.original_context_length";
    const GgufValue* original = f.find(key);
    r.original_context = original ? original->as_uint().value_or(0) : 0;
    if (r.original_context == 0)
      throw Error(ErrorCode::format, Rule::gguf, key, std::nullopt,
                  "YaRN RoPE scaling without its original context length", f.name());
    for (const auto& [name, member] : kYarnKeys)
      if (const GgufValue* value = f.find(fmt::format("{}.rope.scaling.{}", arch, name)))
        r.*member = value->as_double();
  }
  const GgufTensorInfo* t = f.tensor(kRopeFreqsName);
  if (!t) return r;
  const uint64_t pairs = head_dim / 2;
  if (r.kind != RopeScaling::Kind::none || t->ne.size() != 1 || t->ne[0] != pairs)
    throw Error(ErrorCode::unsupported, Rule::gguf, std::string(kRopeFreqsName), std::nullopt,
                fmt::format("{} is not Llama 3's {} factors alone", kRopeFreqsName, pairs),
                f.name());
  std::vector<float> got(pairs);
  f.read_values(*t, 0, pairs, Dtype::F32, std::as_writable_bytes(std::span(got)));
  const std::optional<RopeScaling> llama3 = llama3_matching(got, theta, head_dim);
  if (!llama3)
    throw Error(
        ErrorCode::unsupported, Rule::gguf, std::string(kRopeFreqsName), std::nullopt,
        fmt::format("{} holds factors Llama 3's rope_scaling does not give for any parameters",
                    kRopeFreqsName),
        f.name());
  return *llama3;
}

std::string rope_scaling_json(const RopeScaling& r) {
  // Floats keep a decimal point (transformers checks that factor is a float).
  const auto real = [](double v) {
    std::string s = fmt::format("{}", v);
    return s.find_first_of(".e") == std::string::npos ? s + ".0" : s;
  };
  switch (r.kind) {
    case RopeScaling::Kind::none:
      return {};
    case RopeScaling::Kind::linear:
      return fmt::format(",\n  \"rope_scaling\": {{\"factor\": {}, \"rope_type\": \"linear\"}}",
                         real(r.factor));
    case RopeScaling::Kind::llama3:
      return fmt::format(
          ",\n  \"rope_scaling\": {{\"factor\": {}, \"high_freq_factor\": {}, \"low_freq_factor\": {}, "
          "\"original_max_position_embeddings\": {}, \"rope_type\": \"llama3\"}}",
          real(r.factor), real(r.high_freq_factor), real(r.low_freq_factor), r.original_context);
    case RopeScaling::Kind::yarn: {
      std::string members;
      for (const auto& [name, key] :
           {std::pair("attention_factor", &RopeScaling::attention_factor),
            std::pair("beta_fast", &RopeScaling::beta_fast),
            std::pair("beta_slow", &RopeScaling::beta_slow),
            std::pair("extrapolation_factor", &RopeScaling::extrapolation_factor)})
        if (const std::optional<double>& v = r.*key)
          members += fmt::format(", \"{}\": {}", name, real(*v));
      if (r.mscale_all_dim)  // DeepSeek's; llama.cpp's graph is transformers' where mscale equals
                             // it
        members +=
            fmt::format(", \"mscale\": {0}, \"mscale_all_dim\": {0}", real(*r.mscale_all_dim));
      return fmt::format(
          ",\n  \"rope_scaling\": {{\"factor\": {}{}, \"original_max_position_embeddings\": {}, "
          "\"rope_type\": \"yarn\"{}}}",
          real(r.factor), members, r.original_context, r.truncate ? "" : ", \"truncate\": false");
    }
  }
  return {};
}

}  // namespace tlio::detail
