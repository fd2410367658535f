// Host-side shape queries on CaiTensor for the launchers' argument checks (same meaning as TensorView's).
#pragma once

#include <string>

#include "cai/backend_abi.h"
#include "cai/backend_plugin.hpp"

namespace cai::gpu {

using plugin::n_elements;

inline int64_t dim(const CaiTensor& t, int i) { return t.shape[i < 0 ? t.n_dims + i : i]; }

inline int64_t cols(const CaiTensor& t) { return t.n_dims == 0 ? 1 : dim(t, -1); }
inline int64_t rows(const CaiTensor& t) { return cols(t) == 0 ? 0 : n_elements(t) / cols(t); }

// "[512, 128]", for error messages.
inline std::string shape_string(const CaiTensor& t) {
  std::string s = "[";
  for (int i = 0; i < t.n_dims; ++i) s += (i ? ", " : "") + std::to_string(t.shape[i]);
  return s + "]";
}

}  // namespace cai::gpu
