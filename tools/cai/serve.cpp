// `cai serve`: the OpenAI-compatible HTTP server (listens at once, loads the model, then serves); options from flags
// or a YAML --config file (flags win).
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <charconv>
#include <filesystem>
#include <mutex>
#include <thread>

#include "cai/engine.h"
#include "core/log.h"
#include "dist/process_roles.h"
#include "hal/process_group.h"
#include "server/config_file.h"
#include "server/http_server.h"
#include "verbs.h"

namespace cai::cli {

namespace {

struct ServeOptions {
  CommonOptions common;
  std::string config_file;
  server::ServerOptions http;
  EngineOptions engine;
  std::string kv_memory;  // "512MiB" etc.; empty = the engine default
  std::string chat_template_file;
  double header_timeout_s = 10;         // --header-timeout
  double idle_timeout_s = 5;            // --idle-timeout
  std::vector<std::string> logit_bias;  // --logit-bias ID:BIAS,...
};

// "ID:BIAS" → (id, bias), e.g. "1:14" or "128001:-100".
Result<std::pair<int32_t, float>> parse_logit_bias(const std::string& item) {
  const size_t colon = item.find(':');
  int32_t id = -1;
  float bias = 0;
  const char* end = item.data() + item.size();
  if (colon == std::string::npos || std::from_chars(item.data(), item.data() + colon, id).ptr != item.data() + colon ||
      id < 0 || std::from_chars(item.data() + colon + 1, end, bias).ptr != end || !(bias >= -100 && bias <= 100))
    return invalid_argument("--logit-bias: '{}' is not TOKEN_ID:BIAS with a bias in [-100, 100]", item);
  return std::pair{id, bias};
}

// Fills every option the command line (or environment) left unset from the YAML file: flags win.
Status apply_config_file(CLI::App& cmd, const std::string& path) {
  CAI_ASSIGN_OR_RETURN(const std::string yaml, read_text_file(path, "config file"));
  CAI_ASSIGN_OR_RETURN(std::vector<server::ConfigEntry> entries, server::parse_config_yaml(yaml));
  for (server::ConfigEntry& e : entries) {
    CLI::Option* opt = e.name == "config" ? nullptr : cmd.get_option_no_throw("--" + e.name);
    if (!opt) return invalid_argument("config file {}: unknown option '{}'", path, e.name);
    if (opt->count() > 0) continue;
    try {
      opt->add_result(e.values);
      opt->run_callback();  // validates and stores the value
    } catch (const CLI::Error& err) {
      return invalid_argument("config file {}: option '{}': {}", path, e.name, err.what());
    }
  }
  return {};
}

// Completes the options: template file, model id, KV memory, connection limits.
Status finish_options(ServeOptions& o) {
  if (!o.chat_template_file.empty()) {
    CAI_ASSIGN_OR_RETURN(o.http.chat_template, read_text_file(o.chat_template_file, "chat template file"));
  }
  std::erase(o.http.model_names, std::string());
  if (o.http.model_names.empty()) {
    std::filesystem::path p(o.common.model);
    if (!p.has_filename()) p = p.parent_path();
    o.http.model_names = {p.extension() == ".gguf" ? p.stem().string() : p.filename().string()};
  }
  if (!o.kv_memory.empty()) {
    CAI_ASSIGN_OR_RETURN(o.engine.kv_memory_bytes, server::parse_byte_size(o.kv_memory));
  }
  for (const std::string& item : o.logit_bias) {
    CAI_ASSIGN_OR_RETURN(auto token_bias, parse_logit_bias(item));
    o.http.logit_bias.push_back(token_bias);
  }
  auto ms = [](double seconds) { return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)); };
  o.http.connections.header_timeout = ms(o.header_timeout_s);
  o.http.connections.idle_timeout = ms(o.idle_timeout_s);
  o.http.connections.max_connections = server::max_connections_for(o.engine, o.http.connections.max_connections);
  return {};
}

