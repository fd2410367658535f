// deploy/ agrees with the device profiles: the Dockerfile has a base stage and, for every backend plugin a profile
// names, a stage on top of base that copies in only libcai-backend-<name>.so; each Kubernetes manifest (Deployment +
// Service) runs the image of its profile's backend, requests exactly its profile's k8s_resource, probes /health, and
// every profile with both a plugin stage and a resource name has a manifest. Malformed resource names are refused. The
// multi-node manifests (MPIJobs) run the planner's layout over as many ranks as they request accelerators.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "chips/device_profile.h"
#include "chips/model_footprint.h"
#include "chips/planner.h"
#include "shipped_profiles.h"
#include "test_paths.h"

namespace cai::chips {
namespace {

namespace fs = std::filesystem;

const std::string kDeploy = std::string(CAI_SOURCE_DIR) + "/deploy";

using test_support::shipped_profiles;

// The backends of the plugins the profiles name (not the built-in cpu, not "" = none yet).
std::set<std::string> plugin_backends(const std::vector<DeviceProfile>& ps) {
  std::set<std::string> out;
  for (const DeviceProfile& p : ps)
    if (!p.policies.backend.empty() && p.policies.backend != "cpu") out.insert(p.policies.backend);
  return out;
}

struct Stage {
  std::string from;                                        // the image or stage it starts from
  std::vector<std::pair<std::string, std::string>> steps;  // (instruction, arguments)
};

// Dockerfile stages by name: continuation lines joined, comments dropped.
std::map<std::string, Stage> dockerfile_stages(const std::string& text) {
  std::map<std::string, Stage> stages;
  Stage* current = nullptr;
  std::istringstream in(text);
  std::string line, logical;
  while (std::getline(in, line)) {
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    if (line.back() == '\\') {
      logical += line.substr(0, line.size() - 1) + " ";
      continue;
    }
    logical += line;
    std::istringstream words(logical);
    std::string instruction, rest;
    words >> instruction;
    std::getline(words >> std::ws, rest);
    logical.clear();
    if (instruction == "FROM") {
      std::istringstream f(rest);
      std::string image, as, name;
      f >> image >> as >> name;
      EXPECT_EQ(as, "AS") << "every stage is named: FROM " << rest;
      current = &stages[name];
      current->from = image;
    } else if (current) {
      current->steps.emplace_back(instruction, rest);
    }
  }
  return stages;
}

TEST(Deploy, DockerfileHasABaseStageAndOnePluginStagePerBackend) {
  const auto stages = dockerfile_stages(test::read_file(kDeploy + "/Dockerfile"));
  ASSERT_TRUE(stages.count("base"));
  for (const auto& [instruction, args] : stages.at("base").steps)
    if (instruction == "COPY") EXPECT_EQ(args.find("libcai-backend-"), std::string::npos) << "base copies " << args;
  const std::set<std::string> backends = plugin_backends(shipped_profiles());
  ASSERT_EQ(backends, (std::set<std::string>{"cuda", "hip"}));  // what the profiles name today
  for (const std::string& b : backends) {
    ASSERT_TRUE(stages.count(b)) << "no Dockerfile stage for the " << b << " plugin";
    const Stage& s = stages.at(b);
    EXPECT_EQ(s.from, "base") << b;
    std::vector<std::string> copies;
    for (const auto& [instruction, args] : s.steps)
      if (instruction == "COPY" || instruction == "ADD") copies.push_back(args);
    ASSERT_EQ(copies.size(), 1u) << b << " must add only its plugin";
    const std::string so = "libcai-backend-" + b + ".so";
    std::istringstream words(copies[0]);
    std::vector<std::string> w{std::istream_iterator<std::string>(words), {}};
    ASSERT_EQ(w.size(), 3u) << copies[0];  // --from=<stage> <plugin> <destination>
    EXPECT_EQ(fs::path(w[1]).filename().string(), so) << copies[0];
    EXPECT_EQ(fs::path(w[2]).filename().string(), so) << copies[0];
  }
}

// The first container of the Deployment in `docs`, and the Service.
struct Manifest {
  YAML::Node deployment, service;
};
Manifest read_manifest(const fs::path& file) {
  Manifest m;
  for (const YAML::Node& doc : YAML::LoadAllFromFile(file.string())) {
    const std::string kind = doc["kind"].as<std::string>("");
    if (kind == "Deployment") m.deployment = doc;
    if (kind == "Service") m.service = doc;
  }
  return m;
}

TEST(Deploy, ManifestsAgreeWithTheProfilesAndTheDockerfile) {
  const auto ps = shipped_profiles();
  const auto stages = dockerfile_stages(test::read_file(kDeploy + "/Dockerfile"));
  std::set<std::string> with_manifest;
  int n_files = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(kDeploy + "/k8s")) {
    if (e.path().extension() != ".yaml") continue;
    ++n_files;
    SCOPED_TRACE(e.path().string());
    const Manifest m = read_manifest(e.path());
    ASSERT_TRUE(m.deployment && m.service) << "a Deployment and a Service";
    const YAML::Node pod_labels = m.deployment["spec"]["template"]["metadata"]["labels"];
    const std::string id = pod_labels["cai.dev/profile"].as<std::string>("");
    const DeviceProfile* p = find_profile(ps, id);
    ASSERT_NE(p, nullptr) << "label cai.dev/profile names no profile: '" << id << "'";
    with_manifest.insert(id);
    EXPECT_EQ(e.path().filename().string(), "cai-" + id + ".yaml");

    const YAML::Node c = m.deployment["spec"]["template"]["spec"]["containers"][0];
    const std::string stage = p->policies.backend == "cpu" ? "base" : p->policies.backend;
    EXPECT_TRUE(stages.count(stage)) << "no Dockerfile stage " << stage;
    EXPECT_EQ(c["image"].as<std::string>(""), "cai:" + stage);
    const std::vector<std::string> args = c["args"].as<std::vector<std::string>>(std::vector<std::string>{});
    auto arg_after = [&](const std::string& flag) {
      for (size_t i = 0; i + 1 < args.size(); ++i)
        if (args[i] == flag) return args[i + 1];
      return std::string();
    };
    EXPECT_EQ(arg_after("--profile"), id);
    EXPECT_EQ(arg_after("--device").substr(0, arg_after("--device").find(':')), p->policies.backend);
    EXPECT_EQ(arg_after("--host"), "0.0.0.0");

    // Exactly the profile's accelerator resource, one of it; none for the CPU.
    std::map<std::string, std::string> accelerators;
    const YAML::Node limits = c["resources"] ? c["resources"]["limits"] : YAML::Node();
    for (const auto& kv : limits) {
      const std::string name = kv.first.as<std::string>();
      if (name.find('/') != std::string::npos) accelerators[name] = kv.second.as<std::string>();
    }
    if (p->k8s_resource.empty())
      EXPECT_TRUE(accelerators.empty());
    else
      EXPECT_EQ(accelerators, (std::map<std::string, std::string>{{p->k8s_resource, "1"}}));

    // `cai doctor` runs first, in the same image, on the same device, with the same accelerator resource.
    const YAML::Node doctor = m.deployment["spec"]["template"]["spec"]["initContainers"][0];
    ASSERT_TRUE(doctor) << "an init container running cai doctor";
    EXPECT_EQ(doctor["image"].as<std::string>(""), c["image"].as<std::string>());
    EXPECT_EQ(doctor["args"].as<std::vector<std::string>>(std::vector<std::string>{}),
              (std::vector<std::string>{"doctor", "--device", arg_after("--device")}));
    EXPECT_EQ(YAML::Dump(doctor["resources"]), YAML::Dump(c["resources"]));

    const YAML::Node port = c["ports"][0];
    for (const char* probe : {"startupProbe", "livenessProbe", "readinessProbe"}) {
      ASSERT_TRUE(c[probe]) << probe;
      EXPECT_EQ(c[probe]["httpGet"]["path"].as<std::string>(""), "/health") << probe;
      EXPECT_EQ(c[probe]["httpGet"]["port"].as<std::string>(""), port["name"].as<std::string>()) << probe;
    }
    EXPECT_EQ(arg_after("--port"), port["containerPort"].as<std::string>());
    // The Service selects this Deployment's pods and forwards to the serving port.
    for (const auto& kv : m.service["spec"]["selector"])
      EXPECT_EQ(pod_labels[kv.first.as<std::string>()].as<std::string>(""), kv.second.as<std::string>());
    EXPECT_EQ(m.service["spec"]["ports"][0]["targetPort"].as<std::string>(""), port["name"].as<std::string>());
  }
  EXPECT_GE(n_files, 1);
  // Every chip a plugin image serves and a device plugin exposes has a manifest.
  for (const DeviceProfile& p : ps)
    if (stages.count(p.policies.backend) && !p.k8s_resource.empty())
      EXPECT_TRUE(with_manifest.count(p.id)) << "no deploy/k8s manifest for " << p.id;
}

TEST(Deploy, ResourceNamesComeFromTheProfilesAndAreChecked) {
  const auto ps = shipped_profiles();
  EXPECT_EQ(find_profile(ps, "nvidia-h200-sxm")->k8s_resource, "nvidia.com/gpu");
  EXPECT_EQ(find_profile(ps, "ascend-910b4")->k8s_resource, "huawei.com/Ascend910");
  EXPECT_EQ(find_profile(ps, "cambricon-mlu590")->k8s_resource, "cambricon.com/mlu");
  EXPECT_EQ(find_profile(ps, "hygon-k100-ai")->k8s_resource, "hygon.com/dcu");
  EXPECT_EQ(find_profile(ps, "cpu-x86-64")->k8s_resource, "");
  const std::string base = R"({"id": "x", "vendor": "V", "name": "X", "k8s_resource": )";
  EXPECT_TRUE(parse_profile(base + R"("example.com/npu-v2"})", "x.json").ok());
  EXPECT_TRUE(parse_profile(base + "null}", "x.json").ok());
  for (const char* bad : {R"("gpu")", R"("nvidia.com/")", R"("/gpu")", R"("Nvidia.com/gpu")", R"("nvidia/gpu")",
                          R"("nvidia.com/g pu")", "1"}) {
    auto r = parse_profile(base + bad + "}", "x.json");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message().rfind("x.json: k8s_resource: ", 0), 0u) << r.status().message();
  }
}

}  // namespace
}  // namespace cai::chips

