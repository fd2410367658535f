// Reading reference logit files and comparing logits with them.
#include "doctor/reference_logits.h"

#include <algorithm>
#include <cmath>
#include <fstream>

namespace cai::doctor {

Result<std::vector<float>> read_reference_logits(const std::string& path, size_t rows, size_t cols) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("cannot open the reference {}", path);
  std::vector<float> v(rows * cols);
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  if (static_cast<size_t>(in.gcount()) != v.size() * sizeof(float) || in.peek() != EOF)
    return corrupt("the reference {} is not {} × {} float32 values", path, rows, cols);
  return v;
}

LogitDiff max_diff(std::span<const float> got, std::span<const float> want) {
  LogitDiff d;
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    const double e = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (std::isnan(e) || e > d.max) d.max = std::isnan(e) ? INFINITY : e, d.at = i;
  }
  return d;
}

}  // namespace cai::doctor
