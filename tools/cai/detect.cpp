// `cai detect`: which accelerators and CPU this host has, which CAI profile and backend each gets, and whether it is
// usable now. Results go to stdout (a table, or JSON with --json).
#include <cstdio>

#include "chips/detect_report.h"
#include "verbs.h"

namespace cai::cli {

namespace {

Status detect_verb(bool json) {
  CAI_ASSIGN_OR_RETURN(std::vector<chips::DeviceProfile> profiles, chips::load_profiles(chips::default_profile_dir()));
  hal::Registry& reg = hal::Registry::global();
  reg.load_plugins_from_default_paths();
  const chips::DetectReport report = chips::detect(profiles, reg, chips::DetectOptions::from_env());
  const std::string out = json ? chips::report_json(report).dump(2) + "\n" : chips::report_table(report);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return {};
}

}  // namespace

void register_detect(CLI::App& app, int& exit_code) {
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "detect",
      "list this host's accelerators (PCI), their CAI profiles and backends, and the CPU; CAI_SYSFS_ROOT and "
      "CAI_PROC_ROOT move /sys and /proc, CAI_CHIPS_DIR the profiles");
  cmd->add_flag("--json", *json, "machine-readable output");
  cmd->callback([json, &exit_code] {
    if (Status st = detect_verb(*json); !st.ok()) exit_code = fail(st);
  });
}

}  // namespace cai::cli
