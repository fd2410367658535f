// libFuzzer target: GgufFile::parse on arbitrary bytes; a success must describe tensors inside the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "model/loaders/gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto r = cai::GgufFile::parse(data, size, "fuzz.gguf");
  if (!r.ok()) return 0;
  volatile uint8_t sink = 0;
  for (const cai::GgufTensorInfo& t : (*r)->tensors()) {
    if (t.data < data || t.n_bytes > size || t.data + t.n_bytes > data + size) std::abort();
    if (t.n_bytes > 0) sink = sink + t.data[0] + t.data[t.n_bytes - 1];  // ASan checks these reads
    cai::TensorView v = t.view();
    if (v.n_elements() > 0 && v.n_bytes() != t.n_bytes) std::abort();  // rows() divides by cols()
  }
  return 0;
}
