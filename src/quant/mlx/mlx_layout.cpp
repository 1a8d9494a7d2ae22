// quant/mlx/mlx_layout.cpp: see mlx_layout.hpp.
#include "quant/mlx/mlx_layout.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <map>
#include <optional>
#include <string>

#include "common/checked.hpp"
#include "common/json_doc.hpp"
#include "common/json_text.hpp"
#include "quant/hub/hub_config.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

namespace dom = simdjson::dom;

// config.json's quantization: the top level's parameters, and each module's own (nullopt: false).
struct MlxConfig {
  std::optional<MlxOptions> all;
  std::map<std::string, std::optional<MlxOptions>, std::less<>> modules;
};

// {group_size, bits, mode} of `o`; a member left out or null is the mode's own (mlx-lm's mixed
// recipes write group_size null).
std::optional<MlxOptions> params_of(dom::object o, const JsonDoc& doc, std::string_view where) {
  std::string_view mode_name = "affine";
  dom::element v;
  if (o["mode"].get(v) == simdjson::SUCCESS && !v.is_null() &&
      v.get_string().get(mode_name) != simdjson::SUCCESS)
    doc.fail("quantization", fmt::format("{}mode is not a string", where));
  MlxOptions p;
  if (mode_name == "affine")
    p.mode = MlxMode::affine;
  else if (mode_name == "mxfp4")
    p.mode = MlxMode::mxfp4;
  else if (mode_name == "mxfp8")
    p.mode = MlxMode::mxfp8;
  else if (mode_name == "nvfp4")
    p.mode = MlxMode::nvfp4;
  else
    refuse_undecoded(std::string(where), fmt::format("MLX's quantization mode {} (affine, mxfp4, "
                                                     "mxfp8 and nvfp4 are decoded)",
                                                     quote_name(mode_name)));
  p = {p.mode, mlx_mode_defaults(p.mode).bits, mlx_mode_defaults(p.mode).group};
  for (const auto& [key, member] :
       {std::pair("bits", &MlxOptions::bits), std::pair("group_size", &MlxOptions::group)}) {
    if (o[key].get(v) != simdjson::SUCCESS || v.is_null()) continue;
    if (v.get_uint64().get(p.*member) != simdjson::SUCCESS || p.*member == 0)
      doc.fail("quantization", fmt::format("{}{} is not a positive integer", where, key));
  }
  return p;
}

// The quantization config of an MLX folder: a member without quant_method holding group_size
// and bits (mlx-lm's); else what a lone file tlio quantized records in its metadata; none for
// the Hub's configs.
MlxConfig mlx_config(const TensorSet& set) {
  MlxConfig c;
  std::string_view text = set.quantization_config();
  if (text.empty())
    if (const auto own = set.metadata().find("quantization_config"); own != set.metadata().end())
      text = own->second;
  if (text.empty()) return c;
  const JsonDoc doc(text, "quantization", Rule::quant);
  dom::object root;
  if (doc.root().get_object().get(root) != simdjson::SUCCESS || root["quant_method"].error() == 0 ||
      root["bits"].error() != 0)
    return c;
  c.all = params_of(root, doc, "");
  for (const auto [key, value] : root) {
    if (key == "group_size" || key == "bits" || key == "mode") continue;
    dom::object own;
    bool plain = false;
    if (value.get_bool().get(plain) == simdjson::SUCCESS && !plain)
      c.modules.emplace(std::string(key), std::nullopt);
    else if (value.get_object().get(own) == simdjson::SUCCESS)
      c.modules.emplace(std::string(key), params_of(own, doc, fmt::format("{}'s ", key)));
  }
  return c;
}

// The mode whose codes and scales fill these shapes: bits x group = 32 x words / groups.
std::optional<MlxMode> fp_mode_of(uint64_t bits_per_group) {
  for (MlxMode m : {MlxMode::mxfp4, MlxMode::mxfp8, MlxMode::nvfp4}) {
    const MlxOptions d = mlx_mode_defaults(m);
    if (d.bits * d.group == bits_per_group) return m;
  }
  return std::nullopt;
}

// An affine weight's bits and group: `want`'s where they fit the shapes, else one of the pairs
// that fit with want's group, else the only pair that fits.
MlxOptions affine_params(const TensorInfo& words, uint64_t groups,
                         const std::optional<MlxOptions>& want) {
  // Bounded: a tensor's elements times 32 bits fit in 64 bits (tensor_size), and so do groups
  // times 1024 unless a leading dimension is 0, which leaves the last one unbounded.
  const std::optional<uint64_t> stream_bits = checked_mul(words.shape.back(), 32);
  std::vector<MlxOptions> fits;
  for (uint64_t group : kMlxAffineGroups)
    for (uint64_t bits : kMlxAffineBits)
      if (const auto need = checked_mul(groups, group * bits); need && need == stream_bits)
        fits.push_back({MlxMode::affine, bits, group});
  const auto with = [&](auto pred) -> std::optional<MlxOptions> {
    for (const MlxOptions& f : fits)
      if (pred(f)) return f;
    return std::nullopt;
  };
  if (want && want->mode == MlxMode::affine) {
    if (auto same = with([&](const MlxOptions& f) { return f == *want; })) return *same;
    if (auto group = with([&](const MlxOptions& f) { return f.group == want->group; }))
      return *group;
  }
  if (fits.size() == 1) return fits.front();
  std::vector<std::string> names;
  for (const MlxOptions& f : fits)
    names.push_back(fmt::format("{} bits in groups of {}", f.bits, f.group));
  malformed(words.name,
            fits.empty()
                ? fmt::format("{} {} with {} groups a row fits no MLX affine width and group",
                              quote_name(words.name), shape_text(words.shape), groups)
                : fmt::format("{} {} with {} groups a row may hold {}: config.json's "
                              "quantization says which (read it in its folder)",
                              quote_name(words.name), shape_text(words.shape), groups,
                              fmt::join(names, " or ")));
}

