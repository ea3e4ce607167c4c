#include "server/daemon/flags.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/checked.h"
#include "common/index_map.h"
#include "common/sizes.h"
#include "common/status_macros.h"
#include "server/daemon/cluster_flags.h"
#include "server/security/tenant.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "gRPC listen address (host:port; port 0 picks one). Loopback by default: serving other "
          "hosts is an explicit choice, e.g. 0.0.0.0:50051");
ABSL_FLAG(std::string, backend, "auto",
          "Device backend: auto (cuda if a GPU is usable), cuda, host");
ABSL_FLAG(int, host_devices, 4, "Number of simulated devices of the host backend");
ABSL_FLAG(std::string, memory_limit, "",
          "Per-device memory limit, bytes with optional KiB/MiB/GiB suffix (default: host 1GiB, "
          "cuda --memory_fraction of each card)");
ABSL_FLAG(double, memory_fraction, 0.9, "CUDA: fraction of each card's memory to admit");
ABSL_FLAG(std::string, transfer, "peer",
          "CUDA: cross-device copies by peer (cudaMemcpyPeerAsync, measured fastest on NVLink) or "
          "nccl (send/recv, all transfers of a reshard in one NCCL group)");
ABSL_FLAG(int, loop_unroll, 8,
          "CUDA: RunGraph loops whose body is an elementwise chain ending in all()/any() run as "
          "one runtime-compiled kernel per iteration, this many per conditional-node iteration; "
          "0 records such loops, and straight-line chains of elementwise ops, op by op");
ABSL_FLAG(bool, persistent_loops, true,
          "CUDA: a fused loop runs as one persistent cooperative kernel per GPU and "
          "conditional-node iteration, with a grid barrier (over several GPUs, an agreed "
          "verdict) between its iterations, instead of --loop_unroll copies of a one-iteration "
          "kernel (measured faster at every size, on one GPU and two)");
ABSL_FLAG(std::string, graph_agreement, "auto",
          "CUDA: how the per-device graphs of a RunGraph program over several GPUs agree on each "
          "loop or if condition: peer (votes through peer memory, in the body's last kernel), "
          "nccl (an NCCL all-reduce before each condition; loops are not fused and copies "
          "between devices run the program eagerly), or auto (peer where every pair of the "
          "program's GPUs has peer access, else nccl)");
ABSL_FLAG(std::string, metrics_listen, "127.0.0.1:9464",
          "Prometheus /metrics address (loopback by default, e.g. 0.0.0.0:9464 for a scraper on "
          "another host); empty disables");
ABSL_FLAG(std::string, port_file, "", "Write the bound gRPC port to this file once serving");
ABSL_FLAG(std::string, health_listen, "127.0.0.1:8081",
          "grpc.health.v1 address, serving only health checks, without credentials: services "
          "'liveness', 'readiness' and '' (both). Loopback by default, e.g. 0.0.0.0:8081 for "
          "kubelet probes; empty disables");
ABSL_FLAG(std::string, health_port_file, "",
          "Write the bound health port to this file once it serves (for scripts and tests)");
ABSL_FLAG(std::string, log_level, "info",
          "trace, debug, info, warn, error, critical or off, in any case; debug logs every call");
ABSL_FLAG(std::string, log_format, "text",
          "text (human-readable lines) or json (one object per line: time, level, message, and "
          "request_id, method, peer and tenant while a call is served)");
ABSL_FLAG(double, log_progress_seconds, 10,
          "A transfer running longer than this logs its progress this often; 0 disables");
ABSL_FLAG(int, drain_grace_seconds, 5,
          "On SIGTERM/SIGINT, how long readiness reports NOT_SERVING (and new calls are answered "
          "UNAVAILABLE) before the API listener closes, so load balancers and probes see it");
ABSL_FLAG(int, drain_seconds, 10,
          "After the grace period, how long in-flight calls may finish; a call still running then "
          "ends UNAVAILABLE, and the process exits at most 1 s later even if a handler is busy");
ABSL_FLAG(int, keepalive_time_seconds, 30,
          "Ping a client connection idle for this long, to find clients that died without "
          "closing it");
ABSL_FLAG(int, keepalive_timeout_seconds, 10,
          "Close a connection whose keepalive ping is unanswered for this long; its calls end and "
          "its session expires after --session_lease_seconds");
