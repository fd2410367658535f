// The layout flags (--tp, --pp, --layer-split, --moe-device) and --plan FILE, turned into the Layout load_model runs.
#include <sstream>

#include "core/json_file.h"
#include "core/log.h"
#include "verbs.h"

namespace cai::cli {

bool names_only_cpu(const std::string& list) {
  std::stringstream items(list);
  std::string item;
  while (std::getline(items, item, ','))
    if (item.rfind("cpu", 0) != 0) return false;
  return true;
}

namespace {

// The `layout` object of `cai plan --json` output (the whole output, or the object alone) as tp and layers per stage.
// Expert parallelism runs as tensor parallelism over the same cards: each card holds a slice of every expert instead
// of whole experts, the same bytes per card (docs/devices.md).
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
  layout.tp = tp;
  layout.layer_split.clear();
  for (const nlohmann::json& s : plan["stages"]) {
    const nlohmann::json& layers = s.value("layers", nlohmann::json());
    if (!layers.is_array() || layers.size() != 2 || !layers[0].is_number_integer() || !layers[1].is_number_integer() ||
        layers[1].get<int>() < layers[0].get<int>())
      return invalid_argument("--plan {}: each stage's layers must be [first, last]", path);
    layout.layer_split.push_back(layers[1].get<int>() - layers[0].get<int>() + 1);
  }
  if (ep > 1)
    CAI_LOG_INFO("--plan {}: expert_parallel {} runs as tensor parallel over the same {} devices (every expert sliced)",
                 path, ep, tp);
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
    if (o.tp != 1 || o.pp > 0 || !o.layer_split.empty())
      return invalid_argument("--plan {} gives the layout: leave out --tp, --pp and --layer-split", o.plan_file);
    CAI_TRY(apply_plan_file(o.plan_file, layout));
    return layout;
  }
  const int n = static_cast<int>(layout.devices.size());
  layout.tp = o.tp;
  const int pp = o.pp > 0 ? o.pp : n / o.tp;
  if (o.tp * pp != n)
    return invalid_argument("--tp {} x --pp {} needs {} devices, but --device {} lists {}", o.tp, pp, o.tp * pp, devices,
                            n);
  layout.layer_split = o.layer_split;
  return layout;
}

}  // namespace cai::cli
