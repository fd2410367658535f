// libFuzzer target: SafetensorsFile::parse on arbitrary bytes; a success must describe tensors inside the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "model/loaders/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto r = cai::SafetensorsFile::parse(data, size, "fuzz.safetensors");
  if (!r.ok()) return 0;
  volatile uint8_t sink = 0;
  for (const cai::SafetensorsTensor& t : (*r)->tensors()) {
    if (t.data < data || t.n_bytes > size || t.data + t.n_bytes > data + size) std::abort();
    if (t.n_bytes > 0) sink = sink + t.data[0] + t.data[t.n_bytes - 1];  // ASan checks these reads
    auto v = t.view();
    if (v.ok() && v->n_elements() > 0 && v->n_bytes() != t.n_bytes) std::abort();  // rows() divides by cols()
  }
  return 0;
}