Status serve(ServeOptions o) {
  if (o.common.model.empty()) return invalid_argument("no model: pass -m PATH (or `model:` in the config file)");
  CAI_TRY(finish_options(o));
  // Signals are taken by sigwait below; every thread created from here on inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGINT, SIGTERM, SIGUSR1}) sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  if (dist::is_worker()) {  // a worker of an MPI job opens no port: it runs the leader's steps until stopped
    CAI_ASSIGN_OR_RETURN(LoadedModel lm, open_model(o.common, 0, 0));
    return internal_error("a worker's open_model returned");
  }
  server::HttpServer http(o.http);
  CAI_TRY(http.start());
  CAI_LOG_INFO("chat page: http://{}:{}/", o.http.host, http.port());
  CAI_LOG_INFO("loading {} (GET /health answers 503 until ready)", o.common.model);
  std::mutex mu;
  Status load_status;
  bool loaded = false;
  std::thread loader([&] {
    int64_t ctx_size = 0;
    Status st = [&]() -> Status {
      CAI_ASSIGN_OR_RETURN(LoadedModel lm, open_model(o.common, int64_t{o.engine.n_kv_blocks} * o.engine.block_size,
                                                      o.engine.kv_memory_bytes, &o.engine));
      CAI_ASSIGN_OR_RETURN(o.engine.spec, spec_options(o.common));
      CAI_ASSIGN_OR_RETURN(LoadedModel draft, load_draft_model(o.common, lm));
      CAI_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::create(std::move(lm), o.engine, std::move(draft)));
      ctx_size = engine->ctx_size();
      return http.attach(std::move(engine));
    }();
    {
      std::lock_guard lock(mu);
      load_status = st;
      loaded = true;
    }
    // Logged once a signal would shut the server down cleanly (before, a SIGTERM right after this line could still
    // find it loading and exit 130).
    if (st.ok())
      CAI_LOG_INFO("engine ready: context {} tokens, max batch {}", ctx_size, o.engine.max_batch);
    else
      kill(getpid(), SIGUSR1);  // wake the main thread
  });
  int sig = 0;
  sigwait(&signals, &sig);
  std::unique_lock lock(mu);
  if (!loaded) {  // interrupted while loading: nothing to drain
    CAI_LOG_INFO("interrupted while loading");
    std::fflush(stderr);
    std::_Exit(130);
  }
  lock.unlock();
  loader.join();
  if (!load_status.ok()) {
    http.stop();
    return load_status;
  }
  CAI_LOG_INFO("shutting down");
  if (hal::ProcessGroup* group = hal::process_group()) {
    // mpirun sends SIGTERM to every rank when one fails as well as when the job is stopped: a step waiting on other
    // ranks fails now (its requests get rank_failed before mpirun's SIGKILL follows, and the exit status is non-zero);
    // an idle server stops cleanly.
    group->interrupt(fmt::format("the MPI job is ending (signal {}: a rank failed or the job was stopped)", sig));
  }
  http.stop();
  return {};
}

}  // namespace

void register_serve(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ServeOptions>();
  o->http.model_names.clear();  // default: derived from the model path
  CLI::App* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server with a chat page at /");
  add_common_options(*cmd, o->common);
  add_spec_options(*cmd, o->common);
  cmd->get_option("--model")->required(false);  // may come from the config file; checked in serve()
  cmd->add_option("--config", o->config_file, "YAML file of options (long option names as keys); flags override it");
  cmd->add_option("--host", o->http.host, "address to bind (default 127.0.0.1: this machine only)");
  cmd->add_option("--port", o->http.port, "TCP port; 0 = any free port (logged)")->check(CLI::Range(0, 65535));
  cmd->add_option("--api-key", o->http.api_key, "require \"Authorization: Bearer KEY\" on /v1/*")
      ->envname("CAI_API_KEY");
  cmd->add_option("--served-model-name,--model-name", o->http.model_names,
                  "model ids clients may use, e.g. a,b,c, or globs such as 'claude-*' (/v1/models lists the exact "
                  "ids; responses name the one asked for, else the first; default: the file/directory name)")
      ->delimiter(',');
  cmd->add_option("--default-max-tokens", o->http.default_max_tokens,
                  "chat max_tokens when a request gives none (default 8192; 0 = all the context the prompt leaves)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-output-tokens", o->http.max_output_tokens,
                  "most tokens any request may generate: larger max_tokens are lowered to it (0 = no cap)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--logit-bias", o->logit_bias,
                  "TOKEN_ID:BIAS,... added to every request's logits (a request's own logit_bias for a token wins)")
      ->delimiter(',');
  cmd->add_option("--chat-template", o->chat_template_file, "Jinja chat template file replacing the model's");
  cmd->add_flag("--log-prompts", o->http.log_prompts,
                "log each generation request's prompt, as the model reads it (template applied), at info with its "
                "request id (the access log never holds text otherwise)");
  cmd->add_option("--max-body", o->http.max_body_bytes, "largest request body in bytes (larger: 413)");
  cmd->add_option("--max-batch", o->engine.max_batch, "most sequences per step")->check(CLI::PositiveNumber);
  cmd->add_option("--max-tokens-per-step", o->engine.max_tokens_per_step, "token budget per step")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--kv-blocks", o->engine.n_kv_blocks, "KV cache blocks (0 = from --kv-memory)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--kv-memory", o->kv_memory, "KV cache size: bytes or with a unit, e.g. 512MiB, 4GiB");
  cmd->add_option("--block-size", o->engine.block_size, "KV positions per block")->check(CLI::PositiveNumber);
  cmd->add_option("-c,--ctx-size", o->engine.ctx_size, "tokens per sequence (0 = the model's context)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-queue", o->engine.max_queue, "waiting requests before 429")->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-connections", o->http.connections.max_connections,
                  "open connections at once (more: 503); raised to hold --max-batch + --max-queue")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--header-timeout", o->header_timeout_s, "seconds a client has to send a request's head (then 408)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--idle-timeout", o->idle_timeout_s, "seconds an idle keep-alive connection stays open")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--thermal-limit", o->common.thermal_limit_c,
                  "°C at which the step token budget halves (doubled back 5 °C below); 0 = off; default: the device "
                  "profile's thermal_limit_c, else off")
      ->check(CLI::Range(0.0, 150.0));
  add_kv_offload_option(*cmd, o->common);
  cmd->add_option("--prefix-caching", o->engine.prefix_caching, "reuse KV blocks of shared prompt prefixes");
  cmd->callback([o, cmd, &exit_code] {
    Status st = o->config_file.empty() ? Status() : apply_config_file(*cmd, o->config_file);
    if (st.ok()) st = serve(*o);
    if (!st.ok()) exit_code = fail(st);
  });
}

}  // namespace cai::cli
