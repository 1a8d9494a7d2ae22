// gguf_convert/gguf_rope.cpp: rope_scaling to GGUF and back (gguf_rope.hpp).
#include "gguf_convert/gguf_rope.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <span>

#include "gguf/gguf_writer.hpp"
#include "tlio/error.hpp"
#include "tlio/ggml.hpp"

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

// LongRoPE's factor list `key`: `pairs` numbers, each as float32 (as torch.tensor takes them).
std::vector<float> factor_list(simdjson::dom::object o, const JsonDoc& doc, std::string_view key,
                               uint64_t pairs) {
  simdjson::dom::array a;
  if (o[key].get_array().get(a) != simdjson::SUCCESS || a.size() != pairs)
    doc.fail("rope_scaling", fmt::format("LongRoPE's {} is not a list of {} numbers (half the "
                                         "rotated part of a head)",
                                         key, pairs));
  std::vector<float> out;
  out.reserve(pairs);
  for (simdjson::dom::element v : a) {
    double d;
    int64_t i;
    if (v.get_double().get(d) != simdjson::SUCCESS) {
      if (v.get_int64().get(i) != simdjson::SUCCESS)
        doc.fail("rope_scaling",
                 fmt::format("LongRoPE's {} holds a value that is not a number", key));
      d = static_cast<double>(i);
    }
    if (!(d > 0) || !std::isfinite(static_cast<float>(d)))
      doc.fail("rope_scaling", fmt::format("LongRoPE's {} holds {}, not a positive float", key, d));
    out.push_back(static_cast<float>(d));
  }
  return out;
}

// A context length given as a JSON number: a whole number from 1 to 2^32 - 1 (checked before
// the cast: a negative or huge double has no integer value).
std::optional<uint64_t> context_of(double v) {
  if (!(v >= 1 && v <= UINT32_MAX) || v != std::floor(v)) return std::nullopt;
  return static_cast<uint64_t>(v);
}

// transformers' LongRoPE attention factor for a context `factor` times the original's.
double longrope_attention(double factor, uint64_t original_context) {
  return factor <= 1.0
             ? 1.0
             : std::sqrt(1 + std::log(factor) / std::log(static_cast<double>(original_context)));
}

