// Shared writer pieces: tensor shape checks, streaming fills and the checked output file.
#include "writers/writer_common.h"

#include <cerrno>
#include <cstring>
#include <memory>

namespace cai {

TensorFill fill_from_bytes(std::vector<uint8_t> bytes) {
  auto owned = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  return [owned](uint8_t* dst, size_t n_bytes) -> Status {
    if (owned->size() != n_bytes) {
      return invalid_argument("tensor data holds {} bytes, its shape needs {}", owned->size(), n_bytes);
    }
    if (n_bytes) std::memcpy(dst, owned->data(), n_bytes);
    return Status::ok_status();
  };
}

Result<PendingTensor> make_pending_tensor(std::string name, DType dtype, std::vector<int64_t> shape, TensorFill fill) {
  if (name.empty()) return invalid_argument("tensor name is empty");
  if (shape.empty() || shape.size() > 4) {
    return invalid_argument("tensor '{}': {} dimensions (1..4 supported)", name, shape.size());
  }
  int64_t n_rows = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) return invalid_argument("tensor '{}': negative dimension {}", name, shape[i]);
    if (i + 1 < shape.size()) n_rows *= shape[i];
  }
  const int64_t cols = shape.back();
  const int block = dtype_info(dtype).block_elems;
  if (cols % block != 0) {
    return invalid_argument("tensor '{}': innermost dimension {} is not a multiple of {}'s block size {}", name, cols,
                            dtype_name(dtype), block);
  }
  if (!fill) return invalid_argument("tensor '{}' has no data source", name);
  PendingTensor t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.n_bytes = row_bytes(dtype, cols) * static_cast<size_t>(n_rows);
  t.fill = std::move(fill);
  return t;
}

Result<OutputFile> OutputFile::create(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return io_error("cannot create '{}': {}", path, std::strerror(errno));
  return OutputFile(f, path);
}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : file_(other.file_), path_(std::move(other.path_)), position_(other.position_) {
  other.file_ = nullptr;
}

OutputFile::~OutputFile() {
  if (file_) std::fclose(file_);
}

Status OutputFile::write(const void* data, size_t n) {
  if (n == 0) return Status::ok_status();
  if (std::fwrite(data, 1, n, file_) != n) {
    return io_error("writing '{}' at byte {} failed: {}", path_, position_, std::strerror(errno));
  }
  position_ += n;
  return Status::ok_status();
}

Status OutputFile::write_zeros(size_t n) {
  static const uint8_t kZeros[64] = {};
  while (n > 0) {
    const size_t k = n < sizeof(kZeros) ? n : sizeof(kZeros);
    CAI_TRY(write(kZeros, k));
    n -= k;
  }
  return Status::ok_status();
}

Status OutputFile::write_tensor(const PendingTensor& t, std::vector<uint8_t>& scratch) {
  if (scratch.size() < t.n_bytes) {
    scratch.clear();
    scratch.shrink_to_fit();
    scratch.resize(t.n_bytes);
  }
  Status st = t.fill(scratch.data(), t.n_bytes);
  if (!st.ok()) return Status(st.code(), fmt::format("tensor '{}': {}", t.name, st.message()));
  return write(scratch.data(), t.n_bytes);
}

Status OutputFile::close() {
  std::FILE* f = file_;
  file_ = nullptr;
  if (f && std::fclose(f) != 0) return io_error("closing '{}' failed: {}", path_, std::strerror(errno));
  return Status::ok_status();
}

}  // namespace cai
