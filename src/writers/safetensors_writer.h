// safetensors writer: one file, or HF-style shards plus model.safetensors.index.json; tensor data streamed to disk.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "writers/writer_common.h"

namespace cai {

class SafetensorsWriter {
 public:
  // The optional "__metadata__" map (string → string), e.g. {"format": "pt"}.
  void set_metadata(const std::string& key, const std::string& value) { metadata_[key] = value; }

  // dtypes: F32, F16, BF16, F8_E4M3, I32, I8 (GGUF block types have no safetensors form). Shape in PyTorch order.
  Status add_tensor(std::string name, DType dtype, std::vector<int64_t> shape, TensorFill fill);
  Status add_tensor(std::string name, DType dtype, std::vector<int64_t> shape, std::vector<uint8_t> bytes);

  // One file holding every tensor, in the order added.
  Status write(const std::string& path) const;
  // Shards of at most max_shard_bytes of tensor data each (a bigger tensor gets a shard of its own), named
  // model-0000k-of-0000n.safetensors, plus model.safetensors.index.json, all in `dir` (which must exist).
  // Returns the shard file names.
  Result<std::vector<std::string>> write_sharded(const std::string& dir, uint64_t max_shard_bytes) const;

 private:
  Status write_file(const std::string& path, size_t begin, size_t end) const;

  std::map<std::string, std::string> metadata_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace cai