namespace cai::chips {
namespace {

// The value after `flag` in args, or "".
std::string value_after(const std::vector<std::string>& args, const std::string& flag) {
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == flag) return args[i + 1];
  return {};
}

// deploy/k8s/multi-node/cai-<profile>-<nodes>x<slots>.yaml: an MPIJob whose launcher is rank 0 (the leader, with the
// probes and the Service), one rank per accelerator of the profile's device plugin resource (one per node on the
// CPU), the layout's ranks equal to the job's, and for accelerators the layout `cai plan` picks for DeepSeek-R1 on
// that many cards.
TEST(Deploy, MultiNodeManifestsRunThePlannersLayoutOverTheJobsRanks) {
  const auto ps = shipped_profiles();
  int n_files = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(kDeploy + "/k8s/multi-node")) {
    if (e.path().extension() != ".yaml") continue;
    ++n_files;
    SCOPED_TRACE(e.path().string());
    YAML::Node job, service;
    for (const YAML::Node& doc : YAML::LoadAllFromFile(e.path().string())) {
      if (doc["kind"].as<std::string>("") == "MPIJob") job = doc;
      if (doc["kind"].as<std::string>("") == "Service") service = doc;
    }
    ASSERT_TRUE(job && service) << "an MPIJob and a Service";
    const std::string id = job["metadata"]["labels"]["cai.dev/profile"].as<std::string>("");
    const DeviceProfile* p = find_profile(ps, id);
    ASSERT_NE(p, nullptr) << "label cai.dev/profile names no profile: '" << id << "'";
    const int slots = job["spec"]["slotsPerWorker"].as<int>(0);
    const YAML::Node replicas = job["spec"]["mpiReplicaSpecs"];
    const int nodes = 1 + replicas["Worker"]["replicas"].as<int>(0);
    EXPECT_EQ(e.path().filename().string(), fmt::format("cai-{}-{}x{}.yaml", id, nodes, slots));
    EXPECT_TRUE(job["spec"]["runLauncherAsWorker"].as<bool>(false)) << "rank 0 (the leader) runs in the launcher";

    const YAML::Node launcher = replicas["Launcher"]["template"]["spec"]["containers"][0];
    const YAML::Node worker = replicas["Worker"]["template"]["spec"]["containers"][0];
    const std::string stage = p->policies.backend == "cpu" ? "base" : p->policies.backend;
    // Each pod first runs `cai doctor` on its node's devices, with the pod's image and accelerator resource.
    for (const char* role : {"Launcher", "Worker"}) {
      const YAML::Node doctor = replicas[role]["template"]["spec"]["initContainers"][0];
      ASSERT_TRUE(doctor) << role << ": an init container running cai doctor";
      EXPECT_EQ(doctor["args"].as<std::vector<std::string>>(std::vector<std::string>{}),
                (std::vector<std::string>{"doctor", "--device", p->policies.backend}))
          << role;
      EXPECT_EQ(YAML::Dump(doctor["resources"]),
                YAML::Dump(replicas[role]["template"]["spec"]["containers"][0]["resources"]))
          << role;
    }
    for (const YAML::Node& c : {launcher, worker, replicas["Launcher"]["template"]["spec"]["initContainers"][0],
                                replicas["Worker"]["template"]["spec"]["initContainers"][0]}) {
      EXPECT_EQ(c["image"].as<std::string>(""), "cai:" + stage);
      const YAML::Node limits = c["resources"] ? c["resources"]["limits"] : YAML::Node();
      if (p->k8s_resource.empty())
        EXPECT_FALSE(limits.IsMap()) << "no accelerator resource on the CPU";
      else
        EXPECT_EQ(limits[p->k8s_resource].as<int>(0), slots) << "one accelerator per rank";
    }
    EXPECT_EQ(worker["command"][0].as<std::string>(""), "/usr/sbin/sshd");

    ASSERT_EQ(launcher["command"][0].as<std::string>(""), "mpirun");
    const auto args = launcher["args"].as<std::vector<std::string>>(std::vector<std::string>{});
    const int ranks = std::stoi(value_after(args, "-np"));
    EXPECT_EQ(ranks, nodes * slots);
    const auto cai = std::find(args.begin(), args.end(), "cai");
    ASSERT_NE(cai, args.end());
    const std::vector<std::string> cai_args(cai + 1, args.end());
    EXPECT_EQ(cai_args.front(), "serve");
    EXPECT_EQ(value_after(cai_args, "--profile"), id);
    EXPECT_EQ(value_after(cai_args, "--device"), p->policies.backend);
    EXPECT_EQ(value_after(cai_args, "--host"), "0.0.0.0");
    auto flag = [&](const char* f) {
      const std::string v = value_after(cai_args, f);
      return v.empty() ? 1 : std::stoi(v);
    };
    const int width = std::max(flag("--tp"), flag("--ep")), pp = flag("--pp");
    EXPECT_EQ(width * pp, ranks) << "the layout's ranks are the job's";
    if (!p->k8s_resource.empty()) {
      Result<ModelFootprint> r1 = load_footprint("preset:deepseek-r1");
      ASSERT_TRUE(r1.ok()) << r1.status().to_string();
      PlanRequest request;
      request.cards = ranks;
      Result<Plan> plan = make_plan(*r1, *p, request);
      ASSERT_TRUE(plan.ok()) << plan.status().to_string();
      EXPECT_TRUE(plan->fits);
      EXPECT_EQ(plan->layout.tensor_parallel, flag("--tp") == 1 ? width : flag("--tp"));
      EXPECT_EQ(plan->layout.expert_parallel, flag("--ep"));
      EXPECT_EQ(plan->layout.pipeline_parallel, pp);
    }
    for (const char* probe : {"startupProbe", "livenessProbe", "readinessProbe"}) {
      ASSERT_TRUE(launcher[probe]) << probe;
      EXPECT_EQ(launcher[probe]["httpGet"]["path"].as<std::string>(""), "/health") << probe;
    }
    EXPECT_FALSE(worker["ports"]) << "workers open no port";
    // The Service routes to the launcher's pod alone.
    const YAML::Node pod_labels = replicas["Launcher"]["template"]["metadata"]["labels"];
    for (const auto& kv : service["spec"]["selector"])
      EXPECT_EQ(pod_labels[kv.first.as<std::string>()].as<std::string>(""), kv.second.as<std::string>());
    EXPECT_NE(replicas["Worker"]["template"]["metadata"]["labels"]["cai.dev/role"].as<std::string>(""),
              service["spec"]["selector"]["cai.dev/role"].as<std::string>(""));
  }
  EXPECT_GE(n_files, 2);
}

}  // namespace
}  // namespace cai::chips
