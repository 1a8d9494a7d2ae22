// Fuzz target: what a GGUF export reads from a stranger's model folder: the input as
// tokenizer.json (to llama.cpp's tokenizer keys, for a vocabulary of 300: byte-level BPE, or
// SentencePiece's written as BPE with byte fallback), as tokenizer.model
// (SentencePiece's protobuf) and as config.json (the architecture and hyperparameters). Any input
// gives keys or throws tlio::Error.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "gguf_convert/gguf_arch.hpp"
#include "gguf_convert/gguf_spm.hpp"
#include "gguf_convert/gguf_vocab.hpp"
#include "tlio/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  tlio::detail::HfConfig c;
  c.vocab_size = 300;
  c.bos_token_id = 1;
  try {
    (void)tlio::detail::gguf_tokenizer(text, "fuzz/tokenizer.json", std::string(text), c);
  } catch (const tlio::Error&) {
  }
  try {  // as tokenizer.json of a SentencePiece vocabulary (BPE with byte fallback)
    if (const auto spm = tlio::detail::sentencepiece_of_tokenizer_json(text, "fuzz/tokenizer.json",
                                                                       c.vocab_size))
      (void)tlio::detail::gguf_spm_tokenizer(*spm, "fuzz/tokenizer.json", std::string(text), c,
                                             true);
  } catch (const tlio::Error&) {
  }
  try {  // as tokenizer.model (SentencePiece's protobuf), the text as its tokenizer_config.json
    const tlio::detail::SentencePieceModel spm =
        tlio::detail::parse_sentencepiece(std::as_bytes(std::span(text)), "fuzz/tokenizer.model");
    (void)tlio::detail::gguf_spm_tokenizer(spm, "fuzz/tokenizer.model", std::string(text), c,
                                           false);
  } catch (const tlio::Error&) {
  }
  try {
    const tlio::detail::HfConfig parsed = tlio::detail::parse_hf_config(text, "fuzz/config.json");
    (void)tlio::detail::gguf_hyperparameters(tlio::detail::gguf_arch_for(parsed.hf_class), parsed);
  } catch (const tlio::Error&) {
  }
  return 0;
}