// Phi-3's LongRoPE: both factor lists, the original context (rope_scaling's, as the converter
// takes it first, else config.json's, else transformers' default), and the attention factor
// transformers computes: its own where given, else from factor, else from the contexts' ratio
// (the converter always takes the ratio; they differ only where config.json gives either).
void parse_longrope(RopeScaling& r, simdjson::dom::object o, const JsonDoc& doc,
                    uint64_t rotated_pairs) {
  r.kind = RopeScaling::Kind::longrope;
  r.long_factor = factor_list(o, doc, "long_factor", rotated_pairs);
  r.short_factor = factor_list(o, doc, "short_factor", rotated_pairs);
  // transformers takes config.json's top-level one, the converter rope_scaling's: both, if
  // there, must agree.
  const std::optional<double> own = member_number(o, doc, "original_max_position_embeddings");
  const std::optional<uint64_t> top = doc.optional_uint("original_max_position_embeddings");
  const std::optional<uint64_t> original = own ? context_of(*own) : top;
  if ((own && (!original || *original < 2)) || (top && original != top))
    doc.fail("rope_scaling",
             "LongRoPE's original_max_position_embeddings is not a u32 above 1, or rope_scaling's "
             "and config.json's differ");
  r.original_context = original.value_or(kPhi3OriginalContext);
  if (r.original_context < 2 || r.original_context > UINT32_MAX)
    doc.fail("rope_scaling", "LongRoPE's original_max_position_embeddings is not a u32 above 1");
  const double ratio = static_cast<double>(doc.required_uint("max_position_embeddings")) /
                       static_cast<double>(r.original_context);
  const std::optional<double> factor = member_number(o, doc, "factor");
  r.attention_factor = member_number(o, doc, "attention_factor");
  if (!r.attention_factor)
    r.attention_factor = longrope_attention(factor.value_or(ratio), r.original_context);
  if (!(*r.attention_factor > 0))
    doc.fail("rope_scaling", "LongRoPE's attention_factor is not positive");
  r.factor = std::max(1.0, factor.value_or(ratio));
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

RopeScaling parse_rope_scaling(const JsonDoc& doc, const std::string& source,
                               uint64_t rotated_pairs, RopeExtras extras) {
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
    r.original_context = original ? context_of(*original).value_or(0)
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
  } else if ((kind == "longrope" || kind == "su") && extras.longrope) {
    parse_longrope(r, o, doc, rotated_pairs);
  } else {
    refuse(source, fmt::format("config.json's rope_scaling of type \"{}\" is not exported to "
                               "GGUF for this architecture (linear, llama3 and yarn are; "
                               "longrope for Phi-3)",
                               kind));
  }
  for (const auto [key, value] : o) {
    const bool yarn = r.kind == RopeScaling::Kind::yarn;
    // YaRN's truncate and DeepSeek's mscale have no keys (RopeExtras says when they are taken).
    const bool longrope = r.kind == RopeScaling::Kind::longrope;
    const bool known =
        key == "rope_type" || key == "type" || key == "factor" || key == "rope_theta" ||
        key == "partial_rotary_factor" ||
        (r.kind == RopeScaling::Kind::llama3 &&
         (key == "low_freq_factor" || key == "high_freq_factor" ||
          key == "original_max_position_embeddings")) ||
        (yarn && (key == "original_max_position_embeddings" || key == "beta_fast" ||
                  key == "beta_slow" || key == "extrapolation_factor" ||
                  key == "attention_factor" || (key == "truncate" && value.is_bool()) ||
                  (extras.mscale && (key == "mscale_all_dim" || key == "mscale")))) ||
        (longrope && (key == "long_factor" || key == "short_factor" ||
                      key == "original_max_position_embeddings" || key == "attention_factor"));
    if (!known)
      refuse(source,
             fmt::format("config.json's rope_scaling has {}, which llama.cpp has no key for", key));
  }
  if (r.kind == RopeScaling::Kind::longrope) return r;  // its factor: the contexts' ratio
  r.factor = factor.value_or(r.kind == RopeScaling::Kind::llama3 ? kLlama3Factor : 0.0);
  if (!(r.factor >= 1.0)) doc.fail("rope_scaling", "rope_scaling's factor is missing or below 1");
  return r;
}

