// Pieces shared by the model-file writers: tensors filled on demand (streamed to disk) and a checked output file.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace cai {

// Writes exactly n_bytes of a tensor's data into dst. Called once, when the writer reaches that tensor, so a
// generator never has to hold more than one tensor in memory.
using TensorFill = std::function<Status(uint8_t* dst, size_t n_bytes)>;

// A fill that copies bytes the writer keeps (small tensors, tests).
TensorFill fill_from_bytes(std::vector<uint8_t> bytes);

struct PendingTensor {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // PyTorch order: outermost first, innermost (contiguous) last
  size_t n_bytes = 0;
  TensorFill fill;
};

// Checks the shape (1..4 dims, none negative, innermost a multiple of the dtype's block) and computes n_bytes.
Result<PendingTensor> make_pending_tensor(std::string name, DType dtype, std::vector<int64_t> shape, TensorFill fill);

// A file opened for writing whose every failure comes back as a Status naming the path.
class OutputFile {
 public:
  static Result<OutputFile> create(const std::string& path);
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&&) = delete;
  OutputFile(const OutputFile&) = delete;
  ~OutputFile();

  Status write(const void* data, size_t n);
  Status write_zeros(size_t n);
  // Fills the tensor into `scratch` (grown as needed, reused across tensors) and writes it.
  Status write_tensor(const PendingTensor& t, std::vector<uint8_t>& scratch);
  uint64_t position() const { return position_; }
  Status close();

 private:
  OutputFile(std::FILE* f, std::string path) : file_(f), path_(std::move(path)) {}
  std::FILE* file_ = nullptr;
  std::string path_;
  uint64_t position_ = 0;
};

}  // namespace cai
