// Helpers shared by the model-format tests: file bytes, a temporary directory, weight rows as floats, and the relative
// error between two float vectors.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor_view.h"
#include "core/weight_row.h"
#include "test_paths.h"

namespace cai::test {

using Bytes = std::vector<uint8_t>;

// The bytes of tests/data/<rel>.
inline Bytes load_bytes(const std::string& rel) {
  const std::string s = read_file(data_path(rel));
  return Bytes(s.begin(), s.end());
}

// A fresh directory (removed when the test process exits); dir / "name" is a path inside it.
class TempDir {
 public:
  TempDir() : path_(make_temp_dir("model")) {}
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Row r of a weight tensor (any dtype) as floats.
inline std::vector<float> row_f32(const TensorView& w, int64_t r) {
  std::vector<float> out(static_cast<size_t>(w.cols()));
  dequantize_weight_row(w, r, out.data());
  return out;
}

// ||a − b|| / ||b||.
inline double rel_rms_error(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num / den);
}

}  // namespace cai::test
