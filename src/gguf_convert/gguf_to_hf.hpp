// gguf_convert/gguf_to_hf.hpp: a GGUF file's model as the Hugging Face folder it came from:
// config.json from the architecture's hyperparameter keys, tokenizer.json and tokenizer_config.json
// rebuilt from the tokenizer.* keys (byte-level BPE with a pre-tokenizer whose regex tlio knows, or
// SentencePiece pieces with scores), and
// generation_config.json: the inverse of what export_gguf writes.
#pragma once

#include <optional>
#include <string>

#include "gguf_convert/gguf_arch.hpp"
#include "tlio/gguf.hpp"
#include "tlio/gguf_convert.hpp"

namespace tlio::detail {

/// The hyperparameters of `f` read from `arch`'s keys, as parse_hf_config gives them from
/// config.json. Error{format, "gguf"} naming a missing or mistyped key (a per-layer array is
/// refused by name); block_count is at most the file's tensor count.
HfConfig hf_config_of(const GgufArch& arch, const GgufFile& f);

/// config.json for `c`, its weights in `dtype`; `more`: members of the import's own (a
/// quantization_config).
std::string config_json_of(const GgufArch& arch, const HfConfig& c, Dtype dtype,
                           std::string_view more = {});

/// generation_config.json (BOS and EOS ids), or nullopt without either.
std::optional<std::string> generation_config_of(const HfConfig& c);

/// tokenizer.json rebuilt from the tokenizer.* keys (byte-level BPE "gpt2", SentencePiece
/// "llama"), or nullopt with `why_not` set when it is not rebuilt (another tokenizer model, a
/// pre-tokenizer whose regex tlio does not know, no scores or no merges): it names what it is.
std::optional<std::string> tokenizer_json_of(const GgufFile& f, std::string& why_not);

/// tokenizer_config.json: special tokens by their text, add_bos/add_eos, the chat template.
std::string tokenizer_config_of(const GgufFile& f, const HfConfig& c);

}  // namespace tlio::detail
