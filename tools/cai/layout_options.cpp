// The layout flags (--tp, --ep, --pp, --layer-split, --moe-device) and --plan FILE, turned into the Layout load_model runs.
#include <algorithm>
#include <sstream>

#include "core/json_file.h"
#include "core/log.h"
#include "verbs.h"

namespace cai::cli {

void add_layout_options(CLI::App& cmd, CommonOptions& o) {
  cmd.add_option("--tp", o.tp, "tensor-parallel ranks per pipeline stage: attention heads, MLP and expert columns and "
                               "the vocabulary split over that many devices, partial sums all-reduced")
      ->check(CLI::PositiveNumber);
  cmd.add_option("--ep", o.ep, "expert-parallel ranks: each MoE layer's routed experts split whole over the ranks of a "
                               "stage; attention and the rest run tensor parallel over the same devices (--ep alone "
                               "sets --tp to it)")
      ->check(CLI::PositiveNumber);
  cmd.add_option("--pp", o.pp, "pipeline stages: the layers split over the listed devices in order, --tp devices a "
                               "stage (default: devices / tp)")
      ->check(CLI::PositiveNumber);
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

// The `layout` object of `cai plan --json` output (the whole output, or the object alone) as tp, expert parallel and
// layers per stage.
Status apply_plan_file(const std::string& path, Layout& layout) {
  CAI_ASSIGN_OR_RETURN(const nlohmann::json doc, read_json_file(path));
  const nlohmann::json& plan = doc.contains("layout") ? doc["layout"] : doc;
  auto count = [&](const char* key) -> Result<int> {
    if (!plan.contains(key) || !plan[key].is_number_integer() || plan[key].get<int>() < 1)
      return invalid_argument("--plan {}: layout.{} must be a positive integer", path, key);
    return plan[key].get<int>();
  };
  CAI_ASSIGN_OR_RETURN(const int tp, count("tensor_parallel"));
  CAI_ASSIGN_OR_RETURN(const int pp, count("pipeline_parallel"));
  CAI_ASSIGN_OR_RETURN(const int ep, count("expert_parallel"));
  CAI_ASSIGN_OR_RETURN(const int dp, count("data_parallel"));
  if (dp > 1)
    return invalid_argument("--plan {}: {} replicas (data_parallel); one process runs one: start {} processes, each "
                            "with {} devices", path, dp, dp, tp * pp);
  const int n = static_cast<int>(layout.devices.size());
  if (tp * pp != n)
    return invalid_argument("--plan {}: tensor_parallel {} x pipeline_parallel {} needs {} devices, but --device lists {}",
                            path, tp, pp, tp * pp, n);
  if (!plan.contains("stages") || !plan["stages"].is_array() || static_cast<int>(plan["stages"].size()) != pp)
    return invalid_argument("--plan {}: layout.stages must list {} stages", path, pp);
  if (ep > 1 && ep != tp)
    return invalid_argument("--plan {}: expert_parallel {} differs from tensor_parallel {}; CAI runs experts over the "
                            "tensor-parallel ranks of a stage", path, ep, tp);
  layout.tp = tp;
  layout.expert_parallel = ep > 1;
  layout.layer_split.clear();
  for (const nlohmann::json& s : plan["stages"]) {
    const nlohmann::json& layers = s.value("layers", nlohmann::json());
    if (!layers.is_array() || layers.size() != 2 || !layers[0].is_number_integer() || !layers[1].is_number_integer() ||
        layers[1].get<int>() < layers[0].get<int>())
      return invalid_argument("--plan {}: each stage's layers must be [first, last]", path);
    layout.layer_split.push_back(layers[1].get<int>() - layers[0].get<int>() + 1);
  }
  return {};
}

}  // namespace

Result<Layout> layout_from_options(const CommonOptions& o, const hal::Registry& reg, const std::string& devices) {
  Layout layout;
  CAI_ASSIGN_OR_RETURN(layout.devices, reg.find_devices(devices));
  if (!o.moe_device.empty()) {
    CAI_ASSIGN_OR_RETURN(layout.moe_device, reg.find_device(o.moe_device));
  }
  if (!o.plan_file.empty()) {
    if (o.tp != 1 || o.ep != 1 || o.pp > 0 || !o.layer_split.empty())
      return invalid_argument("--plan {} gives the layout: leave out --tp, --ep, --pp and --layer-split", o.plan_file);
    CAI_TRY(apply_plan_file(o.plan_file, layout));
    return layout;
  }
  const int n = static_cast<int>(layout.devices.size());
  if (o.ep > 1 && o.tp > 1 && o.ep != o.tp)
    return invalid_argument("--ep {} with --tp {}: expert parallel runs over the tensor-parallel ranks of a stage, so "
                            "the two must be equal (or give --ep alone)", o.ep, o.tp);
  layout.tp = std::max(o.tp, o.ep);
  layout.expert_parallel = o.ep > 1;
  const int pp = o.pp > 0 ? o.pp : n / layout.tp;
  if (layout.tp * pp != n)
    return invalid_argument("--tp {} x --pp {} needs {} devices, but --device {} lists {}", layout.tp, pp,
                            layout.tp * pp, devices, n);
  layout.layer_split = o.layer_split;
  return layout;
}

}  // namespace cai::cli
