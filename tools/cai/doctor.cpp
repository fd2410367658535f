// `cai doctor`: each device checked end to end (src/doctor/doctor.h). Every device runs in a process of its own
// (`cai doctor --in-process --events --device D`), so one that hangs is killed after --step-timeout and one that
// crashes the process is reported, and the next device is still checked. Results go to stdout: a table as each step
// ends, or one JSON document with --json. Exit status 1 when any step failed.
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "chips/device_policy.h"
#include "core/child_process.h"
#include "doctor/doctor.h"
#include "hal/cpu/cpu_backend.h"
#include "verbs.h"

namespace cai::cli {

namespace {

struct DoctorOptions {
  std::string device = "all";
  bool json = false;
  bool in_process = false;
  bool events = false;  // one JSON line per step as it begins and ends (what a parent process reads)
  double step_timeout_s = 300;
  int memory_mib = 256;
  int threads = 0;
};

struct DeviceReport {
  std::string device;
  std::vector<doctor::StepResult> steps;
  bool ok() const {
    return std::all_of(steps.begin(), steps.end(), [](const doctor::StepResult& s) { return s.ok; });
  }
};

nlohmann::json step_json(const doctor::StepResult& s) {
  return {{"step", s.step}, {"ok", s.ok}, {"detail", s.detail}, {"seconds", s.seconds}};
}

void print_step(const doctor::StepResult& s) {
  std::printf("  %-4s  %-11s  %s (%.1f s)\n", s.ok ? "ok" : "FAIL", s.step.c_str(), s.detail.c_str(), s.seconds);
  std::fflush(stdout);
}

// The options a device's checks run with: its profile (for the bandwidth) and its backend's runtime.
doctor::CheckOptions check_options(hal::Device& device, const DoctorOptions& o, const HostChips& host) {
  doctor::CheckOptions c;
  c.memory_bytes = static_cast<size_t>(o.memory_mib) << 20;
  const Result<chips::ProfileChoice> choice = chips::profile_for_device(host.report, host.profiles, device.name());
  if (choice.ok()) c.profile = choice->profile;
  const hal::Backend* b = hal::Registry::global().backend_of(device);
  c.runtime = b ? b->name() + " backend, " + b->runtime() : "unknown backend";
  return c;
}

// The checks of `device` in this process: printed as they run (event lines, or the table), returned at the end.
DeviceReport check_here(hal::Device& device, const DoctorOptions& o, const HostChips& host) {
  const doctor::CheckOptions c = check_options(device, o, host);
  const auto begin = [&](const std::string& step) {
    if (!o.events) return;
    std::cout << nlohmann::json{{"begin", step}}.dump() << std::endl;
  };
  const auto done = [&](const doctor::StepResult& s) {
    if (o.events)
      std::cout << step_json(s).dump() << std::endl;
    else if (!o.json)
      print_step(s);
  };
  return {device.name(), doctor::check_device(device, c, begin, done)};
}

// The steps after `from` (by name), reported as not run.
void add_not_run(DeviceReport& r, const std::string& from, const std::string& why, bool print) {
  const std::vector<std::string>& names = doctor::step_names();
  auto it = std::find(names.begin(), names.end(), from);
  for (it = it == names.end() ? names.begin() : it + 1; it != names.end(); ++it) {
    r.steps.push_back({*it, false, "not run: " + why, 0});
    if (print) print_step(r.steps.back());
  }
}

// The checks of `device` in a child process, with a deadline on each step.
DeviceReport check_in_child(const std::string& device, const DoctorOptions& o) {
  DeviceReport r{device, {}};
  const bool print = !o.json;
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  Result<ChildProcess> child =
      ChildProcess::spawn({self, "doctor", "--in-process", "--events", "--device", device, "--memory-mib",
                           std::to_string(o.memory_mib), "--threads", std::to_string(o.threads)});
  if (!child.ok()) {
    r.steps.push_back({doctor::step_names().front(), false, child.status().to_string(), 0});
    add_not_run(r, r.steps.back().step, "the check process did not start", print);
    return r;
  }
  std::string current;  // the step that began and has not ended
  auto step_started = std::chrono::steady_clock::now();
  for (;;) {
    std::string line;
    const ChildProcess::Read got = child->next_line(line, o.step_timeout_s);
    if (got == ChildProcess::Read::kLine) {
      const nlohmann::json e = nlohmann::json::parse(line, nullptr, false);
      if (e.is_object() && e.contains("begin")) {
        current = e["begin"].get<std::string>();
        step_started = std::chrono::steady_clock::now();
      } else if (e.is_object() && e.contains("step")) {
        r.steps.push_back({e["step"].get<std::string>(), e["ok"].get<bool>(), e["detail"].get<std::string>(),
                           e["seconds"].get<double>()});
        if (print) print_step(r.steps.back());
        current.clear();
      }
      continue;
    }
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - step_started).count();
    std::string why;
    if (got == ChildProcess::Read::kTimeout) {
      child->kill();
      why = fmt::format("no answer within {:.0f} s: the device hangs or is far too slow (the check was killed)",
                        o.step_timeout_s);
    } else {
      why = child->wait();
      if (why.empty() && current.empty()) return r;  // every step ended
      std::string tail = child->stderr_tail();
      while (!tail.empty() && tail.back() == '\n') tail.pop_back();
      tail = tail.substr(tail.rfind('\n') == std::string::npos ? 0 : tail.rfind('\n') + 1);
      why = fmt::format("the check process ended ({}){}", why.empty() ? "exit code 0" : why,
                        tail.empty() ? "" : ": " + tail);
    }
    // The step that was running fails with the reason (the first, if the process ended before any began).
    if (!current.empty() || r.steps.empty()) {
      r.steps.push_back({current.empty() ? doctor::step_names().front() : current, false, why, sec});
      if (print) print_step(r.steps.back());
      why = "the check of " + r.steps.back().step + " did not end";
    }
    add_not_run(r, r.steps.back().step, why, print);
    return r;
  }
}

Status doctor_verb(const DoctorOptions& o, int& exit_code) {
  hal::Registry& reg = hal::Registry::global();
  reg.load_plugins_from_default_paths();
  hal::cpu::set_cpu_threads(o.threads);
  std::vector<hal::Device*> devices;
  if (o.device == "all") {
    for (const auto& b : reg.backends())
      for (hal::Device* d : b->devices()) devices.push_back(d);
  } else if (hal::Backend* b = reg.find_backend(o.device)) {  // a backend's name: all of its devices
    devices = b->devices();
  } else {
    CAI_ASSIGN_OR_RETURN(devices, reg.find_devices(o.device));
  }
  const HostChips host = o.in_process ? scan_host(reg, false) : HostChips{};
  std::vector<DeviceReport> reports;
  for (hal::Device* d : devices) {
    if (!o.json && !o.events) std::printf("%s: %s\n", d->name().c_str(), d->description().c_str());
    reports.push_back(o.in_process ? check_here(*d, o, host) : check_in_child(d->name(), o));
  }
  if (o.events) return {};
  nlohmann::json out = {{"ok", true}, {"devices", nlohmann::json::array()}};
  std::vector<std::string> failed;
  for (const DeviceReport& r : reports) {
    nlohmann::json steps = nlohmann::json::array();
    for (const doctor::StepResult& s : r.steps) steps.push_back(step_json(s));
    out["devices"].push_back({{"device", r.device}, {"ok", r.ok()}, {"steps", steps}});
    if (!r.ok()) failed.push_back(r.device);
  }
  out["ok"] = failed.empty();
  if (o.json)
    std::cout << out.dump(2) << "\n";
  else
    std::printf("%s\n", failed.empty() ? fmt::format("{} device(s): every step passed", reports.size()).c_str()
                                       : fmt::format("failed: {}", fmt::join(failed, ", ")).c_str());
  if (!failed.empty()) exit_code = 1;
  return {};
}

}  // namespace

void register_doctor(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<DoctorOptions>();
  CLI::App* cmd = app.add_subcommand(
      "doctor",
      "check each device end to end: the backend answers, memory, every op against the reference, a tiny "
      "DeepSeek-V3 model (BF16 and FP8) against reference logits, and memory bandwidth against the profile");
  cmd->add_option(
      "--device", o->device,
      "the devices to check: a --device list, a backend's name (all its devices), or all (every backend's)");
  cmd->add_flag("--json", o->json, "one JSON document: each device's steps with ok, detail and seconds");
  cmd->add_option("--step-timeout", o->step_timeout_s,
                  "seconds a step may run before its device is reported as hanging and its check killed")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--memory-mib", o->memory_mib,
                  "the buffer the memory step allocates and copies through (and each of a device's bandwidth probe)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--threads", o->threads, "CPU threads (0 = all)")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--in-process", o->in_process,
                "check in this process, without a process per device and its deadline (for a debugger)");
  cmd->add_flag("--events", o->events, "with --in-process: one JSON line as each step begins and ends");
  cmd->callback([o, &exit_code] {
    if (Status st = doctor_verb(*o, exit_code); !st.ok()) exit_code = fail(st);
  });
}

}  // namespace cai::cli
