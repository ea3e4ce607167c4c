#include "common/dtype.h"

#include <cstdio>
#include <cstdlib>

namespace distarray {

int64_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kBool:
    case DType::kInt8:
    case DType::kUInt8:
      return 1;
    case DType::kInt16:
    case DType::kUInt16:
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
    case DType::kInt32:
    case DType::kUInt32:
    case DType::kFloat32:
      return 4;
    case DType::kInt64:
    case DType::kUInt64:
    case DType::kFloat64:
    case DType::kComplex64:
      return 8;
    case DType::kComplex128:
      return 16;
    default:
      return 0;
  }
}

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kBool:
      return "bool";
    case DType::kInt8:
      return "int8";
    case DType::kInt16:
      return "int16";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kUInt8:
      return "uint8";
    case DType::kUInt16:
      return "uint16";
    case DType::kUInt32:
      return "uint32";
    case DType::kUInt64:
      return "uint64";
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
    case DType::kFloat32:
      return "float32";
    case DType::kFloat64:
      return "float64";
    case DType::kComplex64:
      return "complex64";
    case DType::kComplex128:
      return "complex128";
    default:
      return "unspecified";
  }
}

bool IsImplemented(DType dtype) { return DTypeSize(dtype) > 0; }

bool IsHalf(DType dtype) { return dtype == DType::kFloat16 || dtype == DType::kBFloat16; }

bool IsComplex(DType dtype) { return dtype == DType::kComplex64 || dtype == DType::kComplex128; }

DType RealPartDType(DType dtype) {
  switch (dtype) {
    case DType::kComplex64:
      return DType::kFloat32;
    case DType::kComplex128:
      return DType::kFloat64;
    default:
      return dtype;
  }
}

bool HasKernels(DType dtype) { return IsImplemented(dtype) && !IsHalf(dtype) && !IsComplex(dtype); }

DType KernelDType(DType dtype) { return IsHalf(dtype) ? DType::kFloat32 : dtype; }

bool IsFloating(DType dtype) {
  return dtype == DType::kFloat16 || dtype == DType::kBFloat16 || dtype == DType::kFloat32 ||
         dtype == DType::kFloat64;
}

bool IsSignedInteger(DType dtype) {
  return dtype == DType::kInt8 || dtype == DType::kInt16 || dtype == DType::kInt32 ||
         dtype == DType::kInt64;
}

bool IsUnsignedInteger(DType dtype) {
  return dtype == DType::kUInt8 || dtype == DType::kUInt16 || dtype == DType::kUInt32 ||
         dtype == DType::kUInt64;
}

void DispatchDTypeFailed(DType dtype) {
  std::fprintf(stderr, "distarray: DispatchDType reached with unsupported dtype %d (%s)\n",
               static_cast<int>(dtype), DTypeName(dtype));
  std::abort();
}

}  // namespace distarray
