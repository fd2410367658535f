// Element-wise comparisons of kernel results for the CUDA-dialect tests: tolerance checks and bit equality.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace cai::gpu::test {

// |got - want| <= abs_tol + rel_tol · |want| for every element (stops at the first failure).
inline void expect_close(const std::vector<float>& got, const std::vector<float>& want, float rel_tol, float abs_tol,
                         const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::fabs(got[i] - want[i]), abs_tol + rel_tol * std::fabs(want[i]))
        << what << " [" << i << "]: got " << got[i] << " want " << want[i];
}

// Bit-identical floats (batch invariance, determinism).
inline void expect_bit_equal(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
        << what << " [" << i << "]: " << got[i] << " vs " << want[i];
}

}  // namespace cai::gpu::test
