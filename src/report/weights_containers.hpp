// report/weights_containers.hpp: the implementations of tlio::Weights, one per container, made
// by Weights::open once weights_kind has said which (a new container adds a unit and a line).
#pragma once

#include <memory>
#include <string>

#include "tlio/weights.hpp"

namespace tlio::detail {

/// One safetensors file (or "-"), its quantized weights found (report/weights_safetensors.cpp).
std::unique_ptr<const Weights> open_file_weights(const std::string& location,
                                                 const OpenOptions& options);
/// A model folder: its shards one namespace, quantized weights over all of them (same unit).
std::unique_ptr<const Weights> open_folder_weights(const std::string& location,
                                                   const OpenOptions& options);
/// A GGUF file: every tensor a decoded reader (report/weights_gguf.cpp).
std::unique_ptr<const Weights> open_gguf_weights(const std::string& location,
                                                 const OpenOptions& options);

}  // namespace tlio::detail
