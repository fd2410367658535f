// The layout flags (--tp, --ep, --pp, --layer-split, --moe-device) and --plan FILE, as the Layout load_model runs.
#include <algorithm>
#include <sstream>

#include "chips/planner.h"
#include "core/json_file.h"
#include "core/log.h"
#include "hal/process_group.h"
#include "hal/remote_device.h"
#include "verbs.h"

namespace cai::cli {

void add_layout_options(CLI::App& cmd, CommonOptions& o) {
  cmd.add_option("--tp", o.tp,
                 "tensor-parallel ranks per pipeline stage: attention heads, MLP and expert columns and "
                 "the vocabulary split over that many devices, partial sums all-reduced")
      ->check(CLI::PositiveNumber);
  cmd.add_option("--ep", o.ep,
                 "expert-parallel ranks: each MoE layer's routed experts split whole over the ranks of a "
                 "stage; attention and the rest run tensor parallel over the same devices (--ep alone "
                 "sets --tp to it)")
      ->check(CLI::PositiveNumber);
  cmd.add_option("--pp", o.pp,
                 "pipeline stages: the layers split over the listed devices in order, --tp devices a "
                 "stage (default: devices / tp)")
      ->check(CLI::PositiveNumber);
  cmd.add_option("--collective-timeout", o.collective_timeout_s,
                 "seconds a transfer between the processes of an MPI job may wait for the other ranks; then the group "
                 "counts as failed: requests end with 503 rank_failed and the job exits non-zero")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd.add_option("--devices-per-rank", o.devices_per_rank,
                 "in an MPI job, the devices each process drives: local rank L takes --device entries L·K .. L·K+K-1 "
                 "(e.g. one process per node over its eight GPUs: --device cuda --devices-per-rank 8)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd.add_option("--layer-split", o.layer_split, "layers per pipeline stage, e.g. 40,21 (default: as even as possible)")
      ->delimiter(',');
  cmd.add_option("--plan", o.plan_file,
                 "run the layout of `cai plan --json` output saved in this file (tensor and expert parallel, pipeline "
                 "stages and their layers) over the --device list");
  cmd.add_option("--moe-device", o.moe_device,
                 "keep the routed experts' weights on this device and run them there (e.g. cpu: experts in host "
                 "memory beside an accelerator)");
}

bool names_only_cpu(const std::string& list) {
  std::stringstream items(list);
  std::string item;
  while (std::getline(items, item, ','))
    if (item.rfind("cpu", 0) != 0) return false;
  return true;
}

namespace {

// A planned layout: widths, replicas and layers per stage.
struct PlannedLayout {
  int tp = 1, pp = 1, ep = 1, dp = 1;
  std::vector<int> layers_per_stage;
};

// `plan` over layout.devices; `source` names the plan in errors. Refused: several replicas (one process runs one), a
// device count other than tp x pp, expert parallel over other ranks than the tensor-parallel ones.
Status apply_planned(const std::string& source, const PlannedLayout& plan, Layout& layout) {
  if (plan.dp > 1)
    return invalid_argument(
        "{}: {} replicas (data_parallel); one process runs one: start {} processes, each with {} "
        "devices",
        source, plan.dp, plan.dp, plan.tp * plan.pp);
  const int n = static_cast<int>(layout.devices.size());
  if (plan.tp * plan.pp != n)
    return invalid_argument("{}: tensor_parallel {} x pipeline_parallel {} needs {} devices, but --device lists {}",
                            source, plan.tp, plan.pp, plan.tp * plan.pp, n);
  if (static_cast<int>(plan.layers_per_stage.size()) != plan.pp)
    return invalid_argument("{}: layout.stages must list {} stages", source, plan.pp);
  if (plan.ep > 1 && plan.ep != plan.tp)
    return invalid_argument(
        "{}: expert_parallel {} differs from tensor_parallel {}; CAI runs experts over the "
        "tensor-parallel ranks of a stage",
        source, plan.ep, plan.tp);
  layout.tp = plan.tp;
  layout.expert_parallel = plan.ep > 1;
  layout.layer_split = plan.layers_per_stage;
  return {};
}

// The `layout` object of `cai plan --json` output (the whole output, or the object alone).
Status apply_plan_file(const std::string& path, Layout& layout) {
  CAI_ASSIGN_OR_RETURN(const nlohmann::json doc, read_json_file(path));
  const nlohmann::json& plan = doc.contains("layout") ? doc["layout"] : doc;
  auto count = [&](const char* key) -> Result<int> {
    if (!plan.contains(key) || !plan[key].is_number_integer() || plan[key].get<int>() < 1)
      return invalid_argument("--plan {}: layout.{} must be a positive integer", path, key);
    return plan[key].get<int>();
  };
  PlannedLayout p;
  CAI_ASSIGN_OR_RETURN(p.tp, count("tensor_parallel"));
  CAI_ASSIGN_OR_RETURN(p.pp, count("pipeline_parallel"));
  CAI_ASSIGN_OR_RETURN(p.ep, count("expert_parallel"));
  CAI_ASSIGN_OR_RETURN(p.dp, count("data_parallel"));
  const nlohmann::json stages = plan.value("stages", nlohmann::json::array());
  for (const nlohmann::json& s : stages.is_array() ? stages : nlohmann::json::array()) {
    const nlohmann::json& layers = s.value("layers", nlohmann::json());
    if (!layers.is_array() || layers.size() != 2 || !layers[0].is_number_integer() || !layers[1].is_number_integer() ||
        layers[1].get<int>() < layers[0].get<int>())
      return invalid_argument("--plan {}: each stage's layers must be [first, last]", path);
    p.layers_per_stage.push_back(layers[1].get<int>() - layers[0].get<int>() + 1);
  }
  return apply_planned("--plan " + path, p, layout);
}

}  // namespace

bool layout_flags_given(const CommonOptions& o) {
  return o.tp != 1 || o.ep != 1 || o.pp > 0 || !o.layer_split.empty() || !o.plan_file.empty();
}

Status plan_default_layout(const CommonOptions& o, const chips::DeviceProfile& profile, int64_t ctx, Layout& layout) {
  const int n = static_cast<int>(layout.devices.size());
  CAI_ASSIGN_OR_RETURN(const chips::ModelFootprint model, chips::load_footprint(o.model));
  chips::PlanRequest request;
  request.cards = n;
  request.ctx = std::max<int64_t>(0, ctx);  // 0: the model's context (LoadOptions::kModelContext)
  request.memory_gib = static_cast<double>(layout.devices.front()->memory_info().total_bytes) / (1u << 30);
  if (*request.memory_gib <= 0) request.memory_gib.reset();
  CAI_ASSIGN_OR_RETURN(const chips::Plan plan, chips::make_plan(model, profile, request));
  const chips::PlanLayout& l = plan.layout;
  const std::string command =
      fmt::format("cai plan -m {} --chip {} --cards {} --ctx {}", o.model, profile.id, n, request.ctx);
  if (l.cards_used != n || l.data_parallel > 1 || (l.expert_parallel > 1 && l.expert_parallel != l.tensor_parallel)) {
    CAI_LOG_INFO("layout: `{}` uses {} of the {} devices in {} replica(s); running {} pipeline stages instead", command,
                 l.cards_used, n, l.data_parallel, n);
    return {};
  }
  PlannedLayout p{l.tensor_parallel, l.pipeline_parallel, l.expert_parallel, l.data_parallel, {}};
  for (const chips::PlanStage& s : l.stages) p.layers_per_stage.push_back(s.n_layers);
  CAI_TRY(apply_planned("`" + command + "`", p, layout));
  CAI_LOG_INFO("layout from `{}`: TP {} x EP {}, {} pipeline stage(s)", command, l.tensor_parallel, l.expert_parallel,
               l.pipeline_parallel);
  return {};
}

namespace {

// --moe-device: the device every stage's routed experts run on; in an MPI job the CPU, each stage's on the host of
// the process that runs the stage (every process offers its CPU to the others' stand-ins, as job_device_list does).
Status place_routed_experts(const CommonOptions& o, const hal::Registry& reg, Layout& layout) {
  if (o.moe_device.empty()) return {};
  const size_t n_stages = layout.devices.size() / static_cast<size_t>(std::max(1, layout.tp));
  hal::ProcessGroup* group = hal::process_group();
  if (!group) {
    CAI_ASSIGN_OR_RETURN(hal::Device * d, reg.find_device(o.moe_device));
    layout.moe_devices.assign(n_stages, d);
    return {};
  }
  if (!names_only_cpu(o.moe_device))
    return invalid_argument(
        "--moe-device {} in an MPI job: each rank's routed experts run on its own host, so it takes cpu", o.moe_device);
  if (layout.tp == 1 && o.devices_per_rank > 1)
    return invalid_argument(
        "--moe-device with --devices-per-rank {}: a process's stages would share its host's experts",
        o.devices_per_rank);
  CAI_ASSIGN_OR_RETURN(hal::Device * cpu, reg.find_device("cpu"));
  CAI_ASSIGN_OR_RETURN(const std::vector<hal::Device*> cpus, hal::job_devices(*group, {cpu}, hal::startup_timeout()));
  for (size_t s = 0; s < n_stages; ++s) {
    const hal::Device& stage = *layout.devices[s * static_cast<size_t>(layout.tp)];
    layout.moe_devices.push_back(cpus[static_cast<size_t>(hal::owning_process(stage, *group))]);
  }
  return {};
}

}  // namespace

Result<Layout> layout_from_options(const CommonOptions& o, const hal::Registry& reg, const std::string& devices) {
  Layout layout;
  CAI_ASSIGN_OR_RETURN(layout.devices, job_device_list(reg, devices, o.devices_per_rank));
  if (!o.plan_file.empty()) {
    if (o.tp != 1 || o.ep != 1 || o.pp > 0 || !o.layer_split.empty())
      return invalid_argument("--plan {} gives the layout: leave out --tp, --ep, --pp and --layer-split", o.plan_file);
    CAI_TRY(apply_plan_file(o.plan_file, layout));
    CAI_TRY(place_routed_experts(o, reg, layout));
    return layout;
  }
  const int n = static_cast<int>(layout.devices.size());
  if (o.ep > 1 && o.tp > 1 && o.ep != o.tp)
    return invalid_argument(
        "--ep {} with --tp {}: expert parallel runs over the tensor-parallel ranks of a stage, so "
        "the two must be equal (or give --ep alone)",
        o.ep, o.tp);
  layout.tp = std::max(o.tp, o.ep);
  layout.expert_parallel = o.ep > 1;
  const int pp = o.pp > 0 ? o.pp : std::max(1, n / layout.tp);
  const std::string have = hal::process_group() ? fmt::format("the MPI job has {} ranks of {} device(s) each",
                                                              hal::process_group()->size(), o.devices_per_rank)
                                                : fmt::format("--device {} lists {}", devices, n);
  if (layout.tp * pp != n)
    return invalid_argument("--tp {} x --pp {} needs {} devices, but {}", layout.tp, pp, layout.tp * pp, have);
  layout.layer_split = o.layer_split;
  CAI_TRY(place_routed_experts(o, reg, layout));
  return layout;
}

}  // namespace cai::cli
