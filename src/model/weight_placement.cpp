// WeightPlacement: a layout's stages, ranks and expert device resolved per layer, and each canonical name's device.
#include "model/weight_placement.h"

#include <algorithm>
#include <charconv>
#include <numeric>

namespace cai {

WeightPlacement WeightPlacement::single(hal::Device& device, int n_layers) {
  WeightPlacement p;
  p.stages = {{&device}};
  p.layer_stage.assign(static_cast<size_t>(std::max(0, n_layers)), 0);
  p.experts.assign(p.layer_stage.size(), &device);
  p.embed = &device;
  return p;
}

namespace {

std::string join(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

}  // namespace

Result<WeightPlacement> WeightPlacement::from_layout(const Layout& layout, int n_layers, bool tied_embeddings) {
  const int n_devices = static_cast<int>(layout.devices.size()), tp = layout.tp;
  if (n_devices == 0) return invalid_argument("a layout needs at least one device");
  if (tp < 1 || n_devices % tp)
    return invalid_argument("--tp {} needs a multiple of {} devices (tp x pp), but the device list has {}", tp, tp,
                            n_devices);
  if (tp > 1 && !layout.moe_devices.empty())
    return invalid_argument("--moe-device with --tp {}: routed experts on another device run with one rank per stage",
                            tp);
  const int n_stages = n_devices / tp;
  if (!layout.moe_devices.empty() && static_cast<int>(layout.moe_devices.size()) != n_stages)
    return invalid_argument("routed experts on {} devices for {} pipeline stages", layout.moe_devices.size(), n_stages);
  if (n_stages > n_layers)
    return invalid_argument("{} pipeline stages for a model of {} layers: each stage needs at least one layer",
                            n_stages, n_layers);
  std::vector<int> split = layout.layer_split;
  if (split.empty()) {
    for (int s = 0; s < n_stages; ++s) split.push_back(n_layers / n_stages + (s < n_layers % n_stages ? 1 : 0));
  } else {
    if (static_cast<int>(split.size()) != n_stages)
      return invalid_argument("--layer-split {} names {} stages, but the layout has {} pipeline stages", join(split),
                              split.size(), n_stages);
    if (std::any_of(split.begin(), split.end(), [](int n) { return n <= 0; }))
      return invalid_argument("--layer-split {}: every stage needs at least one layer", join(split));
    const int sum = std::accumulate(split.begin(), split.end(), 0);
    if (sum != n_layers)
      return invalid_argument("--layer-split {} covers {} layers, but the model has {}", join(split), sum, n_layers);
  }
  WeightPlacement p;
  p.tp = tp;
  p.expert_parallel = layout.expert_parallel && tp > 1;
  for (int s = 0; s < n_stages; ++s) {
    p.stages.emplace_back(layout.devices.begin() + s * tp, layout.devices.begin() + (s + 1) * tp);
    p.layer_stage.insert(p.layer_stage.end(), static_cast<size_t>(split[static_cast<size_t>(s)]), s);
  }
  for (int l = 0; l < n_layers; ++l)
    p.experts.push_back(layout.moe_devices.empty()
                            ? &p.layer_device(l)
                            : layout.moe_devices[static_cast<size_t>(p.layer_stage[static_cast<size_t>(l)])]);
  p.embed = tied_embeddings && tp == 1 ? &p.head() : p.stages.front().front();
  return p;
}

int block_index(std::string_view name) {
  constexpr std::string_view kBlock = "blk.";
  if (!name.starts_with(kBlock)) return -1;
  int layer = -1;
  const auto [end, ec] = std::from_chars(name.data() + kBlock.size(), name.data() + name.size(), layer);
  return ec == std::errc() && layer >= 0 ? layer : -1;
}

hal::Device* WeightPlacement::device_for(std::string_view name) const {
  if (tp > 1) return nullptr;
  const int layer = block_index(name);
  if (layer >= 0 && layer < static_cast<int>(layer_stage.size()))
    return name.find("_exps.") != std::string_view::npos ? experts[static_cast<size_t>(layer)] : &layer_device(layer);
  return name.starts_with("token_embd.") ? embed : &head();
}

bool WeightPlacement::loads(std::string_view name) const {
  return layer_stage.empty() || block_index(name) < static_cast<int>(layer_stage.size()) + mtp_layers;
}

const std::vector<hal::Device*>& WeightPlacement::layer_ranks(int layer) const {
  if (layer >= static_cast<int>(layer_stage.size())) return stages.back();
  return stages[static_cast<size_t>(layer_stage[static_cast<size_t>(layer)])];
}

std::vector<hal::Device*> WeightPlacement::devices() const {
  std::vector<hal::Device*> out;
  auto add = [&](hal::Device* d) {
    if (d && std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  };
  add(embed);
  for (size_t l = 0; l < layer_stage.size(); ++l) {
    for (hal::Device* d : layer_ranks(static_cast<int>(l))) add(d);
    add(experts[l]);
  }
  for (hal::Device* d : stages.back()) add(d);
  return out;
}

}  // namespace cai
