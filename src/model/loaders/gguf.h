// GGUF reader (v2/v3, little-endian): metadata as JSON values, tensor infos pointing into the mapped file.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/mapped_file.h"
#include "core/status.h"
#include "core/tensor_view.h"

namespace cai {

class GgufCursor;

struct GgufTensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> ne;  // GGUF order: ne[0] is the contiguous dimension
  uint64_t offset = 0;      // relative to the data section
  size_t n_bytes = 0;
  const uint8_t* data = nullptr;  // inside the file's bytes; valid while the GgufFile lives

  // The same tensor as a TensorView in PyTorch order (ne reversed), on the host.
  TensorView view() const;
};

class GgufFile {
 public:
  // mmap the file and parse it. Errors name the file and what is wrong (truncated, bad magic, unknown type...).
  // A split model (`split.count` N > 1, written by llama-gguf-split as NAME-00001-of-0000N.gguf) is opened from its
  // first part: the other parts are found by name beside it and mapped too; their tensors join this file's, as if it
  // were one file (the metadata is the first part's). See gguf_split.cpp.
  static Result<std::unique_ptr<GgufFile>> open(const std::string& path);
  // Parse bytes that the caller keeps alive (tests, fuzzing). Never reads outside [data, data + size).
  static Result<std::unique_ptr<GgufFile>> parse(const uint8_t* data, size_t size,
                                                 std::string source_name = "<memory>");

  uint32_t version() const { return version_; }
  // Every metadata key → its value: integers/floats/bools/strings as JSON scalars, arrays as JSON arrays.
  const nlohmann::json& metadata() const { return metadata_; }
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find(std::string_view name) const;
  const std::string& source_name() const { return source_name_; }
  size_t alignment() const { return alignment_; }
  // File offset of the tensor data section (0 when there are no tensors).
  size_t data_offset() const { return data_offset_; }
  // The mapped files the tensors live in: this file, then the other split parts (empty for parse()).
  std::vector<const MappedFile*> mapped_files() const;

 private:
  GgufFile() = default;
  static Result<std::unique_ptr<GgufFile>> open_one(const std::string& path);
  // Opens split parts 2..N named after this first part and takes in their tensors (gguf_split.cpp).
  Status attach_split_parts();
  Status parse_all(const uint8_t* data, size_t size);
  Status parse_header(GgufCursor& cur, uint64_t* n_tensors, uint64_t* n_kv);
  Status parse_metadata(GgufCursor& cur, uint64_t n_kv);
  Status parse_tensor_info(GgufCursor& cur, GgufTensorInfo* t);

  std::unique_ptr<MappedFile> file_;              // null when parsing caller-owned bytes
  std::vector<std::unique_ptr<GgufFile>> parts_;  // split parts 2..N, kept open for their tensors' bytes
  std::string source_name_;
  uint32_t version_ = 0;
  size_t alignment_ = 32;
  nlohmann::json metadata_ = nlohmann::json::object();
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> index_;  // tensor name → position in tensors_
  size_t data_offset_ = 0;
};

}  // namespace cai
