// The metrics module's pure parts: gRPC code and type names as the grpc-ecosystem exporters spell
// them, /proc parsing, GPU UUID formatting, the method-series bound, and the collectors' output
// (tenant names only when asked for).
#include <gtest/gtest.h>

#include <ctime>
#include <set>
#include <string>

#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "absl/strings/str_cat.h"
#include "server/backend/gpu_uuid.h"
#include "server/backend/memory_ledger.h"
#include "server/metrics/grpc_server_metrics.h"
#include "server/metrics/process_collector.h"
#include "server/metrics/tenant_collector.h"

namespace distarray::metrics {
namespace {

using RpcType = grpc::experimental::ServerRpcInfo::Type;

// The spelling of go-grpc-prometheus (codes.Code.String() in grpc-go), code by code.
TEST(GrpcCodeNameTest, SpellsEveryCodeAsTheEcosystem) {
  const std::pair<grpc::StatusCode, const char*> expected[] = {
      {grpc::OK, "OK"},
      {grpc::CANCELLED, "Canceled"},
      {grpc::UNKNOWN, "Unknown"},
      {grpc::INVALID_ARGUMENT, "InvalidArgument"},
      {grpc::DEADLINE_EXCEEDED, "DeadlineExceeded"},
      {grpc::NOT_FOUND, "NotFound"},
      {grpc::ALREADY_EXISTS, "AlreadyExists"},
      {grpc::PERMISSION_DENIED, "PermissionDenied"},
      {grpc::RESOURCE_EXHAUSTED, "ResourceExhausted"},
      {grpc::FAILED_PRECONDITION, "FailedPrecondition"},
      {grpc::ABORTED, "Aborted"},
      {grpc::OUT_OF_RANGE, "OutOfRange"},
      {grpc::UNIMPLEMENTED, "Unimplemented"},
      {grpc::INTERNAL, "Internal"},
      {grpc::UNAVAILABLE, "Unavailable"},
      {grpc::DATA_LOSS, "DataLoss"},
      {grpc::UNAUTHENTICATED, "Unauthenticated"},
  };
  for (const auto& [code, name] : expected) EXPECT_EQ(GrpcCodeName(code), name) << code;
  EXPECT_EQ(GrpcCodeName(static_cast<grpc::StatusCode>(17)), "Unknown");
  EXPECT_EQ(GrpcCodeName(static_cast<grpc::StatusCode>(-1)), "Unknown");
}

TEST(GrpcTypeNameTest, SpellsEveryTypeAsTheEcosystem) {
  EXPECT_EQ(GrpcTypeName(RpcType::UNARY), "unary");
  EXPECT_EQ(GrpcTypeName(RpcType::CLIENT_STREAMING), "client_stream");
  EXPECT_EQ(GrpcTypeName(RpcType::SERVER_STREAMING), "server_stream");
  EXPECT_EQ(GrpcTypeName(RpcType::BIDI_STREAMING), "bidi_stream");
}

std::string Serialize(prometheus::Registry& registry) {
  return prometheus::TextSerializer().Serialize(registry.Collect());
}

TEST(GrpcServerMetricsTest, PreRegistersEveryMethodAndCodeAtZero) {
  prometheus::Registry registry;
  GrpcServerMetrics metrics(registry);
  ASSERT_TRUE(metrics.PreRegisterService("distarray.v1.ArrayService").ok());
  const std::string text = Serialize(registry);
  EXPECT_NE(text.find("grpc_server_handled_total{grpc_code=\"Unauthenticated\",grpc_method="
                      "\"UploadArray\",grpc_service=\"distarray.v1.ArrayService\",grpc_type="
                      "\"client_stream\"} 0"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("grpc_server_started_total{grpc_method=\"DownloadArray\",grpc_service="
                      "\"distarray.v1.ArrayService\",grpc_type=\"server_stream\"} 0"),
            std::string::npos);
  // From 25 µs, where the daemon's small calls fall, then Prometheus's default buckets
  // (go-grpc-prometheus's).
  EXPECT_NE(text.find("grpc_server_handling_seconds_bucket{grpc_method=\"Reshard\",grpc_service="
                      "\"distarray.v1.ArrayService\",grpc_type=\"unary\",le=\"2.5e-05\"} 0"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("grpc_server_handling_seconds_bucket{grpc_method=\"Reshard\",grpc_service="
                      "\"distarray.v1.ArrayService\",grpc_type=\"unary\",le=\"0.005\"} 0"),
            std::string::npos);
  EXPECT_EQ(metrics.PreRegisterService("no.such.Service").code(), absl::StatusCode::kNotFound);
}

TEST(GrpcServerMetricsTest, SplitsTheMethodPath) {
  prometheus::Registry registry;
  GrpcServerMetrics metrics(registry);
  metrics.ForMethod("/grpc.health.v1.Health/Check", RpcType::UNARY).started->Increment();
  metrics.ForMethod("unknown", RpcType::BIDI_STREAMING).started->Increment();
  metrics.ForMethod("/malformed", RpcType::UNARY).started->Increment();
  const std::string text = Serialize(registry);
  EXPECT_NE(text.find("grpc_server_started_total{grpc_method=\"Check\",grpc_service="
                      "\"grpc.health.v1.Health\",grpc_type=\"unary\"} 1"),
            std::string::npos)
      << text;
  // gRPC's generic handler takes a call to a method the server does not serve as bidi_stream,
  // whatever it was: its series says "unknown" for the type too.
  EXPECT_NE(text.find("grpc_server_started_total{grpc_method=\"unknown\",grpc_service="
                      "\"unknown\",grpc_type=\"unknown\"} 2"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("bidi_stream"), std::string::npos) << text;
}

// However many names clients send, the series stop growing at the bound.
TEST(GrpcServerMetricsTest, BoundsTheNumberOfMethods) {
  prometheus::Registry registry;
  GrpcServerMetrics metrics(registry);
  std::set<GrpcServerMetrics::Method*> distinct;
  GrpcServerMetrics::Method* first = &metrics.ForMethod("/svc.S/M0", RpcType::UNARY);
  for (int i = 0; i < GrpcServerMetrics::kMaxMethods + 100; ++i) {
    distinct.insert(&metrics.ForMethod("/svc.S/M" + std::to_string(i), RpcType::UNARY));
  }
  EXPECT_EQ(distinct.size(), GrpcServerMetrics::kMaxMethods + 1u);  // the bound, then "unknown"
  // A method seen before the bound keeps its own series.
  EXPECT_EQ(&metrics.ForMethod("/svc.S/M0", RpcType::UNARY), first);
  EXPECT_NE(&metrics.ForMethod("/svc.S/M9999", RpcType::UNARY), first);
}

TEST(ProcStatTest, ParsesFieldsAfterACommandWithSpacesAndParentheses) {
  const std::string text =
      "4242 (dist (array) d) S 1 4242 4242 0 -1 4194560 1000 0 0 0 150 50 0 0 20 0 12 0 "
      "987654 123456789 2048 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0";
  const std::optional<ProcStat> stat = ParseProcStat(text);
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->utime_ticks, 150);
  EXPECT_EQ(stat->stime_ticks, 50);
  EXPECT_EQ(stat->start_ticks, 987654);
  EXPECT_EQ(stat->vsize_bytes, 123456789);
  EXPECT_EQ(stat->rss_pages, 2048);
}

TEST(ProcStatTest, RefusesTruncatedText) {
  EXPECT_FALSE(ParseProcStat("4242 (d) S 1 2 3").has_value());
  EXPECT_FALSE(ParseProcStat("no parenthesis").has_value());
  EXPECT_FALSE(ParseProcStat("").has_value());
}

TEST(ProcStatTest, FindsTheBootTime) {
  EXPECT_EQ(ParseBootTime("cpu  1 2 3\nintr 5\nbtime 1700000000\nprocesses 9\n"), 1700000000);
  EXPECT_FALSE(ParseBootTime("cpu 1 2 3\n").has_value());
}

TEST(ProcessCollectorTest, ReportsThisProcess) {
  // CPU time is counted in clock ticks (10 ms): spend a few first, so that it cannot read 0.
  while (static_cast<double>(std::clock()) / CLOCKS_PER_SEC < 0.05) {
  }
  std::set<std::string> names;
  for (const prometheus::MetricFamily& family : ProcessCollector().Collect()) {
    names.insert(family.name);
    ASSERT_EQ(family.metric.size(), 1u) << family.name;
    const double value = family.type == prometheus::MetricType::Counter
                             ? family.metric[0].counter.value
                             : family.metric[0].gauge.value;
    EXPECT_GT(value, 0) << family.name;
  }
  EXPECT_EQ(names,
            (std::set<std::string>{"process_cpu_seconds_total", "process_resident_memory_bytes",
                                   "process_virtual_memory_bytes", "process_open_fds",
                                   "process_max_fds", "process_start_time_seconds"}));
}

TEST(GpuUuidTest, PrintsAsNvidiaSmi) {
  const char bytes[16] = {'\x5f', '\x4e', '\x2c', '\x1a', '\x0b', '\x3d', '\x9e', '\x8f',
                          '\x7a', '\x6b', '\x5c', '\x4d', '\x3e', '\x2f', '\x1a', '\x0b'};
  EXPECT_EQ(FormatGpuUuid(bytes), "GPU-5f4e2c1a-0b3d-9e8f-7a6b-5c4d3e2f1a0b");
}

TEST(MemoryLedgerFailuresTest, CountsRefusals) {
  MemoryLedger ledger(0, 4096);
  EXPECT_TRUE(ledger.Reserve(100).ok());
  EXPECT_EQ(ledger.failures(), 0);
  EXPECT_FALSE(ledger.Reserve(8192).ok());
  EXPECT_FALSE(ledger.Reserve(-1).ok());
  EXPECT_EQ(ledger.failures(), 2);
  ledger.CountFailure();
  EXPECT_EQ(ledger.failures(), 3);
}

// The tenant families name no tenant unless asked: without labels, used bytes are summed per
// device (every device, at 0 where none is held), no quota series, and the worst used/quota
// ratio per device; with labels, one series per tenant and device as before.
TEST(TenantMemoryFamiliesTest, NameTenantsOnlyWhenAsked) {
  const std::vector<TenantDeviceMemory> usage = {{"alice", 0, 100, 0},  {"alice", 1, 0, 0},
                                                 {"bob", 0, 300, 1000}, {"bob", 1, 0, 1000},
                                                 {"carol", 0, 0, 400},  {"carol", 1, 200, 400}};
  const auto uuid = [](int device) { return absl::StrCat("host-", device); };
  const auto text = [](const std::vector<prometheus::MetricFamily>& families) {
    return prometheus::TextSerializer().Serialize(families);
  };
  const std::vector<prometheus::MetricFamily> hidden = TenantMemoryFamilies(usage, 3, uuid, false);
  const std::string hidden_text = text(hidden);
  for (const char* name : {"alice", "bob", "carol", "tenant=\""}) {
    EXPECT_EQ(hidden_text.find(name), std::string::npos) << name << "\n" << hidden_text;
  }
  EXPECT_NE(hidden_text.find("distarray_tenant_memory_used_bytes{device=\"0\",gpu_uuid=\"host-0\"} "
                             "400"),
            std::string::npos)
      << hidden_text;
  EXPECT_NE(hidden_text.find("distarray_tenant_memory_used_bytes{device=\"1\",gpu_uuid=\"host-1\"} "
                             "200"),
            std::string::npos)
      << hidden_text;
  EXPECT_NE(hidden_text.find("distarray_tenant_memory_used_bytes{device=\"2\",gpu_uuid=\"host-2\"} "
                             "0"),
            std::string::npos)
      << hidden_text;
  EXPECT_EQ(hidden_text.find("distarray_tenant_memory_quota_bytes{"), std::string::npos);
  // bob holds 30 % of his quota on device 0, carol 50 % of hers on device 1.
  EXPECT_NE(hidden_text.find("distarray_tenant_memory_quota_used_ratio_max{device=\"0\",gpu_uuid="
                             "\"host-0\"} 0.3"),
            std::string::npos)
      << hidden_text;
  EXPECT_NE(hidden_text.find("distarray_tenant_memory_quota_used_ratio_max{device=\"1\",gpu_uuid="
                             "\"host-1\"} 0.5"),
            std::string::npos)
      << hidden_text;

  const std::string named = text(TenantMemoryFamilies(usage, 3, uuid, true));
  EXPECT_NE(named.find("distarray_tenant_memory_used_bytes{tenant=\"alice\",device=\"0\","
                       "gpu_uuid=\"host-0\"} 100"),
            std::string::npos)
      << named;
  EXPECT_NE(named.find("distarray_tenant_memory_quota_bytes{tenant=\"carol\",device=\"1\","
                       "gpu_uuid=\"host-1\"} 400"),
            std::string::npos)
      << named;
  EXPECT_NE(named.find("distarray_tenant_memory_quota_used_ratio_max{device=\"1\""),
            std::string::npos)
      << named;
}

}  // namespace
}  // namespace distarray::metrics
