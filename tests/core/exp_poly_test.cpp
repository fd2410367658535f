// exp_poly (the e^x of the elementwise loops and the sampler) against the C library's, in double: within 1 ulp over
// the whole normal range, 0 below it, +inf above it, and NaN kept.
#include "core/exp_poly.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace cai {
namespace {

TEST(ExpPoly, WithinOneUlpOverTheNormalRange) {
  double worst = 0;
  float worst_x = 0;
  for (float x = -87.3f; x < 88.3f; x += 3.7e-5f) {
    const double want = std::exp(static_cast<double>(x));
    const double err = std::fabs(exp_poly(x) - want) / want;
    if (err > worst) worst = err, worst_x = x;
  }
  // One ulp of a float is 2^-23 of its value at the bottom of its binade, 2^-24 at the top.
  EXPECT_LE(worst, std::ldexp(1.0, -23)) << "at x = " << worst_x;
  EXPECT_EQ(exp_poly(0.0f), 1.0f);
}

TEST(ExpPoly, EdgesOfTheRange) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  EXPECT_GT(exp_poly(-87.0f), 0.0f);
  EXPECT_EQ(exp_poly(-88.0f), 0.0f);
  EXPECT_EQ(exp_poly(-1e30f), 0.0f);
  EXPECT_EQ(exp_poly(-kInf), 0.0f);
  EXPECT_TRUE(std::isfinite(exp_poly(88.3f)));
  EXPECT_EQ(exp_poly(89.0f), kInf);
  EXPECT_EQ(exp_poly(1e30f), kInf);
  EXPECT_EQ(exp_poly(kInf), kInf);
  EXPECT_TRUE(std::isnan(exp_poly(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(exp_poly(-std::numeric_limits<float>::quiet_NaN())));
}

}  // namespace
}  // namespace cai
