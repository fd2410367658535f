// libFuzzer target: arbitrary bytes as a GGUF file whose tokenizer.ggml.* metadata builds a Tokenizer; a tokenizer
// that loads must encode sample texts to ids inside its vocabulary and decode (whole and streamed) safely.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/log.h"
#include "model/loaders/gguf.h"
#include "tokenizer/tokenizer.h"

namespace {

void check_ids(const cai::Tokenizer& tok, const std::vector<int32_t>& ids) {
  for (int32_t id : ids)
    if (id < 0 || id >= tok.n_vocab()) std::abort();
}

void round_trip(const cai::Tokenizer& tok, std::string_view text) {
  for (bool parse_special : {true, false}) {
    const auto ids = tok.encode(text, /*add_bos=*/parse_special, parse_special);
    check_ids(tok, ids);
    const std::string whole = tok.decode(ids);
    (void)tok.decode(ids, /*skip_special=*/true);
    cai::Tokenizer::StreamingDecoder stream(tok);
    std::string streamed;
    for (int32_t id : ids) streamed += stream.push(id);
    streamed += stream.flush();
    if (streamed != whole) std::abort();  // the StreamingDecoder contract
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  cai::init_logging("error");  // unknown pre-tokenizers and skipped merges only warn
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = cai::GgufFile::parse(data, size, "fuzz.gguf");
  if (!file.ok()) return 0;
  auto tokenizer = cai::Tokenizer::from_gguf_metadata((*file)->metadata());
  if (!tokenizer.ok()) return 0;
  const cai::Tokenizer& tok = **tokenizer;
  // Sample texts, then the stored pieces of the first tokens run together (special and added tokens among them).
  std::string pieces;
  for (int32_t id = 0; id < tok.n_vocab() && id < 48; ++id) pieces += tok.token_text(id);
  const std::string_view samples[] = {"Hello, world! 123 4567 \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x98\x80\n\n",
                                      "  <s>\xFF a\tb\r\n\xE2\x96\x81x  ", pieces};
  for (std::string_view text : samples) round_trip(tok, text);
  (void)tok.decode(std::vector<int32_t>{-1, 0, tok.n_vocab() - 1, tok.n_vocab()});
  return 0;
}
