// GGUF v3 writer: metadata records, tensor infos (ne = reversed PyTorch shape), aligned data streamed to disk.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "writers/writer_common.h"

namespace cai {

class GgufWriter {
 public:
  // Metadata. Setting a key again replaces its value (keeping its place). "general.alignment" (u32, a power of two)
  // also sets the data alignment; the default is 32.
  void set_u32(std::string_view key, uint32_t v);
  void set_i32(std::string_view key, int32_t v);
  void set_u64(std::string_view key, uint64_t v);
  void set_f32(std::string_view key, float v);
  void set_bool(std::string_view key, bool v);
  void set_string(std::string_view key, std::string_view v);
  void set_strings(std::string_view key, const std::vector<std::string>& v);
  void set_f32s(std::string_view key, const std::vector<float>& v);
  void set_i32s(std::string_view key, const std::vector<int32_t>& v);

  // A tensor of `shape` (PyTorch order; written as ne = reversed shape) whose bytes `fill` produces at write time.
  // Fails on a bad shape, a dtype GGUF cannot hold, a name over 63 bytes or a duplicate name.
  Status add_tensor(std::string name, DType dtype, std::vector<int64_t> shape, TensorFill fill);
  Status add_tensor(std::string name, DType dtype, std::vector<int64_t> shape, std::vector<uint8_t> bytes);

  // Writes the file: header, metadata, tensor infos, then each tensor's data (filled one at a time, each at a
  // multiple of the alignment).
  Status write(const std::string& path);

  size_t alignment() const { return alignment_; }
  size_t n_tensors() const { return tensors_.size(); }

 private:
  struct Kv {
    std::string key;
    std::vector<uint8_t> record;  // type id + encoded value
  };
  void set_record(std::string_view key, std::vector<uint8_t> record);
  std::vector<uint8_t> encode_header() const;

  std::vector<Kv> kvs_;
  std::vector<PendingTensor> tensors_;
  size_t alignment_ = 32;
  bool alignment_valid_ = true;
};

}  // namespace cai
