// libFuzzer target: arbitrary bytes as a HF config.json (first byte even) or as a GGUF file whose metadata becomes a
// ModelConfig (first byte odd); a config that loads must keep the invariants the layers rely on.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "model/rope_freqs.h"
#include "model/config.h"
#include "model/loaders/gguf.h"

namespace {

cai::Result<cai::ModelConfig> config_from_bytes(bool gguf, const uint8_t* data, size_t size) {
  if (gguf) {
    auto file = cai::GgufFile::parse(data, size, "fuzz.gguf");
    if (!file.ok()) return file.status();
    return cai::config_from_gguf((*file)->metadata());
  }
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json cfg = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (cfg.is_discarded()) return cai::invalid_argument("not JSON");
  return cai::config_from_hf(cfg);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  auto r = config_from_bytes(data[0] & 1, data + 1, size - 1);
  if (!r.ok()) return 0;
  const cai::ModelConfig& c = *r;
  if (c.hidden_size <= 0 || c.num_hidden_layers <= 0 || c.num_attention_heads <= 0 || c.vocab_size <= 0) std::abort();
  if (c.num_key_value_heads <= 0 || c.num_attention_heads % c.num_key_value_heads != 0) std::abort();
  if (c.rope_dim < 0 || c.rope_dim > c.head_dim || c.rope_dim % 2 != 0) std::abort();
  if (!c.rope_freq_divisors.empty() && c.rope_freq_divisors.size() != static_cast<size_t>(c.rope_dim / 2)) std::abort();
  (void)c.rope_params();
  const auto inv_freqs = cai::rope_inv_freqs(c.rope_freq_config());  // what every layer builds at load
  if (inv_freqs.size() != static_cast<size_t>(c.rope_dim / 2)) std::abort();
  return 0;
}
