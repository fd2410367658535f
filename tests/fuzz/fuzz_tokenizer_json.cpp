// libFuzzer target: arbitrary bytes as tokenizer.json; a tokenizer that loads must encode and decode safely.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto tokenizer = cai::Tokenizer::from_hf_json_text(text);
  if (!tokenizer.ok()) return 0;
  const cai::Tokenizer& tok = **tokenizer;
  for (std::string_view sample : {std::string_view("Hello, world! 123 \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x98\x80\n"),
                                  std::string_view("<s>\xFF a  b")}) {
    const auto ids = tok.encode(sample, /*add_bos=*/true);
    (void)tok.decode(ids);
    (void)tok.decode(ids, /*skip_special=*/true);
    cai::Tokenizer::StreamingDecoder stream(tok);
    for (int32_t id : ids) (void)stream.push(id);
    (void)stream.flush();
  }
  (void)tok.decode(std::vector<int32_t>{-1, 0, tok.n_vocab() - 1, tok.n_vocab()});
  return 0;
}
