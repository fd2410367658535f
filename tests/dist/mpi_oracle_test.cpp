// Across processes (docs/multi-node.md): the reference-logit oracles through `mpirun -np 2` and `-np 4` (loopback,
// --oversubscribe), one device per rank, at --tp 2, --pp 2, --ep 2 (DeepSeek) and --tp 2 --pp 2, on CPU ranks and on
// simt ranks, and two devices per rank; the same tolerance and greedy tokens as one process. Then the start-up errors
// that name a rank.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <ostream>

#include "cli/oracle_eval.h"
#include "mpi_launch.h"
#include "test_paths.h"

namespace cai {
namespace {

struct MpiCase {
  std::string oracle;
  int ranks = 2;
  std::string env;   // CAI_SIMT_DEVICES=N for simt ranks
  std::string args;  // --device and the layout
};

void PrintTo(const MpiCase& c, std::ostream* os) { *os << c.oracle << " -np " << c.ranks << " " << c.args; }

class OracleEvalMpi : public ::testing::TestWithParam<MpiCase> {};

TEST_P(OracleEvalMpi, MatchesReferenceLogitsAndGreedyTokens) {
  const MpiCase& c = GetParam();
  test::expect_oracle(c.oracle, c.env + " CAI_SIMT_WARP=32 " + test::mpirun(c.ranks), c.args + " --kv-dtype f32",
                      1e-3f);
}

std::vector<MpiCase> mpi_cases() {
  std::vector<MpiCase> cases;
  std::vector<std::string> all = test::kOracles;
  all.push_back(test::kMainlineGguf);
  for (const std::string& o : all) {
    std::vector<std::string> layouts = {"--tp 2", "--pp 2"};
    if (o.starts_with("deepseek")) layouts.push_back("--ep 2");
    for (const std::string& layout : layouts) {
      cases.push_back({o, 2, "", "--device cpu -t 1 " + layout});
      cases.push_back({o, 2, "CAI_SIMT_DEVICES=2", "--device simt " + layout});
    }
    // Each stage's routed experts on its own rank's host (one accelerator + RAM per node).
    if (o.starts_with("deepseek"))
      cases.push_back({o, 2, "CAI_SIMT_DEVICES=2", "--device simt --pp 2 --moe-device cpu -t 1"});
    cases.push_back({o, 4, "CAI_SIMT_DEVICES=4", "--device simt --tp 2 --pp 2"});
  }
  cases.push_back({"deepseek_v3_tiny", 4, "", "--device cpu -t 1 --ep 2 --pp 2"});
  // Two devices per process: tensor parallel inside each process and stages across them, and an all-reduce over two
  // processes' two devices each (gathered and added in the ranks' order).
  for (const char* o : {"qwen2_tiny", "deepseek_v3_tiny"})
    cases.push_back({o, 2, "CAI_SIMT_DEVICES=4", "--device simt --devices-per-rank 2 --tp 2 --pp 2"});
  cases.push_back({"deepseek_v3_tiny", 2, "CAI_SIMT_DEVICES=4", "--device simt --devices-per-rank 2 --tp 4"});
  return cases;
}

std::string case_name(const ::testing::TestParamInfo<MpiCase>& info) {
  return test::param_name(info.param.oracle + "_np" + std::to_string(info.param.ranks) + "_" + info.param.args);
}

INSTANTIATE_TEST_SUITE_P(Oracles, OracleEvalMpi, ::testing::ValuesIn(mpi_cases()), case_name);

// Only the leader writes results: the workers' stdout goes to stderr, each log line names its rank.
TEST(Mpi, OnlyTheLeaderWritesToStdout) {
  const test::CommandResult r =
      test::run_command(test::mpirun(2) + " " + test::cai_bin() + " eval -m " + test::data_path("oracle/qwen2_tiny") +
                        " --device cpu -t 1 --tp 2 --tokens 1,2,3 --greedy 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;  // one JSON line, from rank 0
  EXPECT_NE(r.err.find("[rank 1]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the leader stopped the job"), std::string::npos) << r.err;
}

// Speculative decoding across ranks: the leader drafts (prompt lookup, or the model as its own draft model on its
// device) and broadcasts the verification step; the greedy list is the one-process one.
TEST(Mpi, SpeculativeGreedyIsTheOneProcessGreedy) {
  const std::string model = test::data_path("oracle/deepseek_v3_tiny");
  const std::string eval = " eval -m " + model + " --tokens 0,7,9,7,9,7 --greedy 24 --json";
  const test::CommandResult one = test::run_command(test::cai_bin() + eval + " -t 1");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const auto greedy = [](const std::string& out) { return nlohmann::json::parse(test::last_line(out))["greedy"]; };
  const std::vector<std::string> specs = {"--spec ngram --spec-tokens 3", "--spec draft --draft-model " + model};
  for (const std::string& spec : specs) {
    const test::CommandResult r =
        test::run_command(test::mpirun(2) + " " + test::cai_bin() + eval + " --device cpu -t 1 --pp 2 " + spec);
    ASSERT_EQ(r.exit_code, 0) << spec << "\n" << r.err;
    EXPECT_EQ(greedy(r.out), greedy(one.out)) << spec;
  }
}

// DeepSeek's MTP module across ranks: the leader sends each module step with the main model's hidden states, and the
// module's block and head run split over the ranks as the layers do. Its logits match the reference at --tp 2 and
// --ep 2 on CPU and simt ranks, and MTP speculative greedy decoding gives the one-process greedy list. Where the head
// starts on another rank than the leader (--pp 2), --spec mtp is refused naming it.
TEST(Mpi, MtpModuleRunsOverTheRanks) {
  const std::string dir = test::data_path("oracle/deepseek_v3_tiny_mtp"), tmp = test::make_temp_dir("mpi_mtp");
  const nlohmann::json spec = nlohmann::json::parse(test::read_file(dir + "/tokens.json"));
  const nlohmann::json& p = spec["prompts"][2];
  std::string ids;
  for (const auto& t : p["input_ids"]) ids += (ids.empty() ? "" : ",") + std::to_string(t.get<int>());
  const std::vector<float> ref = test::read_f32(dir + "/" + p["mtp_logits_file"].get<std::string>());
  const std::string eval = " " + test::cai_bin() + " eval -m " + dir + " --kv-dtype f32 --json ";
  for (const std::string& ranks : {std::string("--device cpu -t 1 --tp 2"), std::string("--device cpu -t 1 --ep 2"),
                                   std::string("--device simt:0,simt:1 --tp 2")}) {
    const std::string out = tmp + "/mtp.f32";
    const test::CommandResult r = test::run_command("CAI_SIMT_DEVICES=2 " + test::mpirun(2) + eval + ranks +
                                                    " --tokens " + ids + " --mtp-logits " + out);
    ASSERT_EQ(r.exit_code, 0) << ranks << "\n" << r.err;
    const auto [diff, max_ref] = test::max_diff_and_ref(test::read_f32(out), ref);
    EXPECT_LE(diff, 1e-3f) << ranks;
  }
  const auto greedy = [](const test::CommandResult& r) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(test::last_line(r.out)) : nlohmann::json{};
  };
  // The drafts are the one-process module's too: the same counts drafted and accepted.
  const std::string decode = "--tokens " + ids + " --greedy 12";
  const nlohmann::json plain = greedy(test::run_command(eval + "-t 1 " + decode));
  const nlohmann::json one = greedy(test::run_command(eval + "-t 1 " + decode + " --spec mtp --spec-tokens 2"));
  const nlohmann::json ranks = greedy(
      test::run_command(test::mpirun(2) + eval + "--device cpu -t 1 --tp 2 " + decode + " --spec mtp --spec-tokens 2"));
  EXPECT_EQ(ranks["greedy"], plain["greedy"]);
  EXPECT_GT(ranks["spec"]["drafted"].get<int>(), 0);
  EXPECT_EQ(ranks["spec"]["drafted"], one["spec"]["drafted"]);
  EXPECT_EQ(ranks["spec"]["accepted"], one["spec"]["accepted"]);
  const test::CommandResult pp =
      test::run_command(test::mpirun(2) + eval + "--device cpu -t 1 --pp 2 --tokens 0,7 --greedy 4 --spec mtp");
  EXPECT_NE(pp.exit_code, 0);
  EXPECT_NE(pp.err.find("--spec mtp in an MPI job: the head's first rank rank1/cpu:0 runs on rank 1"),
            std::string::npos)
      << pp.err;
}

// simt ranks all-reduce through their backend's collectives across processes (the CaiCollectives path NCCL takes:
// a unique id from rank 0, sent over MPI, each rank joining), with one process's greedy tokens; CPU ranks, whose
// backend has none, all-reduce through MPI.
TEST(Mpi, RanksOfOneBackendAllReduceThroughItsLibrary) {
  const std::string eval = " eval -m " + test::data_path("oracle/qwen2_tiny") + " --tokens 1,2,3 --greedy 4 --json";
  const auto greedy = [](const std::string& out) { return nlohmann::json::parse(test::last_line(out))["greedy"]; };
  const test::CommandResult one = test::run_command(test::cai_bin() + eval + " -t 1");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const test::CommandResult simt = test::run_command("CAI_SIMT_DEVICES=2 " + test::mpirun(2) + " " + test::cai_bin() +
                                                     eval + " --device simt --tp 2 --kv-dtype f32");
  ASSERT_EQ(simt.exit_code, 0) << simt.err;
  EXPECT_EQ(greedy(simt.out), greedy(one.out));
  for (const char* rank : {"[rank 0]", "[rank 1]"}) {
    const size_t line = simt.err.find(std::string(rank) + " [info] collectives over ");
    ASSERT_NE(line, std::string::npos) << simt.err;
    EXPECT_NE(simt.err.substr(line, simt.err.find('\n', line) - line)
                  .find("simt collectives (in-plugin, rank order), across processes"),
              std::string::npos)
        << simt.err;
  }
  const test::CommandResult cpu =
      test::run_command(test::mpirun(2) + " " + test::cai_bin() + eval + " --device cpu -t 1 --tp 2");
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  EXPECT_NE(cpu.err.find("collectives over cpu:0,rank1/cpu:0: MPI ("), std::string::npos) << cpu.err;
}

// Stage boundaries between simt ranks move through the plugin's point-to-point calls (ncclSend / ncclRecv on GPUs),
// with one process's greedy tokens. A library call that never completes (CAI_SIMT_COLLECTIVE_HANG=1: rank 1's calls
// wait until aborted, as NCCL's do when a peer died) is aborted by the collective watchdog after --collective-timeout:
// the job fails within seconds instead of hanging, the leader naming the failed rank.
TEST(Mpi, StageMovesThroughTheLibraryAndAHungCallIsAborted) {
  const std::string eval = " " + test::cai_bin() + " eval -m " + test::data_path("oracle/qwen2_tiny") +
                           " --tokens 1,2,3 --greedy 4 --json --device simt --pp 2 --kv-dtype f32";
  const test::CommandResult one = test::run_command(
      test::cai_bin() + " eval -m " + test::data_path("oracle/qwen2_tiny") + " --tokens 1,2,3 --greedy 4 --json");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const test::CommandResult staged = test::run_command("CAI_SIMT_DEVICES=2 " + test::mpirun(2) + eval);
  ASSERT_EQ(staged.exit_code, 0) << staged.err;
  EXPECT_EQ(nlohmann::json::parse(test::last_line(staged.out))["greedy"],
            nlohmann::json::parse(test::last_line(one.out))["greedy"]);
  EXPECT_NE(staged.err.find("[rank 0] [info] collectives over simt:0,rank1/simt:1: simt collectives"),
            std::string::npos)
      << staged.err;

  const auto t0 = std::chrono::steady_clock::now();
  const test::CommandResult hung = test::run_command("CAI_SIMT_COLLECTIVE_HANG=1 CAI_SIMT_DEVICES=2 " +
                                                     test::mpirun(2) + eval + " --collective-timeout 3");
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(hung.exit_code, 0);
  EXPECT_LT(sec, 30);
  EXPECT_NE(hung.err.find("[rank 1] [error] collective watchdog: recv from rank0/simt:0 to simt:1"), std::string::npos)
      << hung.err;
  EXPECT_NE(hung.err.find("did not complete within 3 s (a peer died or stopped); aborted it"), std::string::npos)
      << hung.err;
  EXPECT_NE(hung.err.find("rank failed"), std::string::npos) << hung.err;
}

// --moe-device cpu across ranks: each stage's routed experts stay in its own process's host memory, so a rank's
// accelerator holds its layers less their experts (the oracles above check the numbers); another device is refused.
TEST(Mpi, RoutedExpertsStayOnEachRanksHost) {
  const std::string eval = " " + test::cai_bin() + " eval -m " + test::data_path("oracle/deepseek_v3_tiny") +
                           " --tokens 0,7 --greedy 2 --json --device simt --pp 2 -t 1";
  const auto bytes = [](const test::CommandResult& r) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::map<std::string, int64_t> by_device;
    if (r.exit_code != 0) return by_device;
    const nlohmann::json out = nlohmann::json::parse(test::last_line(r.out));
    for (const auto& d : out["devices"]) by_device[d["name"].get<std::string>()] = d["weight_bytes"].get<int64_t>();
    return by_device;
  };
  auto whole = bytes(test::run_command("CAI_SIMT_DEVICES=2 " + test::mpirun(2) + eval));
  auto split = bytes(test::run_command("CAI_SIMT_DEVICES=2 " + test::mpirun(2) + eval + " --moe-device cpu"));
  for (const auto& [simt, cpu] : {std::pair{"simt:0", "cpu:0"}, std::pair{"rank1/simt:1", "rank1/cpu:0"}}) {
    EXPECT_GT(split[cpu], 0) << cpu;
    EXPECT_EQ(split[simt] + split[cpu], whole[simt]) << simt;  // the stage's experts moved to its host, nothing else
  }
  const test::CommandResult other =
      test::run_command("CAI_SIMT_DEVICES=2 " + test::mpirun(2) + eval + " --moe-device simt:1");
  EXPECT_NE(other.exit_code, 0);
  EXPECT_NE(other.err.find("--moe-device simt:1 in an MPI job: each rank's routed experts run on its own host"),
            std::string::npos)
      << other.err;
}

// A device list alone over the ranks: where every rank's device has the same profile (here given with --profile, as
// simt has none), every rank runs the layout `cai plan` picks for the job's devices (TP 2 x EP 2 for the tiny DeepSeek
// on two H200s); without one, pipeline stages. Both give one process's greedy tokens.
TEST(Mpi, ADeviceListAloneGetsThePlannersLayoutOnEveryRank) {
  const std::string model = test::data_path("oracle/deepseek_v3_tiny");
  const std::string eval = " " + test::cai_bin() + " eval -m " + model + " --tokens 1,2,3 --greedy 2 --json -t 1 ";
  const test::CommandResult one = test::run_command(eval + "--kv-dtype f32");
  const test::CommandResult planned = test::run_command("CAI_SIMT_DEVICES=2 " + test::mpirun(2) + eval +
                                                        "--device simt --kv-dtype f32 --profile nvidia-h200-sxm");
  const test::CommandResult staged =
      test::run_command("CAI_SIMT_DEVICES=2 " + test::mpirun(2) + eval + "--device simt --kv-dtype f32");
  for (const test::CommandResult* r : {&one, &planned, &staged}) ASSERT_EQ(r->exit_code, 0) << r->err;
  for (const char* rank : {"[rank 0]", "[rank 1]"}) {
    EXPECT_NE(planned.err.find(std::string(rank) + " [info] layout from `cai plan -m " + model +
                               " --chip nvidia-h200-sxm --cards 2"),
              std::string::npos)
        << planned.err;
    EXPECT_NE(staged.err.find(std::string(rank) + " [info] layout: the ranks' devices share no device profile"),
              std::string::npos)
        << staged.err;
  }
  EXPECT_NE(planned.err.find("TP 2 x EP 2"), std::string::npos) << planned.err;
  const auto greedy = [](const test::CommandResult& r) {
    return nlohmann::json::parse(test::last_line(r.out))["greedy"];
  };
  EXPECT_EQ(greedy(planned), greedy(one));
  EXPECT_EQ(greedy(staged), greedy(one));
}

TEST(Mpi, RanksMustDivideTheLayout) {
  const test::CommandResult r =
      test::run_command(test::mpirun(2) + " " + test::cai_bin() + " eval -m " + test::data_path("oracle/qwen2_tiny") +
                        " --device cpu -t 1 --tp 4 --tokens 1,2");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--tp 4 x --pp 1 needs 4 devices, but the MPI job has 2 ranks"), std::string::npos) << r.err;
}

TEST(Mpi, ALocalRankPastTheDeviceListIsNamed) {
  const test::CommandResult r =
      test::run_command("CAI_SIMT_DEVICES=1 " + test::mpirun(2) + " " + test::cai_bin() + " eval -m " +
                        test::data_path("oracle/qwen2_tiny") + " --device simt --tp 2 --tokens 1,2");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("rank 1 is local rank 1"), std::string::npos) << r.err;
}

TEST(Mpi, RanksWithDifferentModelsAreRefused) {
  // Rank 1 gets another KV dtype through its own environment (CAI_KV_DTYPE is not an option: use an MPMD launch).
  const std::string model = test::data_path("oracle/qwen2_tiny");
  const test::CommandResult r =
      test::run_command(test::mpirun(1) + " " + test::cai_bin() + " eval -m " + model +
                        " --device cpu --tp 2 --tokens 1,2 --kv-dtype "
                        "f32 : -np 1 " +
                        test::cai_bin() + " eval -m " + model + " --device cpu --tp 2 --tokens 1,2 --kv-dtype bf16");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("rank 1 loaded a different model or layout than rank 0: KV dtype"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace cai