ABSL_FLAG(std::string, max_message_size, "64MiB",
          "Largest gRPC message received or sent (bytes, or with a KiB/MiB suffix; 1MiB to "
          "1GiB). Bulk data is streamed in smaller pieces; this bounds metadata such as index "
          "maps");
ABSL_FLAG(int64_t, session_lease_seconds, 60,
          "A client session with no call or KeepAlive for this long expires and its unnamed "
          "arrays are deleted");
ABSL_FLAG(int64_t, max_chunks, distarray::kDefaultMaxChunks,
          "Most chunks an index map may have (more is INVALID_ARGUMENT)");
ABSL_FLAG(int64_t, upload_idle_timeout_ms, 30000,
          "An upload stream that sends no message for this long is cancelled (CANCELLED) and its "
          "memory released; 0 disables");
ABSL_FLAG(int64_t, upload_min_bytes_per_second, 1024,
          "An upload stream must deliver at least this many bytes per second, measured over each "
          "--upload_idle_timeout_ms window, or it is cancelled like an idle one (a trickle holds "
          "a thread and a reservation as long as a silent stream); 0 disables");
ABSL_FLAG(int, max_list_page_size, 1000, "Most arrays in one ListArrays page");
ABSL_FLAG(int, max_concurrent_calls, 128,
          "Most calls served at once (each holds at most two transfer slabs, 32 MiB); a call "
          "beyond it is answered RESOURCE_EXHAUSTED at once");
ABSL_FLAG(int, max_concurrent_calls_per_tenant, 32,
          "With --auth_tokens_file: most calls one tenant may have in flight (KeepAlive not "
          "counted), so one tenant cannot take every call slot; a call beyond it is answered "
          "RESOURCE_EXHAUSTED at once. Above --max_concurrent_calls: only that bound applies");
ABSL_FLAG(int64_t, max_sessions_per_tenant, distarray::SessionLimits::kDefaultMaxPerTenant,
          "With --auth_tokens_file: most live sessions one tenant may hold (the daemon holds "
          "65536 in all); a new session beyond it is answered RESOURCE_EXHAUSTED");
ABSL_FLAG(std::string, graphs, "on",
          "RunGraph: 'on' records programs into graphs replayed on the devices (CUDA graphs with "
          "conditional nodes, one per GPU, on the CUDA backend; one-device programs on the host "
          "backend); 'off' runs every program eagerly from the host");
ABSL_FLAG(int64_t, run_graph_default_seconds, 600,
          "RunGraph: how long a call whose client set no deadline may run; past it the call "
          "stops on the devices and answers DEADLINE_EXCEEDED naming this flag");
ABSL_FLAG(int64_t, run_graph_max_seconds, 3600,
          "RunGraph: how long any call may run, whatever deadline its client set");
ABSL_FLAG(int64_t, max_loop_iterations, int64_t{1} << 30,
          "RunGraph: the largest max_iterations a program's loop may ask for");
ABSL_FLAG(int, max_program_statements, 4096,
          "RunGraph: most statements in a program, counted over every body");
ABSL_FLAG(int, max_registered_programs, 1024, "Most programs kept by RegisterProgram, per tenant");
ABSL_FLAG(std::string, max_program_bytes, "16MiB",
          "Most daemon memory one program may take as parsed (several times its wire size), "
          "inline in RunGraph or given to RegisterProgram; more is INVALID_ARGUMENT");
ABSL_FLAG(std::string, tenant_program_bytes, "64MiB",
          "Per tenant: most daemon memory its registered programs may take together (as "
          "--max_program_bytes measures them); beyond it RegisterProgram answers "
          "RESOURCE_EXHAUSTED, and DeleteProgram gives the bytes back");
ABSL_FLAG(std::string, shared_memory, "auto",
          "on: clients that see this host's /dev/shm (GetServerInfo's host_id) and run as the "
          "daemon's user may transfer through shared-memory segments the daemon makes for their "
          "session (CreateSharedMemory); off: those calls answer FAILED_PRECONDITION and clients "
          "stream; auto: on without --auth_tokens_file, off with it (tenants get shared memory "
          "only with an explicit 'on')");
ABSL_FLAG(int, shared_memory_max_segments, 16,
          "Most shared-memory segments each tenant may hold at once (CreateSharedMemory beyond it "
          "is RESOURCE_EXHAUSTED)");