// One weight: <base>.weight's codes with `scales` (and <base>.biases).
QuantizedWeight weight_of(const TensorSet& set, const TensorInfo& words, const TensorInfo& scales,
                          std::string_view base, const MlxConfig& config) {
  const std::string b(base);
  const TensorInfo* biases = set.find(b + ".biases");
  const Shape& ws = words.shape;
  if (ws.size() < 2 || scales.shape.size() != ws.size() ||
      !std::equal(ws.begin(), ws.end() - 1, scales.shape.begin()) || scales.shape.back() == 0)
    malformed(scales.name, fmt::format("{} {} does not go with {} {}: MLX's codes and scales "
                                       "share every dimension but the last",
                                       quote_name(scales.name), shape_text(scales.shape),
                                       quote_name(words.name), shape_text(ws)));
  if (biases && (biases->shape != scales.shape || biases->dtype != scales.dtype))
    malformed(biases->name,
              fmt::format("{} is {} {}; its scales are {} {}", quote_name(biases->name),
                          dtype_name(biases->dtype), shape_text(biases->shape),
                          dtype_name(scales.dtype), shape_text(scales.shape)));
  const uint64_t groups = scales.shape.back();
  std::optional<MlxOptions> want = config.all;
  if (const auto own = config.modules.find(base); own != config.modules.end()) want = own->second;
  MlxOptions p;
  Dtype dtype = scales.dtype;
  if (scales.dtype == Dtype::F32 || scales.dtype == Dtype::F16 || scales.dtype == Dtype::BF16) {
    if (!biases)
      malformed(scales.name, fmt::format("{} has no {}: MLX's affine weights have both",
                                         quote_name(scales.name), quote_name(b + ".biases")));
    p = affine_params(words, groups, want);
  } else if (scales.dtype == Dtype::U8) {
    const std::optional<uint64_t> stream_bits = checked_mul(ws.back(), 32);
    const std::optional<MlxMode> mode = stream_bits && *stream_bits % groups == 0
                                            ? fp_mode_of(*stream_bits / groups)
                                            : std::nullopt;
    if (biases || !mode)
      malformed(scales.name, fmt::format("{} is U8 {} for {} {}: not MLX's mxfp4, mxfp8 or nvfp4{}",
                                         quote_name(scales.name), shape_text(scales.shape),
                                         quote_name(words.name), shape_text(ws),
                                         biases ? " (it has biases)" : ""));
    p = mlx_mode_defaults(*mode);
    dtype = Dtype::BF16;  // mx.dequantize's for these modes
    if (want && want->mode != p.mode)
      malformed(scales.name, fmt::format("config.json says {} for {}, its tensors are {}",
                                         mlx_mode_name(want->mode), b, mlx_mode_name(p.mode)));
    if (const TensorInfo* g = set.find(b + ".global_scale"))
      refuse_undecoded(g->name, fmt::format("{}: MLX's nvfp4 with a global scale is not decoded",
                                            quote_name(g->name)));
  } else {
    malformed(scales.name, fmt::format("{} is {}: MLX's scales are F32, F16, BF16 or U8",
                                       quote_name(scales.name), dtype_name(scales.dtype)));
  }
  QuantizedWeight w;
  w.name = b + ".weight";
  w.scheme = QuantScheme(p);
  w.shape = ws;
  w.shape[w.shape.size() - 1] = groups * p.group;
  w.dtype = dtype;
  add_stored(w, &words);
  add_stored(w, &scales);
  add_stored(w, biases);
  return w;
}

}  // namespace

MlxOptions mlx_mode_defaults(MlxMode mode) noexcept {
  switch (mode) {
    case MlxMode::mxfp4:
      return {mode, 4, 32};
    case MlxMode::mxfp8:
      return {mode, 8, 32};
    case MlxMode::nvfp4:
      return {mode, 4, 16};
    case MlxMode::affine:
      break;
  }
  return {MlxMode::affine, 4, 64};
}

std::string_view mlx_mode_name(MlxMode mode) noexcept {
  constexpr std::string_view names[] = {"affine", "mxfp4", "mxfp8", "nvfp4"};
  const auto i = static_cast<size_t>(mode);
  return i < std::size(names) ? names[i] : "(not a mode)";
}

std::vector<QuantizedWeight> detect_mlx(const TensorSet& set) {
  std::vector<QuantizedWeight> out;
  std::optional<MlxConfig> config;
  for (const TensorInfo* t : set.tensors()) {
    const auto base = strip_suffix(t->name, ".scales");
    if (!base) continue;
    const TensorInfo* words = set.find(std::string(*base) + ".weight");
    if (!words || words->dtype != Dtype::U32) continue;  // another format's scales
    if (!config) config = mlx_config(set);
    out.push_back(weight_of(set, *words, *t, *base, *config));
  }
  return out;
}

}  // namespace tlio::detail
