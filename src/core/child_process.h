// ChildProcess: a program run with its stdout read line by line under a deadline and its stderr kept, for checks
// that must survive what they check hanging or crashing (`cai doctor` runs each device in one).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "core/status.h"

namespace cai {

class ChildProcess {
 public:
  // Starts argv[0] (a path) with argv, the environment inherited. Errors: the program cannot be started.
  static Result<ChildProcess> spawn(const std::vector<std::string>& argv);
  ChildProcess(ChildProcess&& o) noexcept;
  ChildProcess& operator=(ChildProcess&&) = delete;
  ChildProcess(const ChildProcess&) = delete;
  ~ChildProcess();  // kills and reaps it if it still runs

  enum class Read { kLine, kEnd, kTimeout };
  // The next line of its stdout (without the newline) into `line`; kEnd once stdout closed; kTimeout when none came
  // within `seconds`.
  Read next_line(std::string& line, double seconds);
  // Kills it (SIGKILL) and reaps it.
  void kill();
  // Waits for it to end: "exit code 3", "signal 11 (Segmentation fault)"; "" for exit code 0.
  std::string wait();
  // The last 4 KiB it wrote to stderr.
  const std::string& stderr_tail() const { return err_; }

 private:
  ChildProcess() = default;
  void drain_stderr();

  pid_t pid_ = -1;
  int out_fd_ = -1, err_fd_ = -1;
  std::string buffered_;  // stdout read past the last full line
  std::string err_;
  std::string ended_;  // wait()'s answer once reaped
  bool reaped_ = false;
};

}  // namespace cai
