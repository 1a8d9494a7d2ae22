// gguf_convert/gguf_vocab.hpp: a Hugging Face tokenizer as llama.cpp's tokenizer.* keys. Byte-level
// BPE
// ("gpt2": tokens, types, merges) with the pre-tokenizer named from its Split patterns, special
// token ids, add_bos/add_eos and the chat template. A tokenizer it cannot name exactly is
// refused by name, never guessed.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf_convert/gguf_arch.hpp"
#include "tlio/gguf.hpp"

namespace tlio::detail {

/// The tokenizer.* keys from tokenizer.json (`source` names it in errors) and
/// tokenizer_config.json (when present), for a vocabulary of config.json's vocab_size entries.
/// Error{format, "model"} for malformed JSON or ids past vocab_size; Error{unsupported} naming
/// a tokenizer model or pre-tokenizer tlio does not export.
std::vector<GgufKeyValue> gguf_tokenizer(std::string_view tokenizer_json, const std::string& source,
                                         const std::optional<std::string>& tokenizer_config,
                                         const HfConfig& c);

/// A vocabulary's special tokens: tokenizer_config.json's (BOS, EOS, UNK and padding by their
/// text in `tokens`; add_bos/add_eos; the chat template), BOS and EOS otherwise config.json's
/// ids. Error{format, "model"} for a token not in `tokens` or malformed JSON.
struct SpecialTokens {
  std::optional<uint64_t> bos, eos, unk, pad;
  std::optional<bool> add_bos, add_eos;
  std::optional<std::string> chat_template;
};
SpecialTokens special_tokens(const std::optional<std::string>& tokenizer_config,
                             const std::vector<std::string>& tokens, const HfConfig& c);

/// The Split regexes, in order, of the pre-tokenizer llama.cpp names `name` ("llama-bpe",
/// "qwen2", "deepseek-v3"'s three), none for "gpt-2" (ByteLevel's own regex), nullopt for a name
/// tlio does not know the regexes of.
std::optional<std::vector<std::string_view>> pre_tokenizer_splits(std::string_view name);

}  // namespace tlio::detail
