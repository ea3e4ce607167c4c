// distarray_probe: asks a grpc.health.v1 server (distarrayd's --health_listen) for one service's
// status, for container HEALTHCHECKs and scripts:
//   distarray_probe --address=127.0.0.1:8081 --service=readiness --timeout_ms=2000
// Exit status: 0 SERVING; 1 anything else (NOT_SERVING, unknown service, unreachable, timed out);
// 2 bad flags. The health port is plaintext and unauthenticated by design, so the probe needs no
// credentials. It speaks the wire format directly (two tiny messages) rather than linking
// generated health stubs.
#include <chrono>
#include <cstdio>
#include <future>
#include <string>
#include <string_view>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "absl/strings/numbers.h"

namespace {

constexpr int kExitServing = 0;
constexpr int kExitNotServing = 1;
constexpr int kExitBadFlags = 2;

constexpr char kUsage[] =
    "usage: distarray_probe [--address=HOST:PORT] [--service=NAME] [--timeout_ms=N]\n"
    "  Checks a grpc.health.v1 service and exits 0 when it is SERVING, 1 otherwise, 2 for bad\n"
    "  flags.\n"
    "  --address     the health server (default 127.0.0.1:8081, distarrayd's --health_listen)\n"
    "  --service     liveness, readiness, or the overall status \"\" (default \"\")\n"
    "  --timeout_ms  how long to wait for the answer, connection included (default 2000)\n";

struct ProbeOptions {
  std::string address = "127.0.0.1:8081";
  std::string service;
  int timeout_ms = 2000;
};

// grpc.health.v1.HealthCheckResponse.ServingStatus.
const char* StatusName(int status) {
  switch (status) {
    case 0:
      return "UNKNOWN";
    case 1:
      return "SERVING";
    case 2:
      return "NOT_SERVING";
    case 3:
      return "SERVICE_UNKNOWN";
    default:
      return "an unknown status";
  }
}

// HealthCheckRequest{service}: field 1, length-delimited.
std::string EncodeRequest(const std::string& service) {
  std::string out;
  if (service.empty()) return out;
  out.push_back(0x0a);
  for (size_t n = service.size(); true; n >>= 7) {
    if (n < 0x80) {
      out.push_back(static_cast<char>(n));
      break;
    }
    out.push_back(static_cast<char>((n & 0x7f) | 0x80));
  }
  return out + service;
}

// HealthCheckResponse{status}: field 1, varint. 0 (UNKNOWN) when absent; -1 when malformed.
int DecodeStatus(std::string_view bytes) {
  int status = 0;
  size_t i = 0;
  while (i < bytes.size()) {
    const unsigned char key = static_cast<unsigned char>(bytes[i++]);
    uint64_t value = 0;
    if ((key & 7) == 0) {
      int shift = 0;
      while (true) {
        if (i >= bytes.size() || shift > 63) return -1;
        const unsigned char b = static_cast<unsigned char>(bytes[i++]);
        value |= static_cast<uint64_t>(b & 0x7f) << shift;
        if ((b & 0x80) == 0) break;
        shift += 7;
      }
      if (key == 0x08) status = static_cast<int>(value);
    } else {
      return -1;  // the response has no other fields
    }
  }
  return status;
}

bool ParseFlags(int argc, char** argv, ProbeOptions* options) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(kExitServing);
    }
    const size_t eq = arg.find('=');
    const std::string_view name = arg.substr(0, eq);
    if (eq == std::string_view::npos) {
      std::fprintf(stderr, "distarray_probe: %s needs a value (%s=VALUE)\n%s", argv[i], argv[i],
                   kUsage);
      return false;
    }
    const std::string value(arg.substr(eq + 1));
    if (name == "--address") {
      if (value.empty()) {
        std::fprintf(stderr, "distarray_probe: --address: empty\n");
        return false;
      }
      options->address = value;
    } else if (name == "--service") {
      options->service = value;
    } else if (name == "--timeout_ms") {
      if (!absl::SimpleAtoi(value, &options->timeout_ms) || options->timeout_ms < 1) {
        std::fprintf(stderr, "distarray_probe: --timeout_ms: a positive integer, got '%s'\n",
                     value.c_str());
        return false;
      }
    } else {
      std::fprintf(stderr, "distarray_probe: unknown flag %s\n%s", std::string(name).c_str(),
                   kUsage);
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  ProbeOptions options;
  if (!ParseFlags(argc, argv, &options)) return kExitBadFlags;
  const std::string label =
      (options.service.empty() ? std::string("overall status") : options.service) + " at " +
      options.address;

  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  auto channel =
      grpc::CreateCustomChannel(options.address, grpc::InsecureChannelCredentials(), args);
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(options.timeout_ms));
  const std::string request_bytes = EncodeRequest(options.service);
  grpc::Slice slice(request_bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                 [&done](grpc::Status status) { done.set_value(std::move(status)); });
  const grpc::Status status = done.get_future().get();
  if (!status.ok()) {
    if (status.error_code() == grpc::StatusCode::NOT_FOUND) {
      std::printf("%s: no such service\n", label.c_str());
    } else {
      std::printf("%s: unreachable (%d: %s)\n", label.c_str(), status.error_code(),
                  status.error_message().c_str());
    }
    return kExitNotServing;
  }
  std::string bytes;
  std::vector<grpc::Slice> slices;
  if (response.Dump(&slices).ok()) {
    for (const grpc::Slice& s : slices) {
      bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
  }
  const int serving = DecodeStatus(bytes);
  if (serving < 0) {
    std::printf("%s: malformed health response\n", label.c_str());
    return kExitNotServing;
  }
  std::printf("%s: %s\n", label.c_str(), StatusName(serving));
  return serving == 1 ? kExitServing : kExitNotServing;
}
