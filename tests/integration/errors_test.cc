// Bad requests and their exact status codes and messages. After each, the daemon still serves
// and other arrays are intact.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <random>

#include "absl/strings/str_cat.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/raw_stub.h"
#include "tests/support/reference.h"
#include "tests/support/server_state.h"

namespace distarray::testing {
namespace {

class ErrorsTest : public BystanderTest {};

v1::CreateArrayRequest CreateRequest(std::vector<int64_t> shape, v1::DType dtype,
                                     v1::IndexMap map) {
  v1::CreateArrayRequest r;
  for (int64_t d : shape) r.mutable_spec()->mutable_shape()->add_dims(d);
  r.mutable_spec()->set_dtype(dtype);
  *r.mutable_spec()->mutable_index_map() = map;
  return r;
}

struct BadCase {
  std::string name;
  std::function<grpc::Status(v1::ArrayService::Stub&, const std::string& bystander)> call;
  grpc::StatusCode code;
  std::string message_contains;
};

grpc::Status Create(v1::ArrayService::Stub& stub, const v1::CreateArrayRequest& request) {
  grpc::ClientContext context;
  v1::CreateArrayResponse response;
  return stub.CreateArray(&context, request, &response);
}

grpc::Status Binary(v1::ArrayService::Stub& stub, v1::ElementwiseOp op, v1::Operand a,
                    v1::Operand b) {
  grpc::ClientContext context;
  v1::ElementwiseRequest request;
  request.mutable_spec()->set_op(op);
  *request.mutable_spec()->add_operands() = a;
  *request.mutable_spec()->add_operands() = b;
  v1::ElementwiseResponse response;
  return stub.Elementwise(&context, request, &response);
}

v1::Operand Handle(const std::string& h) {
  v1::Operand o;
  o.set_handle(h);
  return o;
}

v1::Operand ScalarOperand(v1::Scalar s) {
  v1::Operand o;
  *o.mutable_scalar() = s;
  return o;
}

grpc::Status Upload(v1::ArrayService::Stub& stub, const std::vector<v1::UploadArrayRequest>& msgs) {
  grpc::ClientContext context;
  v1::UploadArrayResponse response;
  auto writer = stub.UploadArray(&context, &response);
  for (const auto& m : msgs) {
    if (!writer->Write(m)) break;
  }
  writer->WritesDone();
  return writer->Finish();
}

v1::UploadArrayRequest Header(std::vector<int64_t> shape, v1::IndexMap map) {
  v1::UploadArrayRequest m;
  auto* spec = m.mutable_header()->mutable_new_array();
  for (int64_t d : shape) spec->mutable_shape()->add_dims(d);
  spec->set_dtype(v1::DTYPE_FLOAT32);
  *spec->mutable_index_map() = map;
  return m;
}

v1::UploadArrayRequest Data(size_t bytes) {
  v1::UploadArrayRequest m;
  m.set_data(std::string(bytes, '\1'));
  return m;
}

grpc::Status Describe(v1::ArrayService::Stub& stub, const std::string& handle) {
  grpc::ClientContext c;
  v1::DescribeArrayRequest r;
  r.set_handle(handle);
  v1::DescribeArrayResponse out;
  return stub.DescribeArray(&c, r, &out);
}

// `op(array, scalar)` on a fresh one-element array of `dtype`.
grpc::Status ScalarInto(v1::ArrayService::Stub& stub, v1::DType dtype, v1::Scalar scalar) {
  grpc::ClientContext c;
  v1::CreateArrayResponse out;
  auto st = stub.CreateArray(&c, CreateRequest({1}, dtype, OnDevice(1, 0)), &out);
  if (!st.ok()) return st;
  return Binary(stub, v1::ELEMENTWISE_OP_ADD, Handle(out.array().handle()), ScalarOperand(scalar));
}

v1::IndexMap ManyChunks(int64_t chunks) {
  std::vector<v1::Chunk> list;
  for (int64_t i = 0; i < chunks; ++i) list.push_back(MakeChunk(0, {SliceSpec{i, i + 1}}));
  return MakeIndexMap(list);
}

// Requests found by a sanitizer build driven by fuzzers and a bad-input campaign: extreme slice
// bounds and steps, overflowing shapes, huge maps, unknown enum values, long and odd names.

// A Manipulate call on the bystander (10 x 10 float32): `fill` completes the spec.
std::function<grpc::Status(v1::ArrayService::Stub&, const std::string&)> Manipulation(
    std::function<void(v1::ManipulationSpec&, const std::string& bystander)> fill) {
  return [fill](v1::ArrayService::Stub& stub, const std::string& bystander) {
    grpc::ClientContext c;
    v1::ManipulateRequest r;
    fill(*r.mutable_spec(), bystander);
    v1::ManipulateResponse out;
    return stub.Manipulate(&c, r, &out);
  };
}

void AddSlice(v1::IndexKey& key, std::optional<int64_t> start, std::optional<int64_t> stop,
              std::optional<int64_t> step) {
  v1::Slice* slice = key.add_items()->mutable_slice();
  if (start) slice->set_start(*start);
  if (stop) slice->set_stop(*stop);
  if (step) slice->set_step(*step);
}

// Indexing and shapes (Manipulate): every refusal names its field; none touches the bystander.
void AddManipulationCases(std::vector<BadCase>& cases) {
  auto add = [&](std::string name, auto call, grpc::StatusCode code, std::string message) {
    cases.push_back(BadCase{std::move(name), std::move(call), code, std::move(message)});
  };
  using grpc::StatusCode;
  add("Manipulate with no op", Manipulation([](auto&, auto&) {}), StatusCode::INVALID_ARGUMENT,
      "spec: give an op (get_item, set_item, permute_dims, reshape, concat, broadcast_to, sort, "
      "search_sorted or scan)");
  add("broadcast_to a shape that does not fit", Manipulation([](auto& spec, auto& bystander) {
        spec.mutable_broadcast_to()->mutable_source()->set_handle(bystander);
        spec.mutable_broadcast_to()->mutable_shape()->add_dims(10);
        spec.mutable_broadcast_to()->mutable_shape()->add_dims(5);
      }),
      StatusCode::INVALID_ARGUMENT,
      "spec.broadcast_to.shape: an array of shape (10, 10) does not broadcast to shape (10, 5)");
  add("sort along an axis the array lacks", Manipulation([](auto& spec, auto& bystander) {
        spec.mutable_sort()->mutable_source()->set_handle(bystander);
        spec.mutable_sort()->set_axis(-3);
      }),
      StatusCode::INVALID_ARGUMENT, "spec.sort.axis: -3 is out of range for an array of rank 2");
  add("scan along an axis the array lacks", Manipulation([](auto& spec, auto& bystander) {
        spec.mutable_scan()->mutable_source()->set_handle(bystander);
        spec.mutable_scan()->set_axis(2);
      }),
      StatusCode::INVALID_ARGUMENT, "spec.scan.axis: 2 is out of range for an array of rank 2");
  add("scan of a scalar", Manipulation([](auto& spec, auto&) {
        spec.mutable_scan()->mutable_source()->mutable_scalar()->set_float_value(1);
      }),
      StatusCode::INVALID_ARGUMENT, "spec.scan.source: give an array");
  add("sort of a scalar", Manipulation([](auto& spec, auto&) {
        spec.mutable_sort()->mutable_source()->mutable_scalar()->set_float_value(1);
      }),
      StatusCode::INVALID_ARGUMENT, "spec.sort.source: give an array");
  add("search_sorted in a 2-D array", Manipulation([](auto& spec, auto& bystander) {
        spec.mutable_search_sorted()->mutable_sorted()->set_handle(bystander);
        spec.mutable_search_sorted()->mutable_values()->set_handle(bystander);
      }),
      StatusCode::INVALID_ARGUMENT, "spec.search_sorted.sorted: give a 1-D array");
  add("search_sorted with no values", Manipulation([](auto& spec, auto& bystander) {
        spec.mutable_search_sorted()->mutable_sorted()->set_handle(bystander);
      }),
      StatusCode::INVALID_ARGUMENT, "spec.search_sorted.values: give an array");
  add("get_item of an unknown handle", Manipulation([](auto& spec, auto&) {
        spec.mutable_get_item()->mutable_source()->set_handle("nope");
      }),
      StatusCode::NOT_FOUND, "spec.get_item.source.handle");
  add("get_item of a scalar", Manipulation([](auto& spec, auto&) {
        spec.mutable_get_item()->mutable_source()->mutable_scalar()->set_float_value(1);
      }),
      StatusCode::INVALID_ARGUMENT, "spec.get_item.source: give an array");
  add("get_item with an integer past its axis", Manipulation([](auto& spec, auto& bystander) {
        spec.mutable_get_item()->mutable_source()->set_handle(bystander);
        spec.mutable_get_item()->mutable_key()->add_items()->set_index(3);
        spec.mutable_get_item()->mutable_key()->add_items()->set_index(-11);
      }),
      StatusCode::OUT_OF_RANGE,
      "spec.get_item.key.items[1]: index -11 is out of bounds for axis 1 with size 10");
  add("get_item with too many indices", Manipulation([](auto& spec, auto& bystander) {
        spec.mutable_get_item()->mutable_source()->set_handle(bystander);
        for (int i = 0; i < 3; ++i)
          spec.mutable_get_item()->mutable_key()->add_items()->set_index(0);
      }),
      StatusCode::INVALID_ARGUMENT,
      "spec.get_item.key: too many indices: the array has 2 axes, the key indexes 3");
  add("get_item with two ellipses", Manipulation([](auto& spec, auto& bystander) {
        spec.mutable_get_item()->mutable_source()->set_handle(bystander);
        spec.mutable_get_item()->mutable_key()->add_items()->mutable_ellipsis();
        spec.mutable_get_item()->mutable_key()->add_items()->mutable_ellipsis();
      }),
      StatusCode::INVALID_ARGUMENT, "spec.get_item.key.items[1]: a key holds at most one ellipsis");
  add("get_item with a zero step", Manipulation([](auto& spec, auto& bystander) {
        spec.mutable_get_item()->mutable_source()->set_handle(bystander);
        AddSlice(*spec.mutable_get_item()->mutable_key(), 1, 5, 0);
      }),
      StatusCode::INVALID_ARGUMENT, "spec.get_item.key.items[0].step: must not be zero");
  add("get_item with an empty item", Manipulation([](auto& spec, auto& bystander) {
        spec.mutable_get_item()->mutable_source()->set_handle(bystander);
        spec.mutable_get_item()->mutable_key()->add_items();
      }),
      StatusCode::INVALID_ARGUMENT,
      "spec.get_item.key.items[0]: give an index, a slice, new_axis or ellipsis");
  add("get_item with a result of seventeen axes", Manipulation([](auto& spec, auto& bystander) {
        spec.mutable_get_item()->mutable_source()->set_handle(bystander);
        for (int i = 0; i < 15; ++i)
          spec.mutable_get_item()->mutable_key()->add_items()->mutable_new_axis();
      }),
      StatusCode::INVALID_ARGUMENT,
      "spec.get_item.key: the result would have 17 axes; the most is 16");
  add("get_item with a listed position past its axis",
      Manipulation([](auto& spec, auto& bystander) {
        spec.mutable_get_item()->mutable_source()->set_handle(bystander);
        v1::IndexItem::IndexList* list =
            spec.mutable_get_item()->mutable_key()->add_items()->mutable_indices();
        list->add_values(2);
        list->add_values(10);
      }),
      StatusCode::OUT_OF_RANGE,
      "spec.get_item.key.items[0].indices.values[1]: index 10 is out of bounds for axis 0 with "
      "size 10");
  add("get_item with a float index array", Manipulation([](auto& spec, auto& bystander) {
        spec.mutable_get_item()->mutable_source()->set_handle(bystander);
        spec.mutable_get_item()->mutable_key()->add_items()->mutable_array()->set_handle(bystander);
      }),
      StatusCode::INVALID_ARGUMENT,
      "spec.get_item.key.items[0].array: an index array must have an integer dtype, not float32");
  add("get_item with an index array and a list", Manipulation([](auto& spec, auto& bystander) {
        spec.mutable_get_item()->mutable_source()->set_handle(bystander);
        spec.mutable_get_item()->mutable_key()->add_items()->mutable_array()->set_handle(bystander);
        spec.mutable_get_item()->mutable_key()->add_items()->mutable_indices()->add_values(0);
      }),
      StatusCode::INVALID_ARGUMENT,
      "spec.get_item.key.items[1]: a key holds at most one integer array");
  add("get_item with two integer arrays", Manipulation([](auto& spec, auto& bystander) {
        spec.mutable_get_item()->mutable_source()->set_handle(bystander);
        spec.mutable_get_item()->mutable_key()->add_items()->mutable_indices()->add_values(0);
        spec.mutable_get_item()->mutable_key()->add_items()->mutable_indices()->add_values(0);
      }),
      StatusCode::INVALID_ARGUMENT,
      "spec.get_item.key.items[1]: a key holds at most one integer array");
  add("set_item of a value that does not broadcast", Manipulation([](auto& spec, auto& bystander) {
        spec.mutable_set_item()->mutable_target()->set_handle(bystander);
        AddSlice(*spec.mutable_set_item()->mutable_key(), 0, 3, std::nullopt);
        spec.mutable_set_item()->mutable_value()->set_handle(bystander);
      }),
      StatusCode::INVALID_ARGUMENT,
      "spec.set_item.value: a value of shape (10, 10) does not broadcast to the selected region "
      "of shape (3, 10)");
  add("set_item of a complex scalar into float32", Manipulation([](auto& spec, auto& bystander) {
        spec.mutable_set_item()->mutable_target()->set_handle(bystander);
        spec.mutable_set_item()
            ->mutable_value()
            ->mutable_scalar()
            ->mutable_complex_value()
            ->set_imag(1);
      }),
      StatusCode::INVALID_ARGUMENT,
      "spec.set_item.value.scalar: a complex value cannot be stored in an array of float32");
  add("set_item with no value", Manipulation([](auto& spec, auto& bystander) {
        spec.mutable_set_item()->mutable_target()->set_handle(bystander);
      }),
      StatusCode::INVALID_ARGUMENT, "spec.set_item.value: give an array or a scalar");
  add(
      "set_item with a result name",
      [](v1::ArrayService::Stub& stub, const std::string& bystander) {
        grpc::ClientContext c;
        v1::ManipulateRequest r;
        r.mutable_spec()->mutable_set_item()->mutable_target()->set_handle(bystander);
        r.mutable_spec()->mutable_set_item()->mutable_value()->mutable_scalar()->set_float_value(2);
        r.set_result_name("renamed");
        v1::ManipulateResponse out;
        return stub.Manipulate(&c, r, &out);
      },
      StatusCode::INVALID_ARGUMENT, "result_name: set_item updates its target");
  add("permute_dims with a repeated axis", Manipulation([](auto& spec, auto& bystander) {
        spec.mutable_permute_dims()->mutable_source()->set_handle(bystander);
        spec.mutable_permute_dims()->add_axes(1);
        spec.mutable_permute_dims()->add_axes(-1);
      }),
      StatusCode::INVALID_ARGUMENT, "spec.permute_dims.axes[1]: -1 is out of range or repeated");
  add("permute_dims with too few axes", Manipulation([](auto& spec, auto& bystander) {
        spec.mutable_permute_dims()->mutable_source()->set_handle(bystander);
        spec.mutable_permute_dims()->add_axes(0);
      }),
      StatusCode::INVALID_ARGUMENT, "spec.permute_dims.axes: gives 1 axes for an array of rank 2");
  add("reshape to another size", Manipulation([](auto& spec, auto& bystander) {
        spec.mutable_reshape()->mutable_source()->set_handle(bystander);
        spec.mutable_reshape()->mutable_shape()->add_dims(3);
        spec.mutable_reshape()->mutable_shape()->add_dims(-1);
      }),
      StatusCode::INVALID_ARGUMENT,
      "spec.reshape.shape: cannot reshape an array of shape (10, 10) (100 elements) into shape "
      "(3, -1)");
  add("reshape with two inferred axes", Manipulation([](auto& spec, auto& bystander) {
        spec.mutable_reshape()->mutable_source()->set_handle(bystander);
        spec.mutable_reshape()->mutable_shape()->add_dims(-1);
        spec.mutable_reshape()->mutable_shape()->add_dims(-1);
      }),
      StatusCode::INVALID_ARGUMENT,
      "spec.reshape.shape.dims[1]: must not be negative (but for one -1, inferred); got -1");
  add("reshape whose size overflows", Manipulation([](auto& spec, auto& bystander) {
        spec.mutable_reshape()->mutable_source()->set_handle(bystander);
        for (int i = 0; i < 3; ++i)
          spec.mutable_reshape()->mutable_shape()->add_dims(int64_t{1} << 40);
      }),
      StatusCode::INVALID_ARGUMENT, "spec.reshape.shape");
  add(
      "concat of mismatched shapes",
      [](v1::ArrayService::Stub& stub, const std::string& bystander) {
        grpc::ClientContext c;
        v1::CreateArrayResponse created;
        v1::IndexMap one;
        one.add_chunks()->add_slices();
        one.mutable_chunks(0)->add_slices();
        auto st = stub.CreateArray(&c, CreateRequest({10, 4}, v1::DTYPE_FLOAT32, one), &created);
        if (!st.ok()) return st;
        grpc::ClientContext c2;
        v1::ManipulateRequest r;
        r.mutable_spec()->mutable_concat()->add_sources()->set_handle(bystander);
        r.mutable_spec()->mutable_concat()->add_sources()->set_handle(created.array().handle());
        v1::ManipulateResponse out;
        return stub.Manipulate(&c2, r, &out);
      },
      StatusCode::INVALID_ARGUMENT,
      "spec.concat.sources[1]: shape (10, 4) does not match sources[0]'s (10, 10) outside axis 0");
  add("concat with an axis out of range", Manipulation([](auto& spec, auto& bystander) {
        spec.mutable_concat()->add_sources()->set_handle(bystander);
        spec.mutable_concat()->set_axis(2);
      }),
      StatusCode::INVALID_ARGUMENT, "spec.concat.axis: 2 is out of range for a result of rank 2");
  add("concat of nothing", Manipulation([](auto& spec, auto&) { spec.mutable_concat(); }),
      StatusCode::INVALID_ARGUMENT, "spec.concat.sources: give 1 to 1024 arrays; got 0");
  add("concat of too many", Manipulation([](auto& spec, auto& bystander) {
        for (int i = 0; i < 1025; ++i) spec.mutable_concat()->add_sources()->set_handle(bystander);
      }),
      StatusCode::INVALID_ARGUMENT, "spec.concat.sources: give 1 to 1024 arrays; got 1025");
}

void AddHardeningCases(std::vector<BadCase>& cases) {
  using grpc::StatusCode;
  auto add = [&](std::string name, auto call, StatusCode code, std::string contains) {
    cases.push_back({std::move(name), call, code, std::move(contains)});
  };
  static constexpr int64_t kMax = INT64_MAX;  // static: lambdas below use it uncaptured
  add(
      "shape product wraps int64",
      [](auto& stub, auto&) {
        return Create(stub, CreateRequest({int64_t{1} << 32, int64_t{1} << 32, 2}, v1::DTYPE_INT8,
                                          OnDevice(3, 0)));
      },
      StatusCode::INVALID_ARGUMENT, "spec.shape: the array is too large");
  add(
      "a start of INT64_MIN",
      [](auto& stub, auto&) {
        return Create(stub, CreateRequest({5}, v1::DTYPE_FLOAT32,
                                          MakeIndexMap({MakeChunk(0, {SliceSpec{INT64_MIN, 5}})})));
      },
      StatusCode::INVALID_ARGUMENT, "spec.index_map.chunks[0].slices[0]: start");
  add(
      "a stop of INT64_MAX",
      [](auto& stub, auto&) {
        return Create(stub, CreateRequest({5}, v1::DTYPE_FLOAT32,
                                          MakeIndexMap({MakeChunk(0, {SliceSpec{0, kMax, 2}})})));
      },
      StatusCode::INVALID_ARGUMENT, "spec.index_map.chunks[0].slices[0]: stop");
  add(
      "download region starting at INT64_MIN",
      [](auto& stub, auto& bystander) {
        grpc::ClientContext c;
        v1::DownloadArrayRequest r;
        r.set_handle(bystander);
        *r.mutable_region() = MakeRegion({SliceSpec{INT64_MIN, 1, -1}, SliceSpec{}});
        auto reader = stub.DownloadArray(&c, r);
        v1::DownloadArrayResponse m;
        while (reader->Read(&m)) {
        }
        return reader->Finish();
      },
      StatusCode::OUT_OF_RANGE, "region.slices[0]: start");
  add(
      "10^5 chunks",
      [](auto& stub, auto&) {
        return Create(stub, CreateRequest({100000}, v1::DTYPE_INT8, ManyChunks(100000)));
      },
      StatusCode::INVALID_ARGUMENT,
      "spec.index_map.chunks: 100000 chunks exceed the limit of 65536");
  add(
      "2^63 into int64",
      [](auto& stub, auto&) {
        return ScalarInto(stub, v1::DTYPE_INT64, MakeScalar(uint64_t{1} << 63));
      },
      StatusCode::INVALID_ARGUMENT,
      "spec.operands[1].scalar: the integer 9223372036854775808 is out of bounds for int64");
  add(
      "uint64 max into int32",
      [](auto& stub, auto&) { return ScalarInto(stub, v1::DTYPE_INT32, MakeScalar(~uint64_t{0})); },
      StatusCode::INVALID_ARGUMENT, "the integer 18446744073709551615 is out of bounds for int32");
  add(
      "-1 into uint32",
      [](auto& stub, auto&) { return ScalarInto(stub, v1::DTYPE_UINT32, MakeScalar<int64_t>(-1)); },
      StatusCode::INVALID_ARGUMENT, "the integer -1 is out of bounds for uint32");
  add(
      "2^63 fill into int64",
      [](auto& stub, auto&) {
        auto r = CreateRequest({4}, v1::DTYPE_INT64, OnDevice(1, 0));
        *r.mutable_fill()->mutable_full()->mutable_value() = MakeScalar(9223372036854775808.0);
        return Create(stub, r);
      },
      StatusCode::INVALID_ARGUMENT, "fill.full.value");
  add(
      "arange past int32",
      [](auto& stub, auto&) {
        auto r = CreateRequest({4}, v1::DTYPE_INT32, OnDevice(1, 0));
        r.mutable_fill()->mutable_arange()->set_start(0);
        r.mutable_fill()->mutable_arange()->set_step(1.9e243);
        return Create(stub, r);
      },
      StatusCode::INVALID_ARGUMENT, "fill.arange: value 5.7e+243 (start 0, step 1.9e+243)");
  add(
      "uniform past float32",
      [](auto& stub, auto&) {
        auto r = CreateRequest({4}, v1::DTYPE_FLOAT32, OnDevice(1, 0));
        r.mutable_fill()->mutable_uniform()->set_low(0);
        r.mutable_fill()->mutable_uniform()->set_high(1e300);
        return Create(stub, r);
      },
      StatusCode::INVALID_ARGUMENT, "fill.uniform: [0, 1e+300) is outside float32");
  add(
      "unknown dtype",
      [](auto& stub, auto&) {
        return Create(stub, CreateRequest({4}, static_cast<v1::DType>(99), OnDevice(1, 0)));
      },
      StatusCode::INVALID_ARGUMENT, "spec.dtype");
  add(
      "unknown mode on create",
      [](auto& stub, auto&) {
        auto r = CreateRequest({4}, v1::DTYPE_FLOAT32, OnDevice(1, 0));
        r.mutable_spec()->set_mode(static_cast<v1::Mode>(-3));
        return Create(stub, r);
      },
      StatusCode::INVALID_ARGUMENT, "spec.mode");
  add(
      "a 1 MiB name",
      [](auto& stub, auto&) {
        auto r = CreateRequest({4}, v1::DTYPE_FLOAT32, OnDevice(1, 0));
        r.mutable_spec()->set_name(std::string(1 << 20, 'n'));
        return Create(stub, r);
      },
      StatusCode::INVALID_ARGUMENT, "spec.name: a name has at most 256 bytes, got 1048576");
  add(
      "a name of invalid UTF-8",
      [](auto& stub, auto&) {
        // A proto3 string field must be UTF-8: the client library refuses to serialize it or the
        // server to parse it; either way the daemon answers and lives.
        auto r = CreateRequest({4}, v1::DTYPE_FLOAT32, OnDevice(1, 0));
        r.mutable_spec()->set_name("bad\xff\xfename");
        return Create(stub, r);
      },
      StatusCode::INTERNAL, "");
  add(
      "a name with a space",
      [](auto& stub, auto&) {
        auto r = CreateRequest({4}, v1::DTYPE_FLOAT32, OnDevice(1, 0));
        r.mutable_spec()->set_name("two words");
        return Create(stub, r);
      },
      StatusCode::INVALID_ARGUMENT, "spec.name: a name holds only letters");
  add(
      "a name that looks like a handle",
      [](auto& stub, auto&) {
        auto r = CreateRequest({4}, v1::DTYPE_FLOAT32, OnDevice(1, 0));
        r.mutable_spec()->set_name("arr-00000000deadbeef");
        return Create(stub, r);
      },
      StatusCode::INVALID_ARGUMENT, "has the form of a handle");
  add(
      "upload a byte that is not a bool",
      [](auto& stub, auto&) {
        v1::UploadArrayRequest header = Header({4}, OnDevice(1, 0));
        header.mutable_header()->mutable_new_array()->set_dtype(v1::DTYPE_BOOL);
        v1::UploadArrayRequest data;
        data.set_data(
            std::string("\x01\x00"
                        "a\x01",
                        4));  // split: \x00a would be one escape
        return Upload(stub, {header, data});
      },
      StatusCode::INVALID_ARGUMENT, "data: byte 2 is 97; a bool element is 0 or 1");
  add(
      "negative list page size",
      [](auto& stub, auto&) {
        grpc::ClientContext c;
        v1::ListArraysRequest r;
        r.set_page_size(-1);
        v1::ListArraysResponse out;
        return stub.ListArrays(&c, r, &out);
      },
      StatusCode::INVALID_ARGUMENT, "page_size");
  add(
      "forged list page token",
      [](auto& stub, auto&) {
        grpc::ClientContext c;
        v1::ListArraysRequest r;
        r.set_page_token(std::string(1 << 20, '\x01'));
        v1::ListArraysResponse out;
        return stub.ListArrays(&c, r, &out);
      },
      StatusCode::INVALID_ARGUMENT, "page_token");
  add(
      "oversized session key",
      [](auto& stub, auto&) {
        grpc::ClientContext c;
        c.AddMetadata("distarray-session", std::string(4096, 's'));
        v1::KeepAliveResponse out;
        return stub.KeepAlive(&c, v1::KeepAliveRequest(), &out);
      },
      StatusCode::INVALID_ARGUMENT, "distarray-session");
  add(
      "oversized session key ending a session",
      [](auto& stub, auto&) {
        grpc::ClientContext c;
        c.AddMetadata("distarray-session", std::string(4096, 's'));
        v1::EndSessionResponse out;
        return stub.EndSession(&c, v1::EndSessionRequest(), &out);
      },
      StatusCode::INVALID_ARGUMENT, "distarray-session");
  add(
      "a 1 MiB handle is quoted briefly",
      [](auto& stub, auto&) { return Describe(stub, std::string(1 << 20, 'h')); },
      StatusCode::NOT_FOUND, "(1048576 bytes)");
}

// Linalg: a fresh operand (`shape`, `dtype`, zeros unless `ones`), then `op` on it; the
// bystander (10 x 10 float32) serves where a second operand is needed.
std::function<grpc::Status(v1::ArrayService::Stub&, const std::string&)> LinalgOn(
    std::vector<int64_t> shape, v1::DType dtype, v1::LinalgOp op,
    std::function<void(v1::LinalgOpSpec&, const std::string& bystander)> fill = nullptr) {
  return [=](v1::ArrayService::Stub& stub, const std::string& bystander) {
    grpc::ClientContext c;
    v1::CreateArrayRequest create = CreateRequest(shape, dtype, OnDevice(shape.size(), 0));
    create.mutable_fill()->mutable_zeros();
    v1::CreateArrayResponse made;
    grpc::Status st = stub.CreateArray(&c, create, &made);
    if (!st.ok()) return st;
    grpc::ClientContext c2;
    v1::LinalgRequest r;
    r.mutable_spec()->set_op(op);
    r.mutable_spec()->mutable_a()->set_handle(made.array().handle());
    if (fill) fill(*r.mutable_spec(), bystander);
    v1::LinalgResponse out;
    return stub.Linalg(&c2, r, &out);
  };
}

// Sparse matrices (CsrMatrix): the bystander (10 x 10 float32) in every part's role, and
// requests that name nothing.
v1::CsrMatrix BystanderCsr(const std::string& bystander) {
  v1::CsrMatrix m;
  m.mutable_indptr()->set_handle(bystander);
  m.mutable_indices()->set_handle(bystander);
  m.mutable_data()->set_handle(bystander);
  m.mutable_shape()->add_dims(10);
  m.mutable_shape()->add_dims(10);
  *m.mutable_blocks() = OnDevice(2, 0);
  return m;
}

void AddSparseCases(std::vector<BadCase>& cases) {
  using grpc::StatusCode;
  auto add = [&](std::string name, auto call, StatusCode code, std::string contains) {
    cases.push_back({std::move(name), call, code, std::move(contains)});
  };
  auto sparse = [](std::function<void(v1::SparseRequest&, const std::string&)> fill) {
    return [fill](v1::ArrayService::Stub& stub, const std::string& bystander) {
      grpc::ClientContext c;
      v1::SparseRequest r;
      fill(r, bystander);
      v1::SparseResponse out;
      return stub.Sparse(&c, r, &out);
    };
  };
  auto matmul = [](std::function<void(v1::MatmulRequest&, const std::string&)> fill) {
    return [fill](v1::ArrayService::Stub& stub, const std::string& bystander) {
      grpc::ClientContext c;
      v1::MatmulRequest r;
      fill(r, bystander);
      v1::MatmulResponse out;
      return stub.Matmul(&c, r, &out);
    };
  };
  add("empty Sparse request", sparse([](auto&, auto&) {}), StatusCode::INVALID_ARGUMENT,
      "spec: give an op (to_dense or transpose)");
  add("Sparse to_dense of float32 column indices",
      sparse([](auto& r, auto& b) { *r.mutable_spec()->mutable_to_dense() = BystanderCsr(b); }),
      StatusCode::INVALID_ARGUMENT,
      "spec.to_dense.indices: dtype float32; column indices are int32 or int64");
  add("Sparse transpose with a scalar part", sparse([](auto& r, auto& b) {
        v1::CsrMatrix m = BystanderCsr(b);
        m.mutable_indptr()->mutable_scalar()->set_int_value(0);
        *r.mutable_spec()->mutable_transpose() = m;
      }),
      StatusCode::INVALID_ARGUMENT,
      "spec.transpose.indptr: a sparse matrix's parts are arrays, not scalars");
  add("Sparse transpose with one result name", sparse([](auto& r, auto& b) {
        *r.mutable_spec()->mutable_transpose() = BystanderCsr(b);
        r.add_result_names("one");
      }),
      StatusCode::INVALID_ARGUMENT, "result_names: transpose has three results");
  add("Matmul of an unknown sparse part", matmul([](auto& r, auto& b) {
        v1::CsrMatrix m = BystanderCsr(b);
        m.mutable_data()->set_handle("no-such-array");
        *r.mutable_spec()->mutable_sparse_a() = m;
        r.mutable_spec()->mutable_b()->set_handle(b);
      }),
      StatusCode::NOT_FOUND, "spec.sparse_a.data.handle");
  add("Matmul of a sparse matrix of three axes", matmul([](auto& r, auto& b) {
        v1::CsrMatrix m = BystanderCsr(b);
        m.mutable_shape()->add_dims(2);
        *r.mutable_spec()->mutable_sparse_a() = m;
        r.mutable_spec()->mutable_b()->set_handle(b);
      }),
      StatusCode::INVALID_ARGUMENT, "spec.sparse_a.shape: a sparse matrix has two axes");
  add("Matmul of a sparse matrix with TF32", matmul([](auto& r, auto& b) {
        *r.mutable_spec()->mutable_sparse_a() = BystanderCsr(b);
        r.mutable_spec()->mutable_b()->set_handle(b);
        r.mutable_spec()->set_allow_tf32(true);
      }),
      StatusCode::INVALID_ARGUMENT, "spec.allow_tf32: sparse products do not use tensor cores");
  add("Matmul of a sparse matrix declared symmetric", matmul([](auto& r, auto& b) {
        *r.mutable_spec()->mutable_sparse_a() = BystanderCsr(b);
        r.mutable_spec()->mutable_b()->set_handle(b);
        r.mutable_spec()->set_a_symmetric(true);
      }),
      StatusCode::INVALID_ARGUMENT, "spec.a_symmetric: applies to a dense a, not a sparse_a");
}

void AddLinalgCases(std::vector<BadCase>& cases) {
  using grpc::StatusCode;
  auto add = [&](std::string name, auto call, StatusCode code, std::string contains) {
    cases.push_back({std::move(name), call, code, std::move(contains)});
  };
  add(
      "empty Linalg request",
      [](auto& stub, auto&) {
        grpc::ClientContext c;
        v1::LinalgRequest r;
        v1::LinalgResponse out;
        return stub.Linalg(&c, r, &out);
      },
      StatusCode::INVALID_ARGUMENT, "spec.op: unknown linalg op 0");
  add(
      "Linalg without an operand",
      [](auto& stub, auto&) {
        grpc::ClientContext c;
        v1::LinalgRequest r;
        r.mutable_spec()->set_op(v1::LINALG_OP_INV);
        v1::LinalgResponse out;
        return stub.Linalg(&c, r, &out);
      },
      StatusCode::INVALID_ARGUMENT, "spec.a: give a handle or a scalar");
  add("inv of a non-square matrix", LinalgOn({3, 5}, v1::DTYPE_FLOAT64, v1::LINALG_OP_INV),
      StatusCode::INVALID_ARGUMENT, "spec.a: inv takes square matrices, got shape (3, 5) (3 x 5)");
  add("det of a vector", LinalgOn({4}, v1::DTYPE_FLOAT64, v1::LINALG_OP_DET),
      StatusCode::INVALID_ARGUMENT, "spec.a: det takes matrices (2 or more axes), got shape (4,)");
  add("cholesky of int32", LinalgOn({3, 3}, v1::DTYPE_INT32, v1::LINALG_OP_CHOLESKY),
      StatusCode::INVALID_ARGUMENT,
      "spec.a: cholesky takes float32, float64, complex64 or complex128 matrices, got int32");
  add("solve with b of the wrong shape",
      LinalgOn({4, 4}, v1::DTYPE_FLOAT32, v1::LINALG_OP_SOLVE,
               [](v1::LinalgOpSpec& spec, const std::string& bystander) {
                 spec.mutable_b()->set_handle(bystander);
               }),
      StatusCode::INVALID_ARGUMENT, "spec.b: shape (10, 10) does not match spec.a's (4, 4)");
  add("solve with b of another dtype",
      LinalgOn({10, 10}, v1::DTYPE_FLOAT64, v1::LINALG_OP_SOLVE,
               [](v1::LinalgOpSpec& spec, const std::string& bystander) {
                 spec.mutable_b()->set_handle(bystander);
               }),
      StatusCode::INVALID_ARGUMENT, "spec.b: dtype float32 differs from spec.a's float64");
  add("solve without b", LinalgOn({4, 4}, v1::DTYPE_FLOAT32, v1::LINALG_OP_SOLVE),
      StatusCode::INVALID_ARGUMENT,
      "spec.b: solve takes the right-hand sides as an array (a handle)");
  add("qr with a b",
      LinalgOn({4, 4}, v1::DTYPE_FLOAT32, v1::LINALG_OP_QR,
               [](v1::LinalgOpSpec& spec, const std::string& bystander) {
                 spec.mutable_b()->set_handle(bystander);
               }),
      StatusCode::INVALID_ARGUMENT, "spec.b: only solve takes a second operand");
  add("inv of a singular matrix", LinalgOn({4, 4}, v1::DTYPE_FLOAT64, v1::LINALG_OP_INV),
      StatusCode::FAILED_PRECONDITION,
      "spec.a: the matrix is singular (U[0, 0] of its LU factorization is exactly zero)");
  add("cholesky of a matrix not positive definite",
      LinalgOn({2, 3, 3}, v1::DTYPE_COMPLEX128, v1::LINALG_OP_CHOLESKY),
      StatusCode::FAILED_PRECONDITION,
      "spec.a: matrix 0 of the stack (C order) is not positive definite (its leading minor of "
      "order 1 is not positive)");
  add("qr of a matrix over the size bound",
      LinalgOn({16385, 1}, v1::DTYPE_FLOAT32, v1::LINALG_OP_QR), StatusCode::RESOURCE_EXHAUSTED,
      "spec.a: matrices of 16385 x 1 are over the bound of 16384 rows and columns per matrix");
  add("det of a stack over the bound",
      LinalgOn({65537, 1, 1}, v1::DTYPE_FLOAT32, v1::LINALG_OP_DET), StatusCode::RESOURCE_EXHAUSTED,
      "spec.a: a stack of 65537 matrices is over the bound of 65536 per request");
}

std::vector<BadCase> Cases() {
  const v1::IndexMap one = OnDevice(1, 0);
  const v1::IndexMap two_d = OnDevice(2, 0);
  std::vector<BadCase> cases;
  auto add = [&](std::string name, auto call, grpc::StatusCode code, std::string contains) {
    cases.push_back({std::move(name), call, code, std::move(contains)});
  };
  using grpc::StatusCode;
  add(
      "describe unknown handle",
      [](auto& stub, auto&) {
        grpc::ClientContext c;
        v1::DescribeArrayRequest r;
        r.set_handle("arr-0000000000000000");
        v1::DescribeArrayResponse out;
        return stub.DescribeArray(&c, r, &out);
      },
      StatusCode::NOT_FOUND, "handle: no array 'arr-0000000000000000'");
  add(
      "delete unknown handle",
      [](auto& stub, auto&) {
        grpc::ClientContext c;
        v1::DeleteArrayRequest r;
        r.set_handle("nope");
        v1::DeleteArrayResponse out;
        return stub.DeleteArray(&c, r, &out);
      },
      StatusCode::NOT_FOUND, "handle: no array 'nope'");
  add(
      "download unknown handle",
      [](auto& stub, auto&) {
        grpc::ClientContext c;
        v1::DownloadArrayRequest r;
        r.set_handle("nope");
        auto reader = stub.DownloadArray(&c, r);
        v1::DownloadArrayResponse m;
        while (reader->Read(&m)) {
        }
        return reader->Finish();
      },
      StatusCode::NOT_FOUND, "handle");
  add(
      "device out of range",
      [](auto& stub, auto&) {
        return Create(stub, CreateRequest({10}, v1::DTYPE_FLOAT32,
                                          MakeIndexMap({MakeChunk(0, {SliceSpec{0, 5}}),
                                                        MakeChunk(64, {SliceSpec{5, 10}})})));
      },
      StatusCode::INVALID_ARGUMENT, "spec.index_map.chunks[1].device: device 64 does not exist");
  add(
      "zero step",
      [](auto& stub, auto&) {
        return Create(
            stub, CreateRequest({10, 4}, v1::DTYPE_FLOAT32,
                                MakeIndexMap({MakeChunk(0, {SliceSpec{}, SliceSpec{0, 4, 0}})})));
      },
      StatusCode::INVALID_ARGUMENT, "spec.index_map.chunks[0].slices[1]: step must not be zero");
  add(
      "stop out of bounds",
      [](auto& stub, auto&) {
        return Create(stub,
                      CreateRequest({10, 4}, v1::DTYPE_FLOAT32,
                                    MakeIndexMap({MakeChunk(0, {SliceSpec{0, 12}, SliceSpec{}})})));
      },
      StatusCode::INVALID_ARGUMENT, "spec.index_map.chunks[0].slices[0]: stop 12 is out of bounds");
  add(
      "negative start out of bounds",
      [](auto& stub, auto&) {
        return Create(stub,
                      CreateRequest({10}, v1::DTYPE_FLOAT32,
                                    MakeIndexMap({MakeChunk(0, {SliceSpec{-11, std::nullopt}})})));
      },
      StatusCode::INVALID_ARGUMENT, "chunks[0].slices[0]: start -11 is out of bounds");
  add(
      "empty slice",
      [](auto& stub, auto&) {
        return Create(stub, CreateRequest({10}, v1::DTYPE_FLOAT32,
                                          MakeIndexMap({MakeChunk(0, {SliceSpec{6, 6}})})));
      },
      StatusCode::INVALID_ARGUMENT, "chunks[0].slices[0]: slice 6:6:1 selects no elements");
  add(
      "wrong rank",
      [=](auto& stub, auto&) {
        return Create(stub, CreateRequest({10, 3}, v1::DTYPE_FLOAT32, one));
      },
      StatusCode::INVALID_ARGUMENT, "chunks[0].slices: has 1 slices for an array of rank 2");
  add(
      "no chunks",
      [](auto& stub, auto&) { return Create(stub, CreateRequest({10}, v1::DTYPE_FLOAT32, {})); },
      StatusCode::INVALID_ARGUMENT, "spec.index_map: at least one chunk is required");
  add(
      "negative dim",
      [=](auto& stub, auto&) {
        return Create(stub, CreateRequest({4, -3}, v1::DTYPE_FLOAT32, two_d));
      },
      StatusCode::INVALID_ARGUMENT, "spec.shape.dims[1]: must not be negative, got -3");
  add(
      "no dtype",
      [=](auto& stub, auto&) {
        return Create(stub, CreateRequest({4}, v1::DTYPE_UNSPECIFIED, one));
      },
      StatusCode::INVALID_ARGUMENT, "spec.dtype: a dtype is required");
  add(
      "floor division of complex numbers",
      [=](auto& stub, auto& bystander) {
        v1::Scalar w;
        w.mutable_complex_value()->set_real(1);
        w.mutable_complex_value()->set_imag(-1);
        return Binary(stub, v1::ELEMENTWISE_OP_FLOOR_DIVIDE, Handle(bystander), ScalarOperand(w));
      },
      StatusCode::INVALID_ARGUMENT,
      "spec.op: floor_divide is not defined for complex64 (NumPy has no complex loop for it)");
  add(
      "a float16 fill beyond float16's range",
      [=](auto& stub, auto&) {
        auto r = CreateRequest({4}, v1::DTYPE_FLOAT16, one);
        r.mutable_fill()->mutable_full()->mutable_value()->set_int_value(70000);
        return Create(stub, r);
      },
      StatusCode::INVALID_ARGUMENT,
      "fill.full.value: scalar 70000 is not exactly representable as float16");
  add(
      "a complex fill into a float32 array",
      [=](auto& stub, auto&) {
        auto r = CreateRequest({4}, v1::DTYPE_FLOAT32, one);
        v1::ComplexNumber* z =
            r.mutable_fill()->mutable_full()->mutable_value()->mutable_complex_value();
        z->set_real(1);
        z->set_imag(-2);
        return Create(stub, r);
      },
      StatusCode::INVALID_ARGUMENT,
      "fill.full.value: the complex scalar (1-2j) does not fit a float32 array (use a complex64 "
      "or complex128 one)");
  add(
      "bad uniform bounds",
      [=](auto& stub, auto&) {
        auto r = CreateRequest({4}, v1::DTYPE_FLOAT32, one);
        r.mutable_fill()->mutable_uniform()->set_low(2);
        r.mutable_fill()->mutable_uniform()->set_high(1);
        return Create(stub, r);
      },
      StatusCode::INVALID_ARGUMENT, "fill.uniform: need finite low < high");
  add(
      "full value not representable",
      [=](auto& stub, auto&) {
        auto r = CreateRequest({4}, v1::DTYPE_UINT8, one);
        *r.mutable_fill()->mutable_full()->mutable_value() = MakeScalar<int64_t>(300);
        return Create(stub, r);
      },
      StatusCode::INVALID_ARGUMENT,
      "fill.full.value: scalar 300 is not exactly representable as uint8");
  add(
      "shape mismatch",
      [=](auto& stub, auto& bystander) {
        grpc::ClientContext c;
        v1::CreateArrayResponse out;
        auto st = stub.CreateArray(&c, CreateRequest({4}, v1::DTYPE_FLOAT32, one), &out);
        if (!st.ok()) return st;
        return Binary(stub, v1::ELEMENTWISE_OP_ADD, Handle(bystander),
                      Handle(out.array().handle()));
      },
      StatusCode::INVALID_ARGUMENT,
      "spec.operands[1]: shape (4,) does not broadcast with (10, 10)");
  add(
      "bitwise op on floats",
      [=](auto& stub, auto& bystander) {
        return Binary(stub, v1::ELEMENTWISE_OP_BITWISE_AND, Handle(bystander), Handle(bystander));
      },
      StatusCode::INVALID_ARGUMENT,
      "spec.op: bitwise_and is not defined for float32; it takes integers and bool");
  add(
      "operand deleted",
      [](auto& stub, auto& bystander) {
        return Binary(stub, v1::ELEMENTWISE_OP_ADD, Handle(bystander), Handle("arr-gone"));
      },
      StatusCode::NOT_FOUND, "spec.operands[1].handle: no array 'arr-gone'");
  add(
      "lossy scalar",
      [=](auto& stub, auto&) {
        grpc::ClientContext c;
        v1::CreateArrayResponse out;
        auto st = stub.CreateArray(&c, CreateRequest({4}, v1::DTYPE_INT32, one), &out);
        if (!st.ok()) return st;
        return Binary(stub, v1::ELEMENTWISE_OP_ADD, Handle(out.array().handle()),
                      ScalarOperand(MakeScalar(int64_t{1} << 40)));
      },
      StatusCode::INVALID_ARGUMENT,
      "spec.operands[1].scalar: the integer 1099511627776 is out of bounds for int32");
  add(
      "two scalars",
      [](auto& stub, auto&) {
        return Binary(stub, v1::ELEMENTWISE_OP_ADD, ScalarOperand(MakeScalar(1.0)),
                      ScalarOperand(MakeScalar(2.0)));
      },
      StatusCode::INVALID_ARGUMENT, "spec.operands: at least one operand must be an array");
  add(
      "one operand",
      [](auto& stub, auto& bystander) {
        grpc::ClientContext c;
        v1::ElementwiseRequest r;
        r.mutable_spec()->set_op(v1::ELEMENTWISE_OP_ADD);
        *r.mutable_spec()->add_operands() = Handle(bystander);
        v1::ElementwiseResponse out;
        return stub.Elementwise(&c, r, &out);
      },
      StatusCode::INVALID_ARGUMENT, "spec.operands: add takes 2 operands, got 1");
  add(
      "unknown op",
      [](auto& stub, auto& bystander) {
        return Binary(stub, static_cast<v1::ElementwiseOp>(999), Handle(bystander),
                      Handle(bystander));
      },
      StatusCode::INVALID_ARGUMENT, "spec.op: unknown elementwise op 999");
  add(
      "name taken",
      [](auto& stub, auto&) {
        auto r = CreateRequest({4}, v1::DTYPE_FLOAT32, OnDevice(1, 0));
        r.mutable_spec()->set_name("errors-test-taken");
        auto first = Create(stub, r);
        if (!first.ok()) return first;
        return Create(stub, r);
      },
      StatusCode::ALREADY_EXISTS, "spec.name: an array named 'errors-test-taken' already exists");
  add(
      "region out of bounds",
      [](auto& stub, auto& bystander) {
        grpc::ClientContext c;
        v1::DownloadArrayRequest r;
        r.set_handle(bystander);
        *r.mutable_region() = MakeRegion({SliceSpec{0, 11}, SliceSpec{}});
        auto reader = stub.DownloadArray(&c, r);
        v1::DownloadArrayResponse m;
        while (reader->Read(&m)) {
        }
        return reader->Finish();
      },
      StatusCode::OUT_OF_RANGE, "region.slices[0]: stop 11 is out of bounds");
  add(
      "reshard to a bad map",
      [](auto& stub, auto& bystander) {
        grpc::ClientContext c;
        v1::ReshardRequest r;
        r.set_handle(bystander);
        *r.mutable_index_map() = MakeIndexMap({MakeChunk(0, {SliceSpec{}, SliceSpec{0, 10, -1}})});
        v1::ReshardResponse out;
        return stub.Reshard(&c, r, &out);
      },
      StatusCode::INVALID_ARGUMENT, "index_map.chunks[0].slices[1]");
  add(
      "reshard to an unknown mode",
      [](auto& stub, auto& bystander) {
        grpc::ClientContext c;
        v1::ChangeModeRequest r;
        r.set_handle(bystander);
        r.set_mode(static_cast<v1::Mode>(17));
        v1::ChangeModeResponse out;
        return stub.ChangeMode(&c, r, &out);
      },
      StatusCode::INVALID_ARGUMENT, "mode: unknown mode 17");
  add(
      "upload too many bytes",
      [=](auto& stub, auto&) {
        return Upload(stub, {Header({4}, one), Data(12), Data(8)});
      },
      StatusCode::INVALID_ARGUMENT, "data: the stream carries more than the 16 bytes");
  add(
      "upload too few bytes",
      [=](auto& stub, auto&) {
        return Upload(stub, {Header({4}, one), Data(12)});
      },
      StatusCode::INVALID_ARGUMENT, "data: the stream carried 12 bytes; the region holds 16");
  add(
      "upload without header", [](auto& stub, auto&) { return Upload(stub, {Data(12)}); },
      StatusCode::INVALID_ARGUMENT, "header: the first message must be the header");
  add(
      "upload two headers",
      [=](auto& stub, auto&) {
        return Upload(stub, {Header({4}, one), Header({4}, one)});
      },
      StatusCode::INVALID_ARGUMENT, "header: only the first message may be a header");
  add(
      "upload into a SUM array",
      [=](auto& stub, auto&) {
        auto r = CreateRequest({4}, v1::DTYPE_FLOAT32, one);
        r.mutable_spec()->set_mode(v1::MODE_SUM);
        grpc::ClientContext c;
        v1::CreateArrayResponse out;
        auto st = stub.CreateArray(&c, r, &out);
        if (!st.ok()) return st;
        v1::UploadArrayRequest h;
        h.mutable_header()->set_handle(out.array().handle());
        return Upload(stub, {h, Data(16)});
      },
      StatusCode::FAILED_PRECONDITION, "uploads overwrite REPLICA arrays only");
  // Shared-memory ranges name a segment of the caller's session: any other name is NOT_FOUND,
  // with one message, before anything else about the segment is checked.
  const auto range = [](int64_t offset, int64_t bytes) {
    v1::SharedMemoryRange r;
    r.set_name("/distarray-errors-test-no-segment");
    r.set_segment_bytes(1 << 20);
    r.set_offset(offset);
    r.set_bytes(bytes);
    return r;
  };
  const std::string no_segment = "no shared-memory segment of this session has this name";
  add(
      "upload from a shared-memory segment the daemon did not make",
      [=](auto& stub, auto&) {
        grpc::ClientContext c;
        v1::UploadFromSharedMemoryRequest r;
        *r.mutable_header() = Header({4}, one).header();
        *r.mutable_source() = range(0, 16);
        v1::UploadFromSharedMemoryResponse out;
        return stub.UploadFromSharedMemory(&c, r, &out);
      },
      StatusCode::NOT_FOUND, "source.name: " + no_segment);
  add(
      "download to a shared-memory segment the daemon did not make",
      [=](auto& stub, auto& bystander) {
        grpc::ClientContext c;
        v1::DownloadToSharedMemoryRequest r;
        r.set_handle(bystander);
        *r.mutable_destination() = range(4096, 400);
        v1::DownloadToSharedMemoryResponse out;
        return stub.DownloadToSharedMemory(&c, r, &out);
      },
      StatusCode::NOT_FOUND, "destination.name: " + no_segment);
  const auto create_segment = [](v1::ArrayService::Stub& stub, int64_t bytes, bool session) {
    grpc::ClientContext c;
    if (session) c.AddMetadata("distarray-session", "errors-test");
    v1::CreateSharedMemoryRequest r;
    r.set_bytes(bytes);
    v1::CreateSharedMemoryResponse out;
    return stub.CreateSharedMemory(&c, r, &out);
  };
  add(
      "CreateSharedMemory of a negative size",
      [=](auto& stub, auto&) { return create_segment(stub, -1, true); },
      StatusCode::INVALID_ARGUMENT, "bytes: must not be negative");
  add(
      "CreateSharedMemory above the tenant's shared-memory bytes",
      [=](auto& stub, auto&) { return create_segment(stub, int64_t{1} << 62, true); },
      StatusCode::RESOURCE_EXHAUSTED, "--shared_memory_max_bytes");
  add(
      "CreateSharedMemory without a session",
      [=](auto& stub, auto&) { return create_segment(stub, 4096, false); },
      StatusCode::INVALID_ARGUMENT, "metadata distarray-session");
  const auto release_segment = [](v1::ArrayService::Stub& stub, const std::string& name) {
    grpc::ClientContext c;
    c.AddMetadata("distarray-session", "errors-test");
    v1::ReleaseSharedMemoryRequest r;
    r.set_name(name);
    v1::ReleaseSharedMemoryResponse out;
    return stub.ReleaseSharedMemory(&c, r, &out);
  };
  add(
      "ReleaseSharedMemory of a segment the daemon did not make",
      [=](auto& stub, auto&) {
        return release_segment(stub, "/distarray-shm-0123456789abcdef0123456789abcdef");
      },
      StatusCode::NOT_FOUND, "name: " + no_segment);
  add(
      "ReleaseSharedMemory of a malformed name",
      [=](auto& stub, auto&) { return release_segment(stub, "/../etc/passwd"); },
      StatusCode::INVALID_ARGUMENT, "name: a shared-memory segment name is");
  add(
      "empty Reduce request",
      [](auto& stub, auto&) {
        grpc::ClientContext c;
        v1::ReduceRequest r;
        v1::ReduceResponse out;
        return stub.Reduce(&c, r, &out);
      },
      StatusCode::INVALID_ARGUMENT, "spec.operand: give the array to reduce");
  add(
      "reduce over a repeated axis",
      [](auto& stub, auto& bystander) {
        grpc::ClientContext c;
        v1::ReduceRequest r;
        r.mutable_spec()->set_op(v1::REDUCE_OP_SUM);
        *r.mutable_spec()->mutable_operand() = Handle(bystander);
        r.mutable_spec()->add_axes(1);
        r.mutable_spec()->add_axes(-1);
        v1::ReduceResponse out;
        return stub.Reduce(&c, r, &out);
      },
      StatusCode::INVALID_ARGUMENT, "spec.axes[1]: axis 1 is repeated");
  add(
      "out of another shape",
      [=](auto& stub, auto& bystander) {
        grpc::ClientContext c;
        v1::CreateArrayResponse out;
        auto st = stub.CreateArray(&c, CreateRequest({4}, v1::DTYPE_FLOAT32, one), &out);
        if (!st.ok()) return st;
        grpc::ClientContext c2;
        v1::ElementwiseRequest r;
        r.mutable_spec()->set_op(v1::ELEMENTWISE_OP_ADD);
        *r.mutable_spec()->add_operands() = Handle(bystander);
        *r.mutable_spec()->add_operands() = Handle(bystander);
        r.mutable_spec()->set_out(out.array().handle());
        v1::ElementwiseResponse response;
        return stub.Elementwise(&c2, r, &response);
      },
      StatusCode::INVALID_ARGUMENT, "spec.out: shape (4,) is not the result's (10, 10)");
  add(
      "out and result_index_map together",
      [=](auto& stub, auto& bystander) {
        grpc::ClientContext c;
        v1::ElementwiseRequest r;
        r.mutable_spec()->set_op(v1::ELEMENTWISE_OP_NEGATIVE);
        *r.mutable_spec()->add_operands() = Handle(bystander);
        r.mutable_spec()->set_out(bystander);
        *r.mutable_spec()->mutable_result_index_map() = two_d;
        v1::ElementwiseResponse response;
        return stub.Elementwise(&c, r, &response);
      },
      StatusCode::INVALID_ARGUMENT, "spec.result_index_map: give either out or result_index_map");
  add(
      "astype without a dtype",
      [](auto& stub, auto& bystander) {
        grpc::ClientContext c;
        v1::ElementwiseRequest r;
        r.mutable_spec()->set_op(v1::ELEMENTWISE_OP_ASTYPE);
        *r.mutable_spec()->add_operands() = Handle(bystander);
        v1::ElementwiseResponse response;
        return stub.Elementwise(&c, r, &response);
      },
      StatusCode::INVALID_ARGUMENT, "spec.dtype: a dtype is required");
  add(
      "reduce over an axis out of range",
      [](auto& stub, auto& bystander) {
        grpc::ClientContext c;
        v1::ReduceRequest r;
        r.mutable_spec()->set_op(v1::REDUCE_OP_MAX);
        *r.mutable_spec()->mutable_operand() = Handle(bystander);
        r.mutable_spec()->add_axes(INT32_MIN);
        v1::ReduceResponse out;
        return stub.Reduce(&c, r, &out);
      },
      StatusCode::INVALID_ARGUMENT,
      "spec.axes[0]: axis -2147483648 is out of range for an array of 2 axes");
  add(
      "unknown reduce op",
      [](auto& stub, auto& bystander) {
        grpc::ClientContext c;
        v1::ReduceRequest r;
        r.mutable_spec()->set_op(static_cast<v1::ReduceOp>(99));
        *r.mutable_spec()->mutable_operand() = Handle(bystander);
        v1::ReduceResponse out;
        return stub.Reduce(&c, r, &out);
      },
      StatusCode::INVALID_ARGUMENT, "spec.op: unknown reduce op 99");
  add(
      "TF32 on float64",
      [=](auto& stub, auto&) {
        grpc::ClientContext c;
        v1::CreateArrayResponse out;
        auto st = stub.CreateArray(&c, CreateRequest({10, 10}, v1::DTYPE_FLOAT64, two_d), &out);
        if (!st.ok()) return st;
        grpc::ClientContext c2;
        v1::MatmulRequest r;
        *r.mutable_spec()->mutable_a() = Handle(out.array().handle());
        *r.mutable_spec()->mutable_b() = Handle(out.array().handle());
        r.mutable_spec()->set_allow_tf32(true);
        v1::MatmulResponse response;
        return stub.Matmul(&c2, r, &response);
      },
      StatusCode::INVALID_ARGUMENT, "spec.allow_tf32: TF32 applies to float32 only");
  add(
      "a symmetric a that is not square",
      [=](auto& stub, auto&) {
        grpc::ClientContext c;
        v1::CreateArrayResponse a, b;
        auto st = stub.CreateArray(&c, CreateRequest({10, 7}, v1::DTYPE_FLOAT64, two_d), &a);
        if (!st.ok()) return st;
        grpc::ClientContext c2;
        st = stub.CreateArray(&c2, CreateRequest({7, 10}, v1::DTYPE_FLOAT64, two_d), &b);
        if (!st.ok()) return st;
        grpc::ClientContext c3;
        v1::MatmulRequest r;
        *r.mutable_spec()->mutable_a() = Handle(a.array().handle());
        *r.mutable_spec()->mutable_b() = Handle(b.array().handle());
        r.mutable_spec()->set_a_symmetric(true);
        v1::MatmulResponse response;
        return stub.Matmul(&c3, r, &response);
      },
      StatusCode::INVALID_ARGUMENT, "spec.a_symmetric: a of shape (10, 7) is not a square matrix");
  add(
      "empty Matmul request",
      [](auto& stub, auto&) {
        grpc::ClientContext c;
        v1::MatmulRequest r;
        v1::MatmulResponse out;
        return stub.Matmul(&c, r, &out);
      },
      StatusCode::INVALID_ARGUMENT, "spec.a: matmul takes arrays, not scalars");
  add(
      "matmul of a matrix and a vector of another length",
      [=](auto& stub, auto& bystander) {
        grpc::ClientContext c;
        v1::CreateArrayResponse out;
        auto st = stub.CreateArray(&c, CreateRequest({4}, v1::DTYPE_FLOAT32, one), &out);
        if (!st.ok()) return st;
        grpc::ClientContext c2;
        v1::MatmulRequest r;
        *r.mutable_spec()->mutable_a() = Handle(bystander);
        *r.mutable_spec()->mutable_b() = Handle(out.array().handle());
        v1::MatmulResponse response;
        return stub.Matmul(&c2, r, &response);
      },
      StatusCode::INVALID_ARGUMENT,
      "spec.b: shapes (10, 10) and (4,) are not aligned: 10 (last axis of a) != 4 (the only axis "
      "of b)");
  add(
      "RunGraph without a program",
      [](auto& stub, auto&) {
        grpc::ClientContext c;
        v1::RunGraphRequest r;
        v1::RunGraphResponse out;
        return stub.RunGraph(&c, r, &out);
      },
      StatusCode::INVALID_ARGUMENT, "program: give a program or a program_id");
  add(
      "RunGraph with an unknown program_id",
      [](auto& stub, auto&) {
        grpc::ClientContext c;
        v1::RunGraphRequest r;
        r.set_program_id("prog-ffffffffffffffff");
        v1::RunGraphResponse out;
        return stub.RunGraph(&c, r, &out);
      },
      StatusCode::NOT_FOUND, "program_id: no registered program");
  add(
      "RunGraph binding an argument the program has no input for",
      [](auto& stub, auto& bystander) {
        grpc::ClientContext c;
        v1::RunGraphRequest r;
        r.mutable_program()->add_inputs("a");
        r.mutable_program()->add_outputs("a");
        (*r.mutable_arguments())["a"] = bystander;
        (*r.mutable_arguments())["zz"] = bystander;
        v1::RunGraphResponse out;
        return stub.RunGraph(&c, r, &out);
      },
      StatusCode::INVALID_ARGUMENT, "arguments: 'zz' is not an input");
  add(
      "RunGraph naming an output that is not one",
      [](auto& stub, auto& bystander) {
        grpc::ClientContext c;
        v1::RunGraphRequest r;
        r.mutable_program()->add_inputs("a");
        r.mutable_program()->add_outputs("a");
        (*r.mutable_arguments())["a"] = bystander;
        (*r.mutable_output_names())["b"] = "kept";
        v1::RunGraphResponse out;
        return stub.RunGraph(&c, r, &out);
      },
      StatusCode::INVALID_ARGUMENT, "not an output of the program");
  // Linalg statements (LinalgStatement) on the bystander: svd with `targets` short of its three
  // results; solve without its b.
  const auto linalg_program = [](v1::LinalgOp op, int targets) {
    return [op, targets](auto& stub, auto& bystander) {
      grpc::ClientContext c;
      v1::RunGraphRequest r;
      r.mutable_program()->add_inputs("a");
      v1::LinalgStatement* s = r.mutable_program()->add_statements()->mutable_linalg();
      s->mutable_spec()->set_op(op);
      s->mutable_spec()->set_compute_uv(true);
      s->mutable_spec()->mutable_a()->set_variable("a");
      for (int t = 0; t < targets; ++t) s->add_targets(absl::StrCat("t", t));
      r.mutable_program()->add_outputs("t0");
      (*r.mutable_arguments())["a"] = bystander;
      v1::RunGraphResponse out;
      return stub.RunGraph(&c, r, &out);
    };
  };
  add("RunGraph with a linalg statement short of targets", linalg_program(v1::LINALG_OP_SVD, 1),
      StatusCode::INVALID_ARGUMENT,
      "program.statements[0].linalg.targets: linalg LINALG_OP_SVD with compute_uv has 3 result(s)");
  add("RunGraph with a linalg solve without b", linalg_program(v1::LINALG_OP_SOLVE, 1),
      StatusCode::INVALID_ARGUMENT,
      "program.statements[0].linalg.spec.b: solve takes the right-hand sides as an array");
  // A create statement: CreateArray's checks, named from the statement.
  const auto create_program = [](std::function<void(v1::CreateStatement&)> edit) {
    return [edit](auto& stub, auto&) {
      grpc::ClientContext c;
      v1::RunGraphRequest r;
      v1::Statement* s = r.mutable_program()->add_statements();
      s->set_target("x");
      v1::CreateStatement& create = *s->mutable_create();
      create.mutable_shape()->add_dims(300);
      create.set_dtype(v1::DTYPE_INT8);
      v1::Chunk* chunk = create.mutable_index_map()->add_chunks();
      chunk->set_device(0);
      chunk->add_slices();
      edit(create);
      r.mutable_program()->add_outputs("x");
      v1::RunGraphResponse out;
      return stub.RunGraph(&c, r, &out);
    };
  };
  add("RunGraph creating an arange past its dtype", create_program([](v1::CreateStatement& c) {
        c.mutable_fill()->mutable_arange()->set_step(1);
      }),
      StatusCode::INVALID_ARGUMENT,
      "program.statements[0].create.fill.arange: value 299 (start 0, step 1) is outside int8");
  add("RunGraph creating an array of no dtype",
      create_program([](v1::CreateStatement& c) { c.set_dtype(v1::DTYPE_UNSPECIFIED); }),
      StatusCode::INVALID_ARGUMENT, "program.statements[0].create.dtype");
  add("RunGraph creating an array on a device that does not exist",
      create_program(
          [](v1::CreateStatement& c) { c.mutable_index_map()->mutable_chunks(0)->set_device(99); }),
      StatusCode::INVALID_ARGUMENT,
      "program.statements[0].create.index_map.chunks[0].device: device 99 does not exist");
  add(
      "RegisterProgram with a bad variable name",
      [](auto& stub, auto&) {
        grpc::ClientContext c;
        v1::RegisterProgramRequest r;
        r.mutable_program()->add_inputs("9lives");
        r.mutable_program()->add_outputs("9lives");
        v1::RegisterProgramResponse out;
        return stub.RegisterProgram(&c, r, &out);
      },
      StatusCode::INVALID_ARGUMENT, "program.inputs[0]");
  add(
      "RegisterProgram with too many inputs",
      [](auto& stub, auto&) {
        grpc::ClientContext c;
        v1::RegisterProgramRequest r;
        for (int i = 0; i < 5000; ++i) r.mutable_program()->add_inputs("x");
        r.mutable_program()->add_outputs("x");
        v1::RegisterProgramResponse out;
        return stub.RegisterProgram(&c, r, &out);
      },
      StatusCode::INVALID_ARGUMENT, "program.inputs: at most");
  // A program's index maps are checked at registration for what needs no shape.
  const auto register_reshard = [](std::function<void(v1::IndexMap&)> edit) {
    return [edit](auto& stub, auto&) {
      grpc::ClientContext c;
      v1::RegisterProgramRequest r;
      r.mutable_program()->add_inputs("a");
      v1::Statement* s = r.mutable_program()->add_statements();
      s->set_target("b");
      s->mutable_reshard()->set_source("a");
      v1::IndexMap* map = s->mutable_reshard()->mutable_index_map();
      for (int c = 0; c < 2; ++c) {  // device 0: every backend has one
        v1::Chunk* chunk = map->add_chunks();
        chunk->set_device(0);
        chunk->add_slices()->set_stop(4);
      }
      edit(*map);
      r.mutable_program()->add_outputs("b");
      v1::RegisterProgramResponse out;
      return stub.RegisterProgram(&c, r, &out);
    };
  };
  add("RegisterProgram resharding to a device that does not exist",
      register_reshard([](v1::IndexMap& m) { m.mutable_chunks(1)->set_device(99); }),
      StatusCode::INVALID_ARGUMENT,
      "program.statements[0].reshard.index_map.chunks[1].device: device 99 does not exist");
  add("RegisterProgram resharding with a zero step", register_reshard([](v1::IndexMap& m) {
        m.mutable_chunks(0)->mutable_slices(0)->set_step(0);
      }),
      StatusCode::INVALID_ARGUMENT,
      "program.statements[0].reshard.index_map.chunks[0].slices[0]: step must not be zero");
  add("RegisterProgram resharding to chunks of two ranks",
      register_reshard([](v1::IndexMap& m) { m.mutable_chunks(1)->add_slices(); }),
      StatusCode::INVALID_ARGUMENT,
      "program.statements[0].reshard.index_map.chunks[1].slices: has 2 slices, chunks[0] has 1");
  add("RegisterProgram resharding to more dimensions than an array has",
      register_reshard([](v1::IndexMap& m) {
        for (v1::Chunk& chunk : *m.mutable_chunks()) {
          for (int d = 0; d < 17; ++d) chunk.add_slices();
        }
      }),
      StatusCode::INVALID_ARGUMENT,
      "program.statements[0].reshard.index_map.chunks[0].slices: 18 slices; an array has at "
      "most 16");
  add(
      "DeleteProgram of an unknown id",
      [](auto& stub, auto&) {
        grpc::ClientContext c;
        v1::DeleteProgramRequest r;
        r.set_program_id("nope");
        v1::DeleteProgramResponse out;
        return stub.DeleteProgram(&c, r, &out);
      },
      StatusCode::NOT_FOUND, "program_id");
  AddHardeningCases(cases);
  AddManipulationCases(cases);
  AddLinalgCases(cases);
  AddSparseCases(cases);
  return cases;
}

TEST_P(ErrorsTest, BadRequestsGetTheirExactStatus) {
  const RawStub raw(address());
  for (const BadCase& bad : Cases()) {
    SCOPED_TRACE(bad.name);
    const grpc::Status status = bad.call(raw.stub(), bystander().handle());
    EXPECT_EQ(status.error_code(), bad.code) << status.error_message();
    EXPECT_NE(status.error_message().find(bad.message_contains), std::string::npos)
        << "message: " << status.error_message();
    // Messages quote client strings in bounded form, whatever the request carried.
    EXPECT_LT(status.error_message().size(), 1024u);
    ExpectBystanderIntact();
  }
}

DISTARRAY_INSTANTIATE_BACKENDS(ErrorsTest);

// Memory admission runs against its own daemon with a small limit, so its accounting is exact.
class MemoryLimitTest : public ::testing::TestWithParam<std::string> {};

TEST_P(MemoryLimitTest, OverTheLimitIsResourceExhaustedAndNothingLeaks) {
  Daemon::Options options = OptionsFor(GetParam());
  options.memory_limit = "64MiB";
  std::unique_ptr<Daemon> daemon;
  ASSERT_NO_FATAL_FAILURE(StartOwnDaemon(GetParam(), options, daemon));
  if (IsSkipped()) return;
  ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon->address()));
  ASSERT_OK(client.Synchronize());
  const int64_t baseline = UsedBytes(client);
  ASSERT_OK_AND_ASSIGN(const v1::GetServerInfoResponse info_at_start, client.ServerInfo());

