#ifndef DISTARRAY_SERVER_SERVICE_ARRAY_INFO_H_
#define DISTARRAY_SERVER_SERVICE_ARRAY_INFO_H_

#include "distarray/v1/distarray.pb.h"
#include "server/ops/array.h"

namespace distarray {

v1::ArrayInfo ToArrayInfo(const Array& array);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_SERVICE_ARRAY_INFO_H_