std::vector<GgufKeyValue> rope_scaling_keys(const std::string& arch, const RopeScaling& r) {
  if (r.kind == RopeScaling::Kind::longrope)  // the factors are tensors (rope_tensors)
    return {{arch + ".rope.scaling.original_context_length",
             gguf_u32(static_cast<uint32_t>(r.original_context))},
            {arch + ".rope.scaling.attn_factor",
             gguf_f32(static_cast<float>(r.attention_factor.value_or(1.0)))}};
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

std::vector<std::pair<std::string_view, std::vector<float>>> rope_tensors(const RopeScaling& r,
                                                                          double theta,
                                                                          uint64_t head_dim) {
  if (r.kind == RopeScaling::Kind::llama3)
    return {{kRopeFreqsName, llama3_rope_factors(r, theta, head_dim)}};
  if (r.kind == RopeScaling::Kind::longrope)
    return {{kRopeLongName, r.long_factor}, {kRopeShortName, r.short_factor}};
  return {};
}

bool is_rope_tensor(const RopeScaling& r, std::string_view name) {
  return (r.kind == RopeScaling::Kind::llama3 && name == kRopeFreqsName) ||
         (r.kind == RopeScaling::Kind::longrope &&
          (name == kRopeLongName || name == kRopeShortName));
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

// LongRoPE from a file's two factor tensors, its original context and attention factor (llama.cpp
// takes 1 without the key); the factor is left out where transformers computes it.
RopeScaling longrope_of(const GgufFile& f, const std::string& arch, uint64_t rotated_pairs,
                        uint64_t context_length) {
  RopeScaling r;
  r.kind = RopeScaling::Kind::longrope;
  for (const auto& [name, factors] :
       {std::pair(kRopeLongName, &r.long_factor), std::pair(kRopeShortName, &r.short_factor)}) {
    const GgufTensorInfo* t = f.tensor(name);
    if (!t || t->ne.size() != 1 || t->ne[0] != rotated_pairs || t->type != ggml_id(GgmlTypeId::F32))
      throw Error(ErrorCode::format, Rule::gguf, std::string(name), std::nullopt,
                  fmt::format("LongRoPE needs {} and {}, each F32 of {} factors (half the "
                              "rotated part of a head)",
                              kRopeLongName, kRopeShortName, rotated_pairs),
                  f.name());
    factors->resize(rotated_pairs);
    f.read_values(*t, 0, rotated_pairs, Dtype::F32, std::as_writable_bytes(std::span(*factors)));
    if (!std::all_of(factors->begin(), factors->end(),
                     [](float v) { return v > 0 && std::isfinite(v); }))
      throw Error(ErrorCode::format, Rule::gguf, std::string(name), std::nullopt,
                  "a LongRoPE factor is not a positive finite number", f.name());
  }
  const std::string key = arch + ".rope.scaling.original_context_length";
  const GgufValue* original = f.find(key);
  r.original_context = original ? original->as_uint().value_or(0) : 0;
  if (r.original_context < 2 || r.original_context > UINT32_MAX)
    throw Error(ErrorCode::format, Rule::gguf, key, std::nullopt,
                "LongRoPE without an original context length above 1", f.name());
  const GgufValue* attn = f.find(arch + ".rope.scaling.attn_factor");
  const double written = attn ? attn->as_double().value_or(0) : 1.0;
  if (!(written > 0) || !std::isfinite(written))
    throw Error(ErrorCode::format, Rule::gguf, arch + ".rope.scaling.attn_factor", std::nullopt,
                "LongRoPE's attention factor is not a positive number", f.name());
  const double ratio =
      static_cast<double>(context_length) / static_cast<double>(r.original_context);
  r.factor = std::max(1.0, ratio);
  if (static_cast<float>(written) !=
      static_cast<float>(longrope_attention(ratio, r.original_context)))
    r.attention_factor = written;
  return r;
}

}  // namespace

RopeScaling rope_scaling_of(const GgufFile& f, const std::string& arch, double theta,
                            uint64_t head_dim, uint64_t rotated_pairs, uint64_t context_length,
                            bool longrope) {
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
  if (f.tensor(kRopeLongName) || f.tensor(kRopeShortName)) {
    if (r.kind != RopeScaling::Kind::none || f.tensor(kRopeFreqsName) || !longrope)
      throw Error(ErrorCode::unsupported, Rule::gguf, std::string(kRopeLongName), std::nullopt,
                  fmt::format("LongRoPE's factors beside another RoPE scaling, or for {} (they are "
                              "imported for phi3)",
                              arch),
                  f.name());
    return longrope_of(f, arch, rotated_pairs, context_length);
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
  const auto real = [](auto v) {  // a float printed as its shortest float32 text
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
    case RopeScaling::Kind::longrope: {
      // float32 values printed shortest: read back as a double and rounded, each is itself
      const auto list = [&](const std::vector<float>& v) {
        std::string out;
        for (const float x : v) out += fmt::format("{}{}", out.empty() ? "" : ", ", real(x));
        return out;
      };
      return fmt::format(
          ",\n  \"rope_scaling\": {{{}\"long_factor\": [{}], "
          "\"original_max_position_embeddings\": {}, \"rope_type\": \"longrope\", "
          "\"short_factor\": [{}]}}",
          r.attention_factor ? fmt::format("\"attention_factor\": {}, ", real(*r.attention_factor))
                             : "",
          list(r.long_factor), r.original_context, list(r.short_factor));
    }
  }
  return {};
}

}  // namespace tlio::detail
