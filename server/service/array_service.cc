#include "server/service/array_service.h"
#include "absl/strings/string_view.h"

#include <chrono>

#include <spdlog/spdlog.h>

#include "common/proto_convert.h"
#include "common/status_macros.h"
#include "server/engine/upload_session.h"
#include "server/service/array_info.h"
#include "server/service/status_conversion.h"

namespace distarray {
namespace {

// Large transfers are logged at info with their rate, small ones at debug.
void LogTransfer(const char* what, const std::string& handle, int64_t bytes,
                 std::chrono::steady_clock::time_point start) {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto level = bytes >= (int64_t{64} << 20) ? spdlog::level::info : spdlog::level::debug;
  spdlog::log(level, "{} {}: {} MiB in {:.3f} s ({:.2f} GB/s)", what, handle, bytes >> 20, seconds,
              seconds > 0 ? bytes / seconds / 1e9 : 0.0);
}

}  // namespace

template <typename Body>
grpc::Status ArrayServiceImpl::Handle(absl::string_view method, Body&& body) {
  const auto start = std::chrono::steady_clock::now();
  const absl::Status status = body();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  metrics_.RecordRequest(method, status.code(), seconds);
  metrics_.UpdateDevices(engine_.backend());
  switch (status.code()) {
    case absl::StatusCode::kOk:
      spdlog::debug("{} ok in {:.3f} ms", std::string(method), seconds * 1e3);
      break;
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDataLoss:
      spdlog::error("{} failed: {}", std::string(method), status.ToString());
      break;
    default:
      spdlog::info("{} rejected: {}", std::string(method), status.ToString());
  }
  return ToGrpcStatus(status);
}

grpc::Status ArrayServiceImpl::GetServerInfo(grpc::ServerContext*, const v1::GetServerInfoRequest*,
                                             v1::GetServerInfoResponse* response) {
  return Handle("GetServerInfo", [&] {
    *response = engine_.ServerInfo();
    return absl::OkStatus();
  });
}

grpc::Status ArrayServiceImpl::CreateArray(grpc::ServerContext*,
                                           const v1::CreateArrayRequest* request,
                                           v1::CreateArrayResponse* response) {
  return Handle("CreateArray", [&]() -> absl::Status {
    ASSIGN_OR_RETURN(ArrayPtr array, engine_.Create(*request));
    *response->mutable_array() = ToArrayInfo(*array);
    return absl::OkStatus();
  });
}

grpc::Status ArrayServiceImpl::UploadArray(grpc::ServerContext* context,
                                           grpc::ServerReader<v1::UploadArrayRequest>* reader,
                                           v1::UploadArrayResponse* response) {
  return Handle("UploadArray", [&]() -> absl::Status {
    v1::UploadArrayRequest message;
    if (!reader->Read(&message)) return absl::InvalidArgumentError("the stream carried no header");
    if (!message.has_header()) {
      return absl::InvalidArgumentError("header: the first message must be the header");
    }
    const auto start = std::chrono::steady_clock::now();
    ASSIGN_OR_RETURN(std::unique_ptr<UploadSession> session, engine_.BeginUpload(message.header()));
    int64_t received = 0;
    while (reader->Read(&message)) {
      if (message.has_header()) {
        return absl::InvalidArgumentError("header: only the first message may be a header");
      }
      received += message.data().size();
      RETURN_IF_ERROR(session->Append(message.data()));
    }
    if (context->IsCancelled()) return absl::CancelledError("the client cancelled the upload");
    ASSIGN_OR_RETURN(ArrayPtr array, session->Finish());
    metrics_.RecordTransferBytes("upload", received);
    LogTransfer("upload", array->handle, received, start);
    *response->mutable_array() = ToArrayInfo(*array);
    return absl::OkStatus();
  });
}

grpc::Status ArrayServiceImpl::DownloadArray(
    grpc::ServerContext* context, const v1::DownloadArrayRequest* request,
    grpc::ServerWriter<v1::DownloadArrayResponse>* writer) {
  return Handle("DownloadArray", [&]() -> absl::Status {
    const auto start = std::chrono::steady_clock::now();
    bool first = true;
    int64_t sent = 0;
    v1::DownloadArrayResponse message;
    RETURN_IF_ERROR(
        engine_.Download(*request, [&](const Shape& shape, DType dtype, absl::string_view bytes) {
          if (context->IsCancelled()) return false;
          message.Clear();
          if (first) {
            *message.mutable_shape() = ToProto(shape);
            message.set_dtype(ToProto(dtype));
            first = false;
          }
          message.set_data(bytes.data(), bytes.size());
          sent += bytes.size();
          return writer->Write(message);
        }));
    metrics_.RecordTransferBytes("download", sent);
    LogTransfer("download", request->handle(), sent, start);
    return absl::OkStatus();
  });
}

grpc::Status ArrayServiceImpl::DescribeArray(grpc::ServerContext*,
                                             const v1::DescribeArrayRequest* request,
                                             v1::DescribeArrayResponse* response) {
  return Handle("DescribeArray", [&]() -> absl::Status {
    ASSIGN_OR_RETURN(ArrayPtr array, engine_.Describe(request->handle()));
    *response->mutable_array() = ToArrayInfo(*array);
    return absl::OkStatus();
  });
}

grpc::Status ArrayServiceImpl::ListArrays(grpc::ServerContext*, const v1::ListArraysRequest*,
                                          v1::ListArraysResponse* response) {
  return Handle("ListArrays", [&] {
    for (const ArrayPtr& array : engine_.List()) *response->add_arrays() = ToArrayInfo(*array);
    return absl::OkStatus();
  });
}

grpc::Status ArrayServiceImpl::DeleteArray(grpc::ServerContext*,
                                           const v1::DeleteArrayRequest* request,
                                           v1::DeleteArrayResponse*) {
  return Handle("DeleteArray", [&] { return engine_.Delete(request->handle()); });
}

grpc::Status ArrayServiceImpl::Reshard(grpc::ServerContext*, const v1::ReshardRequest* request,
                                       v1::ReshardResponse* response) {
  return Handle("Reshard", [&]() -> absl::Status {
    ASSIGN_OR_RETURN(ArrayPtr array, engine_.Reshard(*request));
    *response->mutable_array() = ToArrayInfo(*array);
    return absl::OkStatus();
  });
}

grpc::Status ArrayServiceImpl::ChangeMode(grpc::ServerContext*,
                                          const v1::ChangeModeRequest* request,
                                          v1::ChangeModeResponse* response) {
  return Handle("ChangeMode", [&]() -> absl::Status {
    ASSIGN_OR_RETURN(ArrayPtr array, engine_.ChangeMode(*request));
    *response->mutable_array() = ToArrayInfo(*array);
    return absl::OkStatus();
  });
}

grpc::Status ArrayServiceImpl::Elementwise(grpc::ServerContext*,
                                           const v1::ElementwiseRequest* request,
                                           v1::ElementwiseResponse* response) {
  return Handle("Elementwise", [&]() -> absl::Status {
    ASSIGN_OR_RETURN(ArrayPtr array, engine_.Elementwise(*request));
    *response->mutable_array() = ToArrayInfo(*array);
    return absl::OkStatus();
  });
}

grpc::Status ArrayServiceImpl::Reduce(grpc::ServerContext*, const v1::ReduceRequest*,
                                      v1::ReduceResponse*) {
  return Handle("Reduce", [] { return absl::UnimplementedError("Reduce is not implemented yet"); });
}

grpc::Status ArrayServiceImpl::Matmul(grpc::ServerContext*, const v1::MatmulRequest*,
                                      v1::MatmulResponse*) {
  return Handle("Matmul", [] { return absl::UnimplementedError("Matmul is not implemented yet"); });
}

grpc::Status ArrayServiceImpl::RunGraph(grpc::ServerContext*, const v1::RunGraphRequest*,
                                        v1::RunGraphResponse*) {
  return Handle("RunGraph",
                [] { return absl::UnimplementedError("RunGraph is not implemented yet"); });
}

grpc::Status ArrayServiceImpl::Synchronize(grpc::ServerContext*,
                                           const v1::SynchronizeRequest* request,
                                           v1::SynchronizeResponse*) {
  return Handle("Synchronize", [&] { return engine_.Synchronize(*request); });
}

}  // namespace distarray
