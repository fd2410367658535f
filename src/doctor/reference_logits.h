// The reference logit files the model steps compare against: float32 LE, rows × cols.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace cai::doctor {

// Exactly rows × cols F32 values from `path`. Errors: the file is missing (io_error) or of another size (corrupt).
Result<std::vector<float>> read_reference_logits(const std::string& path, size_t rows, size_t cols);

// The largest |got - want| over the values both have (a NaN counts as infinite), and its index.
struct LogitDiff {
  double max = 0;
  size_t at = 0;
};
LogitDiff max_diff(std::span<const float> got, std::span<const float> want);

}  // namespace cai::doctor
