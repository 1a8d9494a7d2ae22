// gguf_convert/gguf_spm.hpp: a SentencePiece vocabulary (tokenizer.model, a protobuf ModelProto) as
// llama.cpp's "llama" tokenizer keys: pieces, scores and token types, as llama.cpp's converter
// (_create_vocab_sentencepiece) makes them, and the special tokens of tokenizer_config.json.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gguf_convert/gguf_arch.hpp"
#include "tlio/gguf.hpp"

namespace tlio::detail {

/// The largest tokenizer.model read (the largest real ones are a few MiB).
inline constexpr uint64_t kMaxSentencePieceBytes = uint64_t{64} << 20;

struct SentencePiece {
  std::string text;
  float score = 0;
  int32_t type =
      1;  ///< SentencePiece's: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte
};

struct SentencePieceModel {
  std::vector<SentencePiece> pieces;
  bool add_dummy_prefix = true;  ///< normalizer_spec.add_dummy_prefix
};

/// Reads the pieces and the normalizer's add_dummy_prefix of a ModelProto. Error{format,
/// "model"} naming `source` for bytes that are not one (lengths past the end, a bad wire type),
/// more pieces than kMaxGgufVocabulary, or none.
SentencePieceModel parse_sentencepiece(std::span<const std::byte> bytes, const std::string& source);

/// A SentencePiece vocabulary written as tokenizer.json (as transformers' LlamaConverter writes
/// it, and tlio's GGUF import: BPE with byte_fallback), as the model it came from: pieces by id
/// (gaps as unused [PADn] pieces), the unknown token, byte pieces <0xXX>, special added tokens
/// as control ones; each piece a merge makes scored by its first merge's rank (-rank: the first
/// merge scores highest, as llama.cpp's tokenizer merges the highest score first; pieces no
/// merge makes score 0); add_dummy_prefix when the normalizer prepends "▁" or a Metaspace
/// pre-tokenizer adds a prefix space. nullopt for any other tokenizer.json; Error{format,
/// "model"} naming `source` for a malformed one or an id past config.json's `vocab_size`.
std::optional<SentencePieceModel> sentencepiece_of_tokenizer_json(std::string_view json,
                                                                  const std::string& source,
                                                                  uint64_t vocab_size);

/// The tokenizer.* keys of a "llama" vocabulary of config.json's vocab_size entries: the pieces
/// (padded with [PADn], unused), their scores and types (user-defined pieces as normal ones, as
/// llama.cpp's converter reads them), tokenizer_config.json's added_tokens_decoder (control when
/// special, user-defined else, score -1000), BOS/EOS/UNK/padding ids by their text, add_bos
/// (true unless tokenizer_config.json says otherwise), add_eos, add_space_prefix, chat_template.
/// Keys holding llama.cpp's defaults are left out where its converter leaves them out: add_eos
/// unless tokenizer_config.json says, add_space_prefix when true, and an unknown token of id 0
/// where the converter cannot name it (no tokenizer.json: `named_unknown` false).
std::vector<GgufKeyValue> gguf_spm_tokenizer(const SentencePieceModel& model,
                                             const std::string& source,
                                             const std::optional<std::string>& tokenizer_config,
                                             const HfConfig& c, bool named_unknown);

}  // namespace tlio::detail
