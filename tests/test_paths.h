// Where tests find their data (tests/data, copied from ../shared/testdata with licences) and built binaries.
#pragma once

#include <string>

namespace cai::test {
std::string data_path(const std::string& rel);  // <source>/tests/data/<rel>
std::string binary_path(const std::string& name);  // <build>/<name>
std::string read_file(const std::string& path);
}  // namespace cai::test
