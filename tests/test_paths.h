// Where tests find their data (tests/data, with its sources and licences in the READMEs there) and built binaries.
#pragma once

#include <string>
#include <vector>

namespace cai::test {
// <build>/testdata/<rel> when unpacked there (xz-packed folders), else <source>/tests/data/<rel>.
std::string data_path(const std::string& rel);
std::string binary_path(const std::string& name);            // <build>/<name>
std::string source_path(const std::string& rel);             // <source>/<rel>
inline std::string cai_bin() { return binary_path("cai"); }  // the built `cai`
std::string read_file(const std::string& path);
std::vector<float> read_f32(const std::string& path);

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout only; stderr is captured separately into err
  std::string err;
};
// Runs a shell command line and captures its stdout and stderr.
CommandResult run_command(const std::string& cmd);
// The last non-empty line of a command's output (the one JSON line of a `--json` verb).
std::string last_line(const std::string& out);
// A fresh temporary directory, removed with its contents when the test process exits.
std::string make_temp_dir(const std::string& tag);
}  // namespace cai::test
