// gguf_convert/gguf_rope.hpp: config.json's rope_scaling both ways. Linear scaling and YaRN are
// GGUF keys ({arch}.rope.scaling.type, .factor, YaRN's original context and betas); Llama 3's
// (rope_type "llama3", Llama 3.1 to 3.3) is a tensor, rope_freqs.weight: one factor per rotated
// pair that llama.cpp divides each frequency by, computed as llama.cpp's converter computes it. On
// import the factors are matched back to the parameters that give them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/json_doc.hpp"
#include "tlio/gguf.hpp"

namespace tlio::detail {

struct RopeScaling {
  enum class Kind : uint8_t { none, linear, llama3, yarn } kind = Kind::none;
  double factor = 1;
  double low_freq_factor = 1, high_freq_factor = 4;  ///< llama3
  uint64_t original_context = 0;                     ///< llama3, yarn
  /// YaRN's optional parameters, as config.json names them: beta_fast, beta_slow,
  /// extrapolation_factor, attention_factor.
  std::optional<double> beta_fast, beta_slow, extrapolation_factor, attention_factor;
  /// transformers' YaRN truncate: the ramp's ends rounded to whole dimensions, as llama.cpp
  /// always computes it; GGUF has no key for it (its converter drops it).
  bool truncate = true;
  /// DeepSeek's YaRN attention scale (mla): mscale_all_dim, written as 0.1 x it.
  std::optional<double> mscale_all_dim;
};

/// RoPE's base when config.json and the GGUF keys have none (llama.cpp's and transformers').
inline constexpr double kDefaultRopeTheta = 10000.0;

/// The generated tensor llama3 scaling writes.
inline constexpr std::string_view kRopeFreqsName = "rope_freqs.weight";

/// transformers 5's rope_parameters in config.json, as llama.cpp's converter reads it: the
/// full-attention layers' where each kind of layer has its own, else the one member; with
/// `sliding`, the sliding-window layers' own only. nullopt without one (or null).
std::optional<simdjson::dom::element> rope_parameters(const JsonDoc& doc, bool sliding = false);
/// The number `key` of those rope_parameters; nullopt without it (or null), Error{format} for a
/// value that is not a number.
std::optional<double> rope_parameter(const JsonDoc& doc, const char* key, bool sliding = false);

/// What an architecture's YaRN may have beyond llama.cpp's keys (GgufArch): DeepSeek's
/// mscale_all_dim (written as yarn_log_multiplier) with an equal mscale (llama.cpp's graph has no
/// other), and truncate false (gpt-oss's: llama.cpp always rounds the ramp's ends, its converter
/// drops the key, and for gpt-oss llama.cpp's logits still match transformers').
struct YarnExtras {
  bool mscale = false, untruncated = false;
};

/// config.json's rope_scaling, or transformers 5's rope_parameters (absent, null, or "default":
/// none). A kind llama.cpp has no keys for (dynamic, longrope, ...) or a key it has no place for
/// is Error{unsupported} naming it, never dropped.
RopeScaling parse_rope_scaling(const JsonDoc& doc, const std::string& source,
                               YarnExtras extras = {});

/// The GGUF keys of linear scaling and YaRN for architecture `arch` (none for the others).
std::vector<GgufKeyValue> rope_scaling_keys(const std::string& arch, const RopeScaling& r);

/// Llama 3's factors (head_dim / 2 of them) for RoPE base `theta`, in llama.cpp's converter's
/// float32 operation order (the frequencies' pow rounded from double: torch's float32 pow may
/// differ from it by an ulp on a few of them).
std::vector<float> llama3_rope_factors(const RopeScaling& r, double theta, uint64_t head_dim);

/// The scaling a GGUF file's keys and rope_freqs tensor describe: the keys' kind, or for
/// rope_freqs.weight the Llama 3 parameters whose factors equal it (Error{unsupported} when
/// none do); none without either.
RopeScaling rope_scaling_of(const GgufFile& f, const std::string& arch, double theta,
                            uint64_t head_dim);

/// config.json's "rope_scaling" member (",\n  \"rope_scaling\": {...}"), or "" for none.
std::string rope_scaling_json(const RopeScaling& r);

}  // namespace tlio::detail
