// ChildProcess over posix_spawn, pipes and poll.
#include "core/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

extern char** environ;

namespace cai {

namespace {

constexpr size_t kStderrKept = 4096;

}  // namespace

Result<ChildProcess> ChildProcess::spawn(const std::vector<std::string>& argv) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) return io_error("pipe: {}", std::strerror(errno));
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(out[0]), close(out[1]);
    return io_error("pipe: {}", std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ChildProcess c;
  const int rc = posix_spawn(&c.pid_, argv.at(0).c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]), close(err[1]);
  c.out_fd_ = out[0], c.err_fd_ = err[0];
  if (rc != 0) {
    c.pid_ = -1;
    return io_error("cannot start {}: {}", argv[0], std::strerror(rc));
  }
  return c;
}

ChildProcess::ChildProcess(ChildProcess&& o) noexcept
    : pid_(o.pid_), out_fd_(o.out_fd_), err_fd_(o.err_fd_), buffered_(std::move(o.buffered_)), err_(std::move(o.err_)),
      ended_(std::move(o.ended_)), reaped_(o.reaped_) {
  o.pid_ = -1, o.out_fd_ = -1, o.err_fd_ = -1;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !reaped_) kill();
  if (out_fd_ >= 0) close(out_fd_);
  if (err_fd_ >= 0) close(err_fd_);
}

void ChildProcess::drain_stderr() {
  char buf[4096];
  const ssize_t n = read(err_fd_, buf, sizeof buf);
  if (n <= 0) {
    close(err_fd_);
    err_fd_ = -1;
    return;
  }
  err_.append(buf, static_cast<size_t>(n));
  if (err_.size() > kStderrKept) err_.erase(0, err_.size() - kStderrKept);
}

ChildProcess::Read ChildProcess::next_line(std::string& line, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    if (const size_t nl = buffered_.find('\n'); nl != std::string::npos) {
      line = buffered_.substr(0, nl);
      buffered_.erase(0, nl + 1);
      return Read::kLine;
    }
    if (out_fd_ < 0) {
      if (buffered_.empty()) return Read::kEnd;
      line = std::move(buffered_);  // a last line without a newline
      buffered_.clear();
      return Read::kLine;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Read::kTimeout;
    pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    const int n = poll(fds, err_fd_ >= 0 ? 2 : 1, static_cast<int>(left.count()));
    if (n < 0 && errno != EINTR) return Read::kEnd;
    if (n <= 0) continue;
    if (err_fd_ >= 0 && (fds[1].revents & (POLLIN | POLLHUP))) drain_stderr();
    if (fds[0].revents & (POLLIN | POLLHUP)) {
      char buf[4096];
      const ssize_t got = read(out_fd_, buf, sizeof buf);
      if (got <= 0) {
        close(out_fd_);
        out_fd_ = -1;
      } else {
        buffered_.append(buf, static_cast<size_t>(got));
      }
    }
  }
}

void ChildProcess::kill() {
  if (pid_ <= 0 || reaped_) return;
  ::kill(pid_, SIGKILL);
  wait();
}

std::string ChildProcess::wait() {
  if (pid_ <= 0 || reaped_) return ended_;
  while (err_fd_ >= 0) drain_stderr();  // what it wrote before it ended
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {}
  reaped_ = true;
  if (WIFSIGNALED(status))
    ended_ = "signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  else if (WEXITSTATUS(status) != 0)
    ended_ = "exit code " + std::to_string(WEXITSTATUS(status));
  return ended_;
}

}  // namespace cai
