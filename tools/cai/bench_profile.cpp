// cai bench --save-profile: measured ÷ predicted, scaled onto the planner's defaults, written into a profile copy.
#include "bench_profile.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "chip_profiles.h"
#include "chips/model_footprint.h"
#include "chips/planner.h"
#include "core/json_file.h"

namespace cai::cli {

Status save_measured_profile(const BenchMeasurement& m, const std::string& out) {
  if (m.n_gen <= 0 || m.tg_tokens_per_s <= 0 || m.pp_tokens_per_s <= 0)
    return invalid_argument("--save-profile needs timed prompt and generation tokens (-p and -n above 0)");
  // An existing FILE is the profile to update, so that runs at several thread counts or weight types add up.
  std::optional<chips::DeviceProfile> given;
  std::error_code ec;
  if (std::filesystem::exists(out, ec)) {
    CAI_ASSIGN_OR_RETURN(given, resolve_chip(out));
  } else if (!m.profile.empty()) {
    CAI_ASSIGN_OR_RETURN(given, resolve_chip(m.profile));
  }
  chips::DeviceProfile chip;
  if (m.host) {
    CAI_ASSIGN_OR_RETURN(chip, host_chip(m.threads, given, m.bandwidth_gbs));
  } else if (given) {
    chip = *given;
  } else {
    return invalid_argument("--save-profile on a device: name its profile with --profile");
  }
  if (!chip.bandwidth_gbs) return invalid_argument("--save-profile: profile {} has no bandwidth_gbs", chip.id);
  CAI_ASSIGN_OR_RETURN(const chips::ModelFootprint model, chips::load_footprint(m.model));
  chips::PlanRequest request;
  request.ctx = m.n_prompt;
  request.memory_gib = 1e6;  // the speeds are wanted, not the fit
  request.threads = m.host ? m.threads : 0;
  request.assume_defaults = true;
  CAI_ASSIGN_OR_RETURN(const chips::Plan plan, chips::make_plan(model, chip, request));
  if (!plan.decode_tok_s_per_sequence) return internal_error("the plan has no decode estimate for {}", chip.id);
  nlohmann::json entry = {{"backend", chip.policies.backend}, {"weights", chips::main_weight_type(model)}};
  if (m.host) entry["threads"] = m.threads;
  entry["decode"] = chips::kBandwidthEfficiency * m.tg_tokens_per_s / *plan.decode_tok_s_per_sequence;
  if (plan.prefill_tok_s) entry["prefill"] = chips::kComputeEfficiency * m.pp_tokens_per_s / *plan.prefill_tok_s;
  entry["source"] = fmt::format("cai bench -m {} -p {} -n {}{}: {:.1f} / {:.1f} tok/s on {}, {:%Y-%m-%d}",
                                std::filesystem::path(m.model).filename().string(), m.n_prompt, m.n_gen,
                                m.host ? fmt::format(" -t {}", m.threads) : "", m.pp_tokens_per_s, m.tg_tokens_per_s,
                                m.host ? chip.name : m.machine, fmt::gmtime(std::time(nullptr)));

  CAI_ASSIGN_OR_RETURN(nlohmann::json j, read_json_file(given ? given->file : chip.file));
  if (!j.is_object()) return invalid_argument("{}: not a JSON object", given ? given->file : chip.file);
  nlohmann::json kept = nlohmann::json::array();
  if (j.contains("measured_efficiency") && j["measured_efficiency"].is_array())
    for (const nlohmann::json& e : j["measured_efficiency"])
      if (e.value("backend", "") != entry["backend"] || e.value("weights", "") != entry["weights"] ||
          e.value("threads", 0) != entry.value("threads", 0))
        kept.push_back(e);
  kept.push_back(entry);
  j["measured_efficiency"] = kept;
  CAI_TRY(chips::parse_profile(j.dump(), out).status());  // what plan will read back
  std::ofstream file(out, std::ios::binary | std::ios::trunc);
  file << j.dump(2) << "\n";
  if (!file) return io_error("cannot write {}", out);
  fmt::print("saved {} to {}: {}\n", chip.id, out, entry.dump());
  return {};
}

}  // namespace cai::cli
