// MappedFile: open + read-only private mmap of a whole file.
#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace cai {

Result<std::unique_ptr<MappedFile>> MappedFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return not_found("{}: no such file", path);
    return io_error("{}: cannot open: {}", path, std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return io_error("{}: cannot stat: {}", path, std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_argument("{}: not a regular file", path);
  }
  std::unique_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  file->size_ = static_cast<size_t>(st.st_size);
  if (file->size_ > 0) {  // mmap of length 0 is an error; an empty file maps to (nullptr, 0)
    void* p = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      if (err == ENOMEM) return out_of_memory("{}: cannot map {} bytes", path, file->size_);
      return io_error("{}: cannot mmap {} bytes: {}", path, file->size_, std::strerror(err));
    }
    // No read-ahead of the whole file (no MAP_POPULATE, no MADV_WILLNEED): a 700 GB checkpoint must not be pulled
    // into memory at open. Pages fault in on first use (or through WeightStore::prewarm), with the kernel's default
    // read-around, so RSS grows only with the weights actually touched.
    file->data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);  // the mapping keeps the file alive
  return file;
}

void MappedFile::advise_sequential() const {
  if (data_ != nullptr) ::madvise(const_cast<uint8_t*>(data_), size_, MADV_SEQUENTIAL);  // a hint: failure is harmless
}

void MappedFile::release() const {
  if (data_ != nullptr)
    ::madvise(const_cast<uint8_t*>(data_), size_, MADV_DONTNEED);  // read-only file pages: no data lost
}

void MappedFile::release(const void* p, size_t n) const {
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;  // pages shared with a neighbour
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;           // stay
  if (contains(p, n) && end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace cai
