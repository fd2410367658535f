// MappedFile: a read-only mmap of a whole file (weights stay in the page cache, not in our heap). Opening reads nothing
// ahead (no MAP_POPULATE): pages fault in on first use, so RSS grows only with the bytes actually touched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

namespace cai {

class MappedFile {
 public:
  static Result<std::unique_ptr<MappedFile>> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // The mapping is about to be read once, front to back (copied to a device's own memory): read ahead eagerly.
  void advise_sequential() const;
  // Drop this process's pages of the mapping (the page cache keeps them; a later read faults them back in), e.g. once
  // a device holds its own copy of the weights, so the host RSS does not hold a second one.
  void release() const;
  // The same for the whole pages inside [p, p + n) (bytes of this mapping), e.g. a weight the device keeps a copy of in
  // another layout (hal::Device::pack_gemm_weight).
  void release(const void* p, size_t n) const;
  bool contains(const void* p, size_t n) const {
    const auto* b = static_cast<const uint8_t*>(p);
    return b >= data_ && n <= size_ && static_cast<size_t>(b - data_) <= size_ - n;
  }

 private:
  MappedFile() = default;
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace cai
