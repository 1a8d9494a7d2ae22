// tlio/weights_kind.hpp: what a location holds, asked once. Every command, binding and
// operation that takes "a file, a model folder or a GGUF file" asks this one function (through
// Weights::open and the rewrites of tlio/rewrite.hpp) rather than probing on its own.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tlio/export.hpp"
#include "tlio/file.hpp"

namespace tlio {

enum class WeightsKind : uint8_t {
  safetensors,   ///< one safetensors file (or standard input, "-")
  model_folder,  ///< a model folder: shards with their index, or model.safetensors (tlio/model.hpp)
  gguf,          ///< a GGUF file, or the first of llama.cpp's split set (tlio/gguf.hpp)
};

/// "safetensors", "model folder", "gguf": the kind as messages and reports name it.
TLIO_API std::string_view weights_kind_name(WeightsKind kind) noexcept;

/// What `location` holds: a GGUF file when is_gguf_location says so (a .gguf name, or a local
/// file starting with GGUF's magic), a model folder when is_model_directory does, else a
/// safetensors file, whose open says what is wrong with it. Standard input is a safetensors
/// file. Reads no more than a GGUF's magic and a folder's listing (or, where a store has no
/// listings, whether its config.json exists); Error{io} when a server cannot be reached.
TLIO_API WeightsKind weights_kind(const std::string& location, const OpenOptions& options = {});

}  // namespace tlio
