// Test data and binary locations, baked in at configure time; CAI_TEST_SOURCE_DIR / CAI_TEST_BINARY_DIR move them
// (binaries carried to another machine by scripts/device-bundle.sh).
#include "test_paths.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace cai::test {

namespace {

std::string dir_or_env(const char* env, const char* baked) {
  const char* v = std::getenv(env);
  return v && *v ? v : baked;
}

}  // namespace

std::string data_path(const std::string& rel) {
  // Folders with xz-packed files are unpacked into the build tree at configure time (cmake/test_data.cmake).
  const std::string unpacked = dir_or_env("CAI_TEST_BINARY_DIR", CAI_BINARY_DIR) + "/testdata/" + rel;
  if (std::filesystem::exists(unpacked)) return unpacked;
  return dir_or_env("CAI_TEST_SOURCE_DIR", CAI_SOURCE_DIR) + "/tests/data/" + rel;
}
std::string binary_path(const std::string& name) {
  return dir_or_env("CAI_TEST_BINARY_DIR", CAI_BINARY_DIR) + "/" + name;
}
std::string source_path(const std::string& rel) {
  return dir_or_env("CAI_TEST_SOURCE_DIR", CAI_SOURCE_DIR) + "/" + rel;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<float> read_f32(const std::string& path) {
  std::string bytes = read_file(path);
  std::vector<float> v(bytes.size() / sizeof(float));
  if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

namespace {

// The directories this process made, removed when it exits (not by a forked child that exits).
class TempDirs {
 public:
  void add(const std::string& dir) { dirs_.push_back(dir); }
  ~TempDirs() {
    if (getpid() != owner_) return;
    std::error_code ec;
    for (const auto& d : dirs_) std::filesystem::remove_all(d, ec);
  }

 private:
  pid_t owner_ = getpid();
  std::vector<std::string> dirs_;
};

std::string unique_temp_dir(const std::string& tag) {
  std::string tmpl = std::filesystem::temp_directory_path().string() + "/cai-" + tag + "-XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

}  // namespace

std::string last_line(const std::string& out) {
  const size_t end = out.find_last_not_of('\n');
  if (end == std::string::npos) return "";
  const size_t start = out.rfind('\n', end);
  return out.substr(start == std::string::npos ? 0 : start + 1, end + 1 - (start == std::string::npos ? 0 : start + 1));
}

std::string make_temp_dir(const std::string& tag) {
  static TempDirs dirs;
  std::string dir = unique_temp_dir(tag);
  dirs.add(dir);
  return dir;
}

CommandResult run_command(const std::string& cmd) {
  const std::string dir = unique_temp_dir("cmd");
  const std::string err_path = dir + "/stderr";
  CommandResult r;
  FILE* p = popen((cmd + " 2>" + err_path).c_str(), "r");
  if (!p) throw std::runtime_error("popen failed: " + cmd);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.err = read_file(err_path);
  std::filesystem::remove_all(dir);
  return r;
}

}  // namespace cai::test
