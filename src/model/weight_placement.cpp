// WeightPlacement: a layout's stages and expert device resolved per layer, and the device of each canonical name.
#include "model/weight_placement.h"

#include <algorithm>
#include <charconv>
#include <numeric>

namespace cai {

WeightPlacement WeightPlacement::single(hal::Device& device, int n_layers) {
  WeightPlacement p;
  p.layers.assign(static_cast<size_t>(std::max(0, n_layers)), &device);
  p.experts = p.layers;
  p.embed = p.head = &device;
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
  const int n_stages = static_cast<int>(layout.stages.size());
  if (n_stages == 0) return invalid_argument("a layout needs at least one device");
  if (n_stages > n_layers)
    return invalid_argument("{} pipeline stages for a model of {} layers: each stage needs at least one layer", n_stages,
                            n_layers);
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
  for (int s = 0; s < n_stages; ++s)
    p.layers.insert(p.layers.end(), static_cast<size_t>(split[static_cast<size_t>(s)]), layout.stages[static_cast<size_t>(s)]);
  p.experts = p.layers;
  if (layout.moe_device) std::fill(p.experts.begin(), p.experts.end(), layout.moe_device);
  p.head = layout.stages.back();
  p.embed = tied_embeddings ? p.head : layout.stages.front();
  return p;
}

hal::Device& WeightPlacement::device_for(std::string_view name) const {
  constexpr std::string_view kBlock = "blk.";
  if (name.starts_with(kBlock)) {
    int layer = -1;
    const auto [end, ec] = std::from_chars(name.data() + kBlock.size(), name.data() + name.size(), layer);
    if (ec == std::errc() && layer >= 0 && layer < static_cast<int>(layers.size()))
      return *(name.find("_exps.") != std::string_view::npos ? experts : layers)[static_cast<size_t>(layer)];
    return *head;
  }
  return name.starts_with("token_embd.") ? *embed : *head;
}

hal::Device& WeightPlacement::layer_device(int layer) const { return *layers[static_cast<size_t>(layer)]; }

std::vector<hal::Device*> WeightPlacement::devices() const {
  std::vector<hal::Device*> out;
  auto add = [&](hal::Device* d) {
    if (d && std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  };
  add(embed);
  for (size_t l = 0; l < layers.size(); ++l) add(layers[l]), add(experts[l]);
  add(head);
  return out;
}

}  // namespace cai