ABSL_FLAG(std::string, shared_memory_max_bytes, "4GiB",
          "Most bytes of shared-memory segments each tenant may hold at once (bytes, or with a "
          "KiB/MiB/GiB suffix)");
ABSL_FLAG(int, max_cached_graphs, 64,
          "Most executable graphs RunGraph keeps (least recently used goes first)");

ABSL_FLAG(std::string, tls_cert_file, "",
          "PEM certificate chain of the API port; with --tls_key_file the API is served over TLS");
ABSL_FLAG(std::string, tls_key_file, "", "PEM private key of --tls_cert_file");
ABSL_FLAG(std::string, tls_client_ca_file, "",
          "PEM CA certificates; when set, clients must present a certificate signed by one of "
          "them (mutual TLS)");
ABSL_FLAG(std::string, auth_tokens_file, "",
          "File of 'tenant: token' lines; every API call must then carry 'authorization: Bearer "
          "<token>' and sees only its tenant's arrays. Re-read on SIGHUP. Empty: no "
          "authentication, everything is the tenant 'default'");
ABSL_FLAG(std::string, tenant_memory_quota, "",
          "Per-device memory quota of each tenant's arrays, e.g. 8GiB; 0 or empty: none");
ABSL_FLAG(
    std::string, tenant_memory_quota_overrides, "",
    "Per-tenant quotas replacing --tenant_memory_quota, e.g. 'alice=16GiB,batch=0' (0: none)");
ABSL_FLAG(std::string, metrics_tenant_labels, "off",
          "on: the tenant metrics carry a 'tenant' label (tenant names on the unauthenticated "
          "metrics port); off: they are aggregated over tenants");

namespace distarray::daemon {
namespace {

absl::Status BadFlag(absl::string_view flag, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", why));
}

// A quota: a byte count, or 0 / empty for none.
absl::StatusOr<int64_t> ParseQuota(const std::string& text) {
  if (text.empty() || text == "0") return 0;
  return ParseByteCount(text);
}

// "tenant=bytes,tenant=bytes" (--tenant_memory_quota_overrides).
absl::StatusOr<absl::flat_hash_map<std::string, int64_t>> ParseQuotaOverrides(
    const std::string& text) {
  absl::flat_hash_map<std::string, int64_t> quotas;
  if (text.empty()) return quotas;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    const std::vector<std::string> parts = absl::StrSplit(item, absl::MaxSplits('=', 1));
    if (parts.size() != 2) {
      return BadFlag("tenant_memory_quota_overrides",
                     absl::StrCat("expected tenant=bytes, got '", item, "'"));
    }
    if (absl::Status valid = ValidateTenantName(parts[0], "tenant"); !valid.ok()) {
      return BadFlag("tenant_memory_quota_overrides", valid.message());
    }
    absl::StatusOr<int64_t> bytes = ParseQuota(parts[1]);
    if (!bytes.ok()) {
      return BadFlag("tenant_memory_quota_overrides",
                     absl::StrCat(parts[0], ": ", bytes.status().message()));
    }
    if (!quotas.emplace(parts[0], *bytes).second) {
      return BadFlag("tenant_memory_quota_overrides", absl::StrCat(parts[0], " is given twice"));
    }
  }
  return quotas;
}

}  // namespace

