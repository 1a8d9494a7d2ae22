// gguf_convert/gguf_rope.hpp: config.json's rope_scaling both ways. Linear scaling and YaRN are
// GGUF keys ({arch}.rope.scaling.type, .factor, YaRN's original context and betas); Llama 3's
// (rope_type "llama3", Llama 3.1 to 3.3) is a tensor, rope_freqs.weight: one factor per rotated
// pair that llama.cpp divides each frequency by, computed as llama.cpp's converter computes it. On
// import the factors are matched back to the parameters that give them. Phi-3's LongRoPE
// (longrope, "su") is two tensors, rope_factors_long.weight and rope_factors_short.weight, and
// its attention factor a key; llama.cpp takes the long factors past the original context.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/json_doc.hpp"
#include "tlio/gguf.hpp"

namespace tlio::detail {

struct RopeScaling {
  enum class Kind : uint8_t { none, linear, llama3, yarn, longrope } kind = Kind::none;
  double factor = 1;
  double low_freq_factor = 1, high_freq_factor = 4;  ///< llama3
  uint64_t original_context = 0;                     ///< llama3, yarn, longrope
  /// YaRN's optional parameters, as config.json names them: beta_fast, beta_slow,
  /// extrapolation_factor, attention_factor. LongRoPE's attention_factor: the one transformers
  /// computes (on import, none where that is the file's).
  std::optional<double> beta_fast, beta_slow, extrapolation_factor, attention_factor;
  /// LongRoPE's per-pair divisors of the frequencies, as float32 (the tensors' type).
  std::vector<float> long_factor, short_factor;
  /// transformers' YaRN truncate: the ramp's ends rounded to whole dimensions, as llama.cpp
  /// always computes it; GGUF has no key for it (its converter drops it).
  bool truncate = true;
  /// DeepSeek's YaRN attention scale (mla): mscale_all_dim, written as 0.1 x it.
  std::optional<double> mscale_all_dim;
};

/// RoPE's base when config.json and the GGUF keys have none (llama.cpp's and transformers').
inline constexpr double kDefaultRopeTheta = 10000.0;

/// The generated tensors: llama3 scaling's, and LongRoPE's.
inline constexpr std::string_view kRopeFreqsName = "rope_freqs.weight";
inline constexpr std::string_view kRopeLongName = "rope_factors_long.weight";
inline constexpr std::string_view kRopeShortName = "rope_factors_short.weight";
/// transformers' Phi-3 original context when config.json has none.
inline constexpr uint64_t kPhi3OriginalContext = 4096;

/// transformers 5's rope_parameters in config.json, as llama.cpp's converter reads it: the
/// full-attention layers' where each kind of layer has its own, else the one member; with
/// `sliding`, the sliding-window layers' own only. nullopt without one (or null).
std::optional<simdjson::dom::element> rope_parameters(const JsonDoc& doc, bool sliding = false);
/// The number `key` of those rope_parameters; nullopt without it (or null), Error{format} for a
/// value that is not a number.
std::optional<double> rope_parameter(const JsonDoc& doc, const char* key, bool sliding = false);

/// What an architecture's RoPE may have beyond the common kinds (GgufArch): DeepSeek's YaRN
/// mscale_all_dim (written as yarn_log_multiplier) with an equal mscale (llama.cpp's graph has no
/// other); YaRN's truncate false (gpt-oss's: llama.cpp always rounds the ramp's ends, its
/// converter drops the key, and for gpt-oss llama.cpp's logits still match transformers'); and
/// LongRoPE (Phi-3's, which llama.cpp reads for phi3).
struct RopeExtras {
  bool mscale = false, untruncated = false, longrope = false;
};

/// config.json's rope_scaling, or transformers 5's rope_parameters (absent, null, or "default":
/// none). A kind llama.cpp has no keys for (dynamic, ...; longrope outside `extras`) or a key it
/// has no place for is Error{unsupported} naming it, never dropped. LongRoPE's factor lists are
/// checked against `rotated_pairs` (half the rotated part of a head).
RopeScaling parse_rope_scaling(const JsonDoc& doc, const std::string& source,
                               uint64_t rotated_pairs, RopeExtras extras = {});

/// The GGUF keys of linear scaling, YaRN and LongRoPE for architecture `arch` (none for the
/// others).
std::vector<GgufKeyValue> rope_scaling_keys(const std::string& arch, const RopeScaling& r);

/// Llama 3's factors (head_dim / 2 of them) for RoPE base `theta`, in llama.cpp's converter's
/// float32 operation order (the frequencies' pow rounded from double: torch's float32 pow may
/// differ from it by an ulp on a few of them).
std::vector<float> llama3_rope_factors(const RopeScaling& r, double theta, uint64_t head_dim);

/// The tensors a scaling is written as, in the converter's order, each F32: Llama 3's
/// rope_freqs.weight (for RoPE base `theta`), LongRoPE's long and short factors; none for the
/// others.
std::vector<std::pair<std::string_view, std::vector<float>>> rope_tensors(const RopeScaling& r,
                                                                          double theta,
                                                                          uint64_t head_dim);
/// Whether `name` is one of the tensors scaling `r` is read from on import.
bool is_rope_tensor(const RopeScaling& r, std::string_view name);

/// The scaling a GGUF file's keys and tensors describe: the keys' kind; for rope_freqs.weight
/// the Llama 3 parameters whose factors equal it (Error{unsupported} when none do); LongRoPE's
/// factor tensors (F32, `rotated_pairs` each; for an architecture that has `longrope` only) with
/// its attention factor, left out where it is the one transformers computes from
/// `context_length`; none without any.
RopeScaling rope_scaling_of(const GgufFile& f, const std::string& arch, double theta,
                            uint64_t head_dim, uint64_t rotated_pairs, uint64_t context_length,
                            bool longrope);

/// config.json's "rope_scaling" member (",\n  \"rope_scaling\": {...}"), or "" for none.
std::string rope_scaling_json(const RopeScaling& r);

}  // namespace tlio::detail
