// Helpers shared by the runtime tests (header-only: the test glob builds only *_test.cpp files).
#pragma once

#include <cstdint>
#include <numeric>
#include <vector>

namespace cai::test {

using Ids = std::vector<int32_t>;

// first, first + 1, ..., first + n - 1
inline Ids iota_tokens(int n, int32_t first = 0) {
  Ids t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

}  // namespace cai::test
