// Loading through the `cai` verbs: a model that cannot fit is refused before loading with both byte counts, --mlock
// names RLIMIT_MEMLOCK when the limit is too low, `cai serve` takes the first part of a split GGUF and refuses a
// context its --kv-memory cannot hold.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <tuple>
#include <utility>

#include "test_paths.h"

namespace cai {
namespace {

using test::cai_bin;
std::string q8_model() { return test::data_path("quants/Q8_0.gguf"); }

// 2·10^9 context positions of the Q8_0 test model's KV cache (1 layer × 2 × 64 F32 = 512 bytes each) are 1.024 TB.
TEST(LoadCli, ModelThatCannotFitIsRefusedNamingNeededAndAvailableBytes) {
  test::CommandResult r = test::run_command(cai_bin() + " run -m " + q8_model() + " -p hi -n 1 -c 2000000000");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("does not fit"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("1024000000000 bytes of f32 KV cache"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bytes of weights"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("are available (MemAvailable)"), std::string::npos) << r.err;
}

// Without CAP_IPC_LOCK (setpriv drops it, even for root) and with a 64 KiB RLIMIT_MEMLOCK, locking the ~740 KB of
// weights is refused before any page is locked (and, where they are repacked, before that), naming the limit to
// raise; with 4 MiB it succeeds.
TEST(LoadCli, MlockFailureNamesRlimitMemlock) {
  if (!std::filesystem::exists("/usr/bin/setpriv")) GTEST_SKIP() << "needs setpriv (util-linux) to drop CAP_IPC_LOCK";
  auto run = [&](int limit_kib, const std::string& command) {
    return test::run_command("bash -c 'ulimit -l " + std::to_string(limit_kib) +
                             " && exec setpriv --inh-caps=-ipc_lock --bounding-set=-ipc_lock " + command + "'");
  };
  // The precondition: the child really runs without CAP_IPC_LOCK (bit 14 of CapEff).
  test::CommandResult caps = run(64, "grep CapEff /proc/self/status");
  ASSERT_EQ(caps.exit_code, 0) << caps.err;
  const unsigned long long cap_eff = std::stoull(caps.out.substr(caps.out.find(':') + 1), nullptr, 16);
  ASSERT_EQ((cap_eff >> 14) & 1, 0u) << caps.out;

  const std::string eval = cai_bin() + " eval --mlock -m " + q8_model() + " --tokens 1 --json";
  test::CommandResult low = run(64, eval);
  EXPECT_NE(low.exit_code, 0);
  EXPECT_NE(low.err.find("--mlock: cannot lock the 738560 bytes of weights"), std::string::npos) << low.err;
  EXPECT_NE(low.err.find("RLIMIT_MEMLOCK is 65536 bytes"), std::string::npos) << low.err;
  test::CommandResult high = run(4096, eval);
  EXPECT_EQ(high.exit_code, 0) << high.err;

  // `cai run` (--precision fast: the weights are repacked while the model is set up) refuses before that, and with
  // room to lock sets the model up and locks its packed copies.
  const std::string fast = cai_bin() + " run --mlock -m " + q8_model() + " -p hi -n 1 --temp 0";
  test::CommandResult refused = run(64, fast);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("RLIMIT_MEMLOCK is 65536 bytes"), std::string::npos) << refused.err;
  EXPECT_EQ(refused.err.find("set up the model's weights"), std::string::npos) << refused.err;
  test::CommandResult locked = run(4096, fast);
  EXPECT_EQ(locked.exit_code, 0) << locked.err;
  EXPECT_NE(locked.err.find("set up the model's weights on cpu:0 (in the device's layouts)"), std::string::npos)
      << locked.err;
}

// --no-repack under --precision exact (eval's default) is accepted with a warning that it changes nothing; under fast
// it sets the model up in the file's layout.
TEST(LoadCli, NoRepackSaysWhatItChanges) {
  test::CommandResult exact =
      test::run_command(cai_bin() + " eval --no-repack -m " + q8_model() + " --tokens 1 --json");
  EXPECT_EQ(exact.exit_code, 0) << exact.err;
  EXPECT_NE(exact.err.find("--no-repack changes nothing under --precision exact"), std::string::npos) << exact.err;
  test::CommandResult fast =
      test::run_command(cai_bin() + " run --no-repack -m " + q8_model() + " -p hi -n 1 --temp 0");
  EXPECT_EQ(fast.exit_code, 0) << fast.err;
  EXPECT_EQ(fast.err.find("changes nothing"), std::string::npos) << fast.err;
  EXPECT_NE(fast.err.find("set up the model's weights on cpu:0 (--no-repack: as in the file)"), std::string::npos)
      << fast.err;
}

// `cai serve -m <first part>` loads every part and answers a completion.
TEST(LoadCli, ServeTakesTheFirstPartOfASplitModel) {
  const std::string log = test::make_temp_dir("serve-split") + "/log";
  test::CommandResult r =
      test::run_command("bash -c '" + cai_bin() + " serve -m " +
                        test::data_path("quants/split/Q8_0-00001-of-00003.gguf") + " --port 0 -t 1 2>" + log +
                        " & pid=$!; "
                        "for i in $(seq 300); do grep -q \"engine ready\" " +
                        log +
                        " && break; sleep 0.1; done; "
                        "port=$(sed -n \"s|.*chat page: http://[^:]*:\\([0-9]*\\)/.*|\\1|p\" " +
                        log +
                        "); "
                        "curl -s -X POST http://127.0.0.1:$port/v1/completions -H \"Content-Type: application/json\" "
                        "-d \"{\\\"prompt\\\": \\\"hi\\\", \\\"max_tokens\\\": 2, \\\"ignore_eos\\\": true}\"; kill "
                        "$pid; wait $pid || true'");
  ASSERT_EQ(r.exit_code, 0) << test::read_file(log);
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out << test::read_file(log);
  EXPECT_EQ(j["usage"]["completion_tokens"], 2) << r.out;
}

// Runs `cai serve` on the Q8_0 model with `args` until the engine is ready or serve ends, then stops it (SIGTERM:
// a clean exit). Returns serve's exit status and its stderr.
std::pair<int, std::string> serve_until_ready(const std::string& args) {
  const std::string log = test::make_temp_dir("serve-kv") + "/log";
  test::CommandResult r =
      test::run_command("bash -c '" + cai_bin() + " serve -m " + q8_model() + " --port 0 -t 1 " + args + " 2>" + log +
                        " & pid=$!; "
                        "for i in $(seq 300); do grep -q \"engine ready\" " +
                        log +
                        " && break; kill -0 $pid 2>/dev/null || break; "
                        "sleep 0.1; done; kill $pid 2>/dev/null; wait $pid'");
  return {r.exit_code, test::read_file(log)};
}

// The Q8_0 model's KV cache takes 512 bytes per token, 8192 per block of 16: 64 KiB holds 8 blocks, 128 tokens.
// -c 256 with --kv-memory 64KiB (or --kv-blocks 8) cannot hold one sequence: serve refuses to start, naming both
// numbers, the bytes a full context needs and what to change. -c 128 fits and serves that context. -c alone beyond
// the automatic 256 MiB (524288 tokens) serves what fits after a warning with the same numbers.
TEST(LoadCli, ServeRefusesAContextItsKvMemoryCannotHold) {
  auto [code, err] = serve_until_ready("-c 256 --kv-memory 64KiB");
  EXPECT_EQ(code, 1) << err;
  EXPECT_NE(err.find("error: invalid argument: -c 256 needs 131072 bytes of KV cache for one sequence (16 blocks of 16 "
                     "tokens, 8192 bytes each), but --kv-memory 65536 bytes holds 8 blocks (128 tokens): raise "
                     "--kv-memory to at least 131072 bytes or lower -c to at most 128"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("engine ready"), std::string::npos) << err;

  std::tie(code, err) = serve_until_ready("-c 256 --kv-blocks 8");
  EXPECT_EQ(code, 1) << err;
  EXPECT_NE(err.find("but --kv-blocks 8 holds 128 tokens: raise --kv-blocks to at least 16 or lower -c to at most 128"),
            std::string::npos)
      << err;

  std::tie(code, err) = serve_until_ready("-c 128 --kv-memory 64KiB");
  EXPECT_EQ(code, 0) << err;
  EXPECT_NE(err.find("engine ready: context 128 tokens"), std::string::npos) << err;

  std::tie(code, err) = serve_until_ready("-c 1000000");
  EXPECT_EQ(code, 0) << err;
  EXPECT_NE(err.find("[warning] -c 1000000 needs 512000000 bytes of KV cache for one sequence (62500 blocks of 16 "
                     "tokens, 8192 bytes each), but the automatic KV cache size (268435456 bytes) holds 32768 blocks "
                     "(524288 tokens): serving a context of 524288 tokens; raise --kv-memory to at least 512000000 "
                     "bytes or lower -c to at most 524288"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("engine ready: context 524288 tokens"), std::string::npos) << err;
}

}  // namespace
}  // namespace cai
