#include "server/engine/engine.h"
#include "absl/strings/string_view.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/proto_convert.h"
#include "common/scalar_check.h"
#include "common/status_macros.h"
#include "server/engine/layout.h"
#include "server/engine/upload_session.h"

#ifndef DISTARRAY_VERSION
#define DISTARRAY_VERSION "dev"
#endif

namespace distarray {
namespace {

// The array a spec describes, with no buffers yet.
absl::StatusOr<Array> ArrayFromSpec(const v1::ArraySpec& spec, int device_count,
                                    absl::string_view field) {
  Array array;
  ASSIGN_OR_RETURN(array.dtype, DTypeFromProto(spec.dtype(), absl::StrCat(field, ".dtype")));
  array.shape = FromProto(spec.shape());
  RETURN_IF_ERROR(ValidateShape(array.shape, array.dtype, absl::StrCat(field, ".shape")));
  ASSIGN_OR_RETURN(array.mode, ModeFromProto(spec.mode(), absl::StrCat(field, ".mode")));
  const std::string map_field = absl::StrCat(field, ".index_map");
  if (spec.index_map().chunks_size() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(map_field, ": at least one chunk is required"));
  }
  ASSIGN_OR_RETURN(IndexMap map,
                   NormalizeIndexMap(spec.index_map(), array.shape, device_count, map_field));
  for (ChunkSpec& c : map) array.chunks.push_back(Chunk{std::move(c), nullptr});
  array.name = spec.name();
  return array;
}

absl::Status ValidateFill(const v1::Fill& fill, DType dtype) {
  switch (fill.kind_case()) {
    case v1::Fill::kFull: {
      ASSIGN_OR_RETURN(Scalar value, ScalarFromProto(fill.full().value(), "fill.full.value"));
      return ValidateScalarFor(value, dtype, "fill.full.value");
    }
    case v1::Fill::kArange:
      if (!std::isfinite(fill.arange().start()) || !std::isfinite(fill.arange().step())) {
        return absl::InvalidArgumentError("fill.arange: start and step must be finite");
      }
      return absl::OkStatus();
    case v1::Fill::kUniform: {
      const auto& u = fill.uniform();
      if (!std::isfinite(u.low()) || !std::isfinite(u.high()) || !(u.low() < u.high())) {
        return absl::InvalidArgumentError(absl::StrCat(
            "fill.uniform: need finite low < high, got [", u.low(), ", ", u.high(), ")"));
      }
      if (dtype != DType::kBool && !IsFloating(dtype)) {
        RETURN_IF_ERROR(
            ValidateScalarFor(Scalar::Float(std::floor(u.low())), dtype, "fill.uniform.low"));
        RETURN_IF_ERROR(
            ValidateScalarFor(Scalar::Float(std::ceil(u.high()) - 1), dtype, "fill.uniform.high"));
      }
      return absl::OkStatus();
    }
    default:
      return absl::OkStatus();  // zeros, ones, or unset (zeros)
  }
}

absl::Status LaunchFill(Backend& backend, const Array& array, const v1::Fill& fill) {
  for (const Chunk& chunk : array.chunks) {
    const Shape shape = BoxShape(chunk.spec.box);
    switch (fill.kind_case()) {
      case v1::Fill::kArange:
      case v1::Fill::kUniform: {
        Generator g;
        if (fill.has_arange()) {
          g.start = fill.arange().start();
          g.step = fill.arange().step();
        } else {
          g.kind = Generator::Kind::kUniform;
          g.low = fill.uniform().low();
          g.high = fill.uniform().high();
          g.seed = fill.uniform().seed();
        }
        RETURN_IF_ERROR(
            backend.FillGenerated(array.dtype, chunk.buffer, array.shape, chunk.spec.box, g));
        break;
      }
      default: {
        Scalar value = Scalar::Int(fill.has_ones() ? 1 : 0);
        if (fill.has_full()) {
          ASSIGN_OR_RETURN(value, ScalarFromProto(fill.full().value(), ""));
        }
        RETURN_IF_ERROR(backend.FillConstant(
            array.dtype, BufferBox{chunk.buffer, shape, FullBox(shape)}, value));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

Engine::Engine(std::unique_ptr<Backend> backend) : backend_(std::move(backend)) {}

Engine::~Engine() {
  // Finish in-flight work before the registry's buffers are released into a stopping backend.
  backend_->Synchronize().IgnoreError();
}

v1::GetServerInfoResponse Engine::ServerInfo() const {
  v1::GetServerInfoResponse info;
  info.set_backend(std::string(backend_->name()));
  info.set_version(DISTARRAY_VERSION);
  for (int d = 0; d < backend_->device_count(); ++d) {
    const DeviceMemory m = backend_->memory(d);
    v1::DeviceInfo* device = info.add_devices();
    device->set_id(d);
    device->set_name(m.name);
    device->set_memory_used_bytes(m.used_bytes);
    device->set_memory_limit_bytes(m.limit_bytes);
    device->set_memory_total_bytes(m.total_bytes);
  }
  for (int t = 1; t <= kMaxDType; ++t) {
    if (IsImplemented(static_cast<DType>(t)))
      info.add_implemented_dtypes(static_cast<v1::DType>(t));
  }
  for (const char* feature :
       {"create", "upload", "download", "reshard", "change_mode", "elementwise.add",
        "elementwise.subtract", "elementwise.multiply", "elementwise.divide"}) {
    info.add_features(feature);
  }
  info.set_array_count(static_cast<int64_t>(registry_.size()));
  return info;
}

absl::StatusOr<ArrayPtr> Engine::Register(Array array, bool in_place) {
  if (in_place) return registry_.Replace(std::move(array));
  return registry_.Insert(std::move(array));
}

absl::StatusOr<ArrayPtr> Engine::Create(const v1::CreateArrayRequest& request) {
  ASSIGN_OR_RETURN(Array array, ArrayFromSpec(request.spec(), backend_->device_count(), "spec"));
  RETURN_IF_ERROR(ValidateFill(request.fill(), array.dtype));
  RETURN_IF_ERROR(registry_.CheckNameFree(array.name, "spec.name"));
  ASSIGN_OR_RETURN(array.chunks, AllocateChunks(*backend_, array.dtype, array.index_map()));
  RETURN_IF_ERROR(LaunchFill(*backend_, array, request.fill()));
  RETURN_IF_ERROR(ApplyOwnershipMask(*backend_, array.dtype, array.mode, array.chunks));
  return registry_.Insert(std::move(array));
}

absl::StatusOr<ArrayPtr> Engine::Describe(absl::string_view handle) const {
  return registry_.Find(handle, "handle");
}

std::vector<ArrayPtr> Engine::List() const { return registry_.List(); }

absl::Status Engine::Delete(absl::string_view handle) { return registry_.Erase(handle, "handle"); }

absl::Status Engine::Synchronize(const v1::SynchronizeRequest& request) {
  for (int i = 0; i < request.handles_size(); ++i) {
    RETURN_IF_ERROR(registry_.Find(request.handles(i), absl::StrCat("handles[", i, "]")).status());
  }
  return backend_->Synchronize();
}

absl::StatusOr<std::unique_ptr<UploadSession>> Engine::BeginUpload(const v1::UploadHeader& header) {
  switch (header.target_case()) {
    case v1::UploadHeader::kNewArray: {
      ASSIGN_OR_RETURN(Array array, ArrayFromSpec(header.new_array(), backend_->device_count(),
                                                  "header.new_array"));
      if (header.region().slices_size() > 0) {
        return absl::InvalidArgumentError(
            "header.region: a new array is uploaded whole; give a region only with a handle");
      }
      RETURN_IF_ERROR(registry_.CheckNameFree(array.name, "header.new_array.name"));
      ASSIGN_OR_RETURN(array.chunks, AllocateChunks(*backend_, array.dtype, array.index_map()));
      const Box region = FullBox(array.shape);
      return std::make_unique<UploadSession>(*this, std::move(array), /*is_new=*/true, region);
    }
    case v1::UploadHeader::kHandle: {
      ASSIGN_OR_RETURN(ArrayPtr target, registry_.Find(header.handle(), "header.handle"));
      if (target->mode != Mode::kReplica) {
        return absl::FailedPreconditionError(absl::StrCat(
            "header.handle: array ", target->handle, " is in mode ", ModeName(target->mode),
            "; uploads overwrite REPLICA arrays only (change its mode first)"));
      }
      ASSIGN_OR_RETURN(Box region,
                       NormalizeRegion(header.region(), target->shape, "header.region"));
      return std::make_unique<UploadSession>(*this, *target, /*is_new=*/false, region);
    }
    default:
      return absl::InvalidArgumentError("header: give new_array or handle");
  }
}

}  // namespace distarray