  std::mt19937_64 rng(12);
  const std::vector<float> values = RandomValues<float>(1 << 20, rng);  // 4 MiB
  ASSERT_OK_AND_ASSIGN(Array keep, client.Upload<float>(values, {1 << 20}, {OnDevice(1, 0)}));

  // 80 MiB on one device: over the 64 MiB limit before anything is launched.
  auto big = client.Create({20 << 20}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)});
  ASSERT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted) << big.status();
  EXPECT_NE(big.status().message().find(
                "device 0: allocating 83886080 bytes would exceed the memory limit"),
            std::string::npos)
      << big.status();
  // The first chunk fits, the second does not: the first must be released too.
  auto split = client.Create({2, 12 << 20}, v1::DTYPE_FLOAT32,
                             {MakeIndexMap({MakeChunk(0, {SliceSpec{0, 1}, SliceSpec{}}),
                                            MakeChunk(0, {SliceSpec{1, 2}, SliceSpec{}})})});
  ASSERT_EQ(split.status().code(), absl::StatusCode::kResourceExhausted) << split.status();
  // Too large to upload: rejected at the header, before the bytes.
  v1::UploadHeader header;
  header.mutable_new_array()->mutable_shape()->add_dims(40 << 20);
  header.mutable_new_array()->set_dtype(v1::DTYPE_FLOAT32);
  *header.mutable_new_array()->mutable_index_map() = OnDevice(1, 0);
  std::vector<float> too_big(40 << 20, 1.0f);
  auto upload = client.UploadBytes(header, too_big.data(), too_big.size() * sizeof(float));
  EXPECT_EQ(upload.status().code(), absl::StatusCode::kResourceExhausted) << upload.status();

  // Still serving, the kept array intact, and nothing leaked.
  ASSERT_OK_AND_ASSIGN(std::vector<float> back, keep.Download<float>());
  EXPECT_TRUE(back == values);
  ASSERT_OK(client.Synchronize());
  // One chunk: its bytes plus the daemon's bookkeeping for one allocation.
  EXPECT_EQ(UsedBytes(client),
            baseline + int64_t{4 << 20} + info_at_start.limits().allocation_overhead_bytes());

  // Work a little, delete everything: device memory returns to the baseline.
  {
    ASSERT_OK_AND_ASSIGN(auto info, client.ServerInfo());
    std::vector<int> all;
    for (const auto& d : info.devices()) all.push_back(d.id());
    ASSERT_OK_AND_ASSIGN(Array moved, keep.Reshard(Split(1, 0, 1 << 20, all)));
    ASSERT_OK_AND_ASSIGN(Array sum, moved + keep);
    ASSERT_OK_AND_ASSIGN(std::vector<float> s, sum.Download<float>());
    EXPECT_EQ(s[17], values[17] * 2);
  }
  ASSERT_OK(keep.Delete());
  ASSERT_OK(client.Synchronize());
  EXPECT_EQ(UsedBytes(client), baseline);
  EXPECT_TRUE(daemon->alive());
}