absl::StatusOr<int64_t> ParseByteCount(std::string text) {
  int64_t unit = 1;
  for (auto [suffix, scale] :
       {std::pair{"KiB", 1_KiB}, std::pair{"MiB", 1_MiB}, std::pair{"GiB", 1_GiB}}) {
    if (text.size() > 3 && text.ends_with(suffix)) {
      unit = scale;
      text.resize(text.size() - 3);
      break;
    }
  }
  int64_t n = 0;
  // Digits only: SimpleAtoi would also take "12 " and "+12".
  const bool digits = !text.empty() && std::all_of(text.begin(), text.end(),
                                                   [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || !absl::SimpleAtoi(text, &n) || n <= 0) {
    return absl::InvalidArgumentError("expected a positive byte count such as 512MiB");
  }
  return CheckedMul(n, unit, "byte count");
}

absl::StatusOr<spdlog::level::level_enum> ParseLogLevel(const std::string& text) {
  const std::string lower = absl::AsciiStrToLower(text);
  for (auto [name, level] :
       {std::pair{"trace", spdlog::level::trace}, std::pair{"debug", spdlog::level::debug},
        std::pair{"info", spdlog::level::info}, std::pair{"warn", spdlog::level::warn},
        std::pair{"warning", spdlog::level::warn}, std::pair{"error", spdlog::level::err},
        std::pair{"critical", spdlog::level::critical}, std::pair{"off", spdlog::level::off}}) {
    if (lower == name) return level;
  }
  return BadFlag("log_level",
                 absl::StrCat("one of trace, debug, info, warn, error, critical, off (any case), "
                              "got '",
                              text, "'"));
}

absl::StatusOr<DaemonOptions> DaemonOptionsFromFlags() {
  DaemonOptions o;
  o.listen = absl::GetFlag(FLAGS_listen);
  o.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  o.port_file = absl::GetFlag(FLAGS_port_file);
  o.health_listen = absl::GetFlag(FLAGS_health_listen);
  o.health_port_file = absl::GetFlag(FLAGS_health_port_file);
  ASSIGN_OR_RETURN(o.log_level, ParseLogLevel(absl::GetFlag(FLAGS_log_level)));
  const std::string log_format = absl::GetFlag(FLAGS_log_format);
  if (log_format != "text" && log_format != "json") {
    return BadFlag("log_format", absl::StrCat("'text' or 'json', got '", log_format, "'"));
  }
  o.log_json = log_format == "json";
  const double progress = absl::GetFlag(FLAGS_log_progress_seconds);
  if (!(progress >= 0 && progress <= 86400)) {
    return BadFlag("log_progress_seconds", "must be in [0, 86400]");
  }
  o.log_progress = absl::Seconds(progress);

  ASSIGN_OR_RETURN(o.cluster, ClusterOptionsFromFlags());
  o.backend.kind = absl::GetFlag(FLAGS_backend);
  o.backend.host_devices = absl::GetFlag(FLAGS_host_devices);
  o.backend.memory_fraction = absl::GetFlag(FLAGS_memory_fraction);
  o.backend.transfer = absl::GetFlag(FLAGS_transfer);
  o.backend.loop_unroll = absl::GetFlag(FLAGS_loop_unroll);
  o.backend.persistent_loops = absl::GetFlag(FLAGS_persistent_loops);
  o.backend.graph_agreement = absl::GetFlag(FLAGS_graph_agreement);
  if (o.backend.graph_agreement != "auto" && o.backend.graph_agreement != "peer" &&
      o.backend.graph_agreement != "nccl") {
    return BadFlag("graph_agreement", "must be auto, peer or nccl");
  }
  if (o.backend.loop_unroll < 0 || o.backend.loop_unroll > 64) {
    return BadFlag("loop_unroll", "must be in [0, 64]");
  }
  if (const std::string limit = absl::GetFlag(FLAGS_memory_limit); !limit.empty()) {
    absl::StatusOr<int64_t> bytes = ParseByteCount(limit);
    if (!bytes.ok()) {
      return BadFlag("memory_limit", absl::StrCat(bytes.status().message(), ", got '", limit, "'"));
    }
    o.backend.memory_limit_bytes = *bytes;
  }
  if (o.backend.memory_fraction <= 0 || o.backend.memory_fraction > 1) {
    return BadFlag("memory_fraction", "must be in (0, 1]");
  }

  const int drain_seconds = absl::GetFlag(FLAGS_drain_seconds);
  if (drain_seconds < 0) return BadFlag("drain_seconds", "must be >= 0");
  o.drain = absl::Seconds(drain_seconds);
  const int grace_seconds = absl::GetFlag(FLAGS_drain_grace_seconds);
  if (grace_seconds < 0) return BadFlag("drain_grace_seconds", "must be >= 0");
  o.drain_grace = absl::Seconds(grace_seconds);
  const int keepalive_time = absl::GetFlag(FLAGS_keepalive_time_seconds);
  // gRPC clients are told to ping no more often than every 10 s (min_recv_ping_interval): the
  // server's own pings need no faster schedule.
  if (keepalive_time < 1) return BadFlag("keepalive_time_seconds", "must be at least 1");
  o.keepalive_time = absl::Seconds(keepalive_time);
  const int keepalive_timeout = absl::GetFlag(FLAGS_keepalive_timeout_seconds);
  if (keepalive_timeout < 1) return BadFlag("keepalive_timeout_seconds", "must be at least 1");
  o.keepalive_timeout = absl::Seconds(keepalive_timeout);
  const std::string message_size = absl::GetFlag(FLAGS_max_message_size);
  absl::StatusOr<int64_t> message_bytes = ParseByteCount(message_size);
  if (!message_bytes.ok() || *message_bytes < 1_MiB || *message_bytes > 1_GiB) {
    return BadFlag("max_message_size",
                   absl::StrCat("expected 1MiB to 1GiB, got '", message_size, "'"));
  }
  o.max_message_bytes = static_cast<int>(*message_bytes);
  o.engine.max_download_piece_bytes = *message_bytes - kDownloadMessageHeadroom;
  o.max_concurrent_calls = absl::GetFlag(FLAGS_max_concurrent_calls);
  if (o.max_concurrent_calls < 1) return BadFlag("max_concurrent_calls", "must be at least 1");
  o.max_concurrent_calls_per_tenant = absl::GetFlag(FLAGS_max_concurrent_calls_per_tenant);
  if (o.max_concurrent_calls_per_tenant < 1) {
    return BadFlag("max_concurrent_calls_per_tenant", "must be at least 1");
  }

  EngineOptions& e = o.engine;
  e.max_chunks = absl::GetFlag(FLAGS_max_chunks);
  if (e.max_chunks < 1) return BadFlag("max_chunks", "must be at least 1");
  const int64_t lease_seconds = absl::GetFlag(FLAGS_session_lease_seconds);
  if (lease_seconds < 1) return BadFlag("session_lease_seconds", "must be at least 1");
  e.session_lease = absl::Seconds(lease_seconds);
  e.upload_idle_timeout_ms = absl::GetFlag(FLAGS_upload_idle_timeout_ms);
  if (e.upload_idle_timeout_ms < 0) return BadFlag("upload_idle_timeout_ms", "must be >= 0");
  const int64_t run_default = absl::GetFlag(FLAGS_run_graph_default_seconds);
  const int64_t run_max = absl::GetFlag(FLAGS_run_graph_max_seconds);
  if (run_max < 1) return BadFlag("run_graph_max_seconds", "must be at least 1");
  if (run_default < 1 || run_default > run_max) {
    return BadFlag("run_graph_default_seconds",
                   absl::StrCat("must be from 1 to --run_graph_max_seconds (", run_max, ")"));
  }
  e.run_graph_default_time = absl::Seconds(run_default);
  e.run_graph_max_time = absl::Seconds(run_max);
  e.upload_min_bytes_per_second = absl::GetFlag(FLAGS_upload_min_bytes_per_second);
  if (e.upload_min_bytes_per_second < 0 || e.upload_min_bytes_per_second > 1_GiB) {
    return BadFlag("upload_min_bytes_per_second", "must be in [0, 1073741824]");
  }
  e.max_sessions_per_tenant = absl::GetFlag(FLAGS_max_sessions_per_tenant);
  if (e.max_sessions_per_tenant < 1 ||
      e.max_sessions_per_tenant > SessionLimits::kDefaultMaxSessions) {
    return BadFlag("max_sessions_per_tenant",
                   absl::StrCat("must be in [1, ", SessionLimits::kDefaultMaxSessions, "]"));
  }
  e.max_list_page_size = absl::GetFlag(FLAGS_max_list_page_size);
  if (e.max_list_page_size < 1) return BadFlag("max_list_page_size", "must be at least 1");
  e.default_list_page_size = std::min(e.default_list_page_size, e.max_list_page_size);
  const std::string graphs = absl::GetFlag(FLAGS_graphs);
  if (graphs != "on" && graphs != "off") {
    return BadFlag("graphs", absl::StrCat("'on' or 'off', got '", graphs, "'"));
  }
  e.use_graphs = graphs == "on";
  e.programs.max_loop_iterations = absl::GetFlag(FLAGS_max_loop_iterations);
  if (e.programs.max_loop_iterations < 1) return BadFlag("max_loop_iterations", "must be >= 1");
  e.programs.max_statements = absl::GetFlag(FLAGS_max_program_statements);
  if (e.programs.max_statements < 1) return BadFlag("max_program_statements", "must be >= 1");
  e.programs.max_registered_programs = absl::GetFlag(FLAGS_max_registered_programs);
  if (e.programs.max_registered_programs < 0) {
    return BadFlag("max_registered_programs", "must be >= 0");
  }
  for (auto [flag, name, bytes] :
       {std::tuple{&FLAGS_max_program_bytes, "max_program_bytes", &e.programs.max_program_bytes},
        std::tuple{&FLAGS_tenant_program_bytes, "tenant_program_bytes",
                   &e.programs.tenant_program_bytes}}) {
    const std::string text = absl::GetFlag(*flag);
    absl::StatusOr<int64_t> parsed = ParseByteCount(text);
    if (!parsed.ok()) {
      return BadFlag(name, absl::StrCat(parsed.status().message(), ", got '", text, "'"));
    }
    *bytes = *parsed;
  }
  e.programs.max_cached_graphs = absl::GetFlag(FLAGS_max_cached_graphs);
  if (e.programs.max_cached_graphs < 0) return BadFlag("max_cached_graphs", "must be >= 0");

  o.tls.cert_file = absl::GetFlag(FLAGS_tls_cert_file);
  o.tls.key_file = absl::GetFlag(FLAGS_tls_key_file);
  o.tls.client_ca_file = absl::GetFlag(FLAGS_tls_client_ca_file);
  o.auth_tokens_file = absl::GetFlag(FLAGS_auth_tokens_file);
  if (o.auth_tokens_file.empty()) {
    // One tenant, everyone: its bounds are the daemon's.
    o.max_concurrent_calls_per_tenant = o.max_concurrent_calls;
    e.max_sessions_per_tenant = SessionLimits::kDefaultMaxSessions;
  }
  const std::string tenant_labels = absl::GetFlag(FLAGS_metrics_tenant_labels);
  if (tenant_labels != "on" && tenant_labels != "off") {
    return BadFlag("metrics_tenant_labels",
                   absl::StrCat("'on' or 'off', got '", tenant_labels, "'"));
  }
  o.metrics_tenant_labels = tenant_labels == "on";
  const std::string shared_memory = absl::GetFlag(FLAGS_shared_memory);
  if (shared_memory == "on") {
    o.shared_memory = true;
  } else if (shared_memory == "off") {
    o.shared_memory = false;
    o.shared_memory_off_reason = "--shared_memory=off";
  } else if (shared_memory == "auto") {
    // With tenants, a segment's client must run as the daemon's user, which the operating
    // system trusts with every segment and with the daemon itself: an explicit choice.
    o.shared_memory = o.auth_tokens_file.empty();
    if (!o.shared_memory) {
      o.shared_memory_off_reason =
          "--shared_memory=auto with --auth_tokens_file: tenants get shared memory only with "
          "--shared_memory=on";
    }
  } else {
    return BadFlag("shared_memory",
                   absl::StrCat("'auto', 'on' or 'off', got '", shared_memory, "'"));
  }
  o.shared_memory_limits.max_segments_per_tenant = absl::GetFlag(FLAGS_shared_memory_max_segments);
  if (o.shared_memory_limits.max_segments_per_tenant < 0) {
    return BadFlag("shared_memory_max_segments", "must be >= 0");
  }
  const std::string shm_bytes = absl::GetFlag(FLAGS_shared_memory_max_bytes);
  absl::StatusOr<int64_t> shm_max_bytes = ParseQuota(shm_bytes);
  if (!shm_max_bytes.ok()) {
    return BadFlag("shared_memory_max_bytes",
                   absl::StrCat(shm_max_bytes.status().message(), ", got '", shm_bytes, "'"));
  }
  o.shared_memory_limits.max_bytes_per_tenant = *shm_max_bytes;
  const std::string quota = absl::GetFlag(FLAGS_tenant_memory_quota);
  absl::StatusOr<int64_t> quota_bytes = ParseQuota(quota);
  if (!quota_bytes.ok()) {
    return BadFlag("tenant_memory_quota",
                   absl::StrCat(quota_bytes.status().message(), ", got '", quota, "'"));
  }
  e.tenant_quotas.default_quota_bytes = *quota_bytes;
  ASSIGN_OR_RETURN(e.tenant_quotas.quota_bytes_by_tenant,
                   ParseQuotaOverrides(absl::GetFlag(FLAGS_tenant_memory_quota_overrides)));
  return o;
}

}  // namespace distarray::daemon