// A sort whose buffers do not fit: argsort along axis 0 of a (5, 2^20) float32 array (20 MiB)
// gathers the lines into a 20 MiB copy, enqueues that work, then asks for 40 MiB of positions
// past the 64 MiB limit. RESOURCE_EXHAUSTED, everything it allocated freed, the source intact,
// and a sort that fits runs after it.
TEST_P(MemoryLimitTest, SortPastTheLimitIsResourceExhaustedAndFreesWhatItAllocated) {
  Daemon::Options options = OptionsFor(GetParam());
  options.memory_limit = "64MiB";
  std::unique_ptr<Daemon> daemon;
  ASSERT_NO_FATAL_FAILURE(StartOwnDaemon(GetParam(), options, daemon));
  if (IsSkipped()) return;
  ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon->address()));
  std::mt19937_64 rng(13);
  const int64_t columns = 1 << 20;
  const std::vector<float> values = RandomValues<float>(5 * columns, rng);
  ASSERT_OK_AND_ASSIGN(Array source, client.Upload<float>(values, {5, columns}, {OnDevice(2, 0)}));
  ASSERT_OK(client.Synchronize());
  const int64_t with_source = UsedBytes(client);

  absl::StatusOr<Array> positions = Argsort(source, /*axis=*/0);
  ASSERT_EQ(positions.status().code(), absl::StatusCode::kResourceExhausted) << positions.status();
  EXPECT_NE(positions.status().message().find("memory limit"), std::string::npos)
      << positions.status();
  ASSERT_OK(client.Synchronize());
  EXPECT_EQ(UsedBytes(client), with_source);
  ASSERT_OK_AND_ASSIGN(std::vector<float> back, source.Download<float>());
  EXPECT_TRUE(back == values);

  // One row of it sorts: the daemon serves on.
  ASSERT_OK_AND_ASSIGN(Array row, GetItem(source, {Index(int64_t{3})}));
  ASSERT_OK_AND_ASSIGN(Array sorted, Sort(row));
  ASSERT_OK_AND_ASSIGN(std::vector<float> got, sorted.Download<float>());
  std::vector<float> want(values.begin() + 3 * columns, values.begin() + 4 * columns);
  std::sort(want.begin(), want.end());
  EXPECT_TRUE(got == want);
  EXPECT_TRUE(daemon->alive());
}

INSTANTIATE_TEST_SUITE_P(Backends, MemoryLimitTest, ::testing::Values("host", "cuda", "cuda_nccl"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace distarray::testing
