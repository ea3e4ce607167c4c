// Writes the seed corpus of request_fuzzer into a directory: small valid cases that reach every
// request type, and the extreme slices, shapes, names and enum values that once crashed the
// daemon or answered the wrong code. scripts/fuzz.sh runs it before every fuzzing run, so the
// seeds live here as code rather than as committed binaries.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_case.pb.h"

namespace distarray::fuzz {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

struct S {  // a slice; unset fields are left unset
  std::optional<int64_t> start, stop, step;
};

v1::Slice ToSlice(const S& s) {
  v1::Slice slice;
  if (s.start) slice.set_start(*s.start);
  if (s.stop) slice.set_stop(*s.stop);
  if (s.step) slice.set_step(*s.step);
  return slice;
}

v1::Chunk MakeChunk(int device, const std::vector<S>& slices) {
  v1::Chunk chunk;
  chunk.set_device(device);
  for (const S& s : slices) *chunk.add_slices() = ToSlice(s);
  return chunk;
}

// Splits the first axis of `shape` into `devices` row blocks, one per device.
v1::IndexMap RowBlocks(const std::vector<int64_t>& shape, int devices) {
  v1::IndexMap map;
  const int64_t rows = shape[0];
  for (int d = 0; d < devices; ++d) {
    // In 128 bits: the overflowing-shape seeds have rows near 2^63.
    const auto bound = [&](int i) { return static_cast<int64_t>(__int128{rows} * i / devices); };
    std::vector<S> slices = {S{bound(d), bound(d + 1), std::nullopt}};
    for (size_t i = 1; i < shape.size(); ++i) slices.push_back(S{});
    *map.add_chunks() = MakeChunk(d, slices);
  }
  return map;
}

// Every device holds the whole array.
v1::IndexMap Replicated(const std::vector<int64_t>& shape, int devices) {
  v1::IndexMap map;
  for (int d = 0; d < devices; ++d) *map.add_chunks() = MakeChunk(d, std::vector<S>(shape.size()));
  return map;
}

v1::ArraySpec Spec(const std::vector<int64_t>& shape, v1::DType dtype, const v1::IndexMap& map,
                   v1::Mode mode = v1::MODE_REPLICA, const std::string& name = "") {
  v1::ArraySpec spec;
  for (int64_t d : shape) spec.mutable_shape()->add_dims(d);
  spec.set_dtype(dtype);
  *spec.mutable_index_map() = map;
  spec.set_mode(mode);
  spec.set_name(name);
  return spec;
}

v1::Region Region(const std::vector<S>& slices) {
  v1::Region region;
  for (const S& s : slices) *region.add_slices() = ToSlice(s);
  return region;
}

class Case {
 public:
  v1::CreateArrayRequest& Create(const v1::ArraySpec& spec) {
    auto* create = Add().mutable_create();
    *create->mutable_spec() = spec;
    return *create;
  }
  Upload& UploadNew(const v1::ArraySpec& spec) {
    auto* upload = Add().mutable_upload();
    *upload->mutable_header()->mutable_new_array() = spec;
    return *upload;
  }
  Upload& UploadInto(uint32_t from, const v1::Region& region) {
    Action& action = Add();
    action.set_handle_from(from);
    auto* upload = action.mutable_upload();
    upload->mutable_header()->set_handle("placeholder");
    *upload->mutable_header()->mutable_region() = region;
    return *upload;
  }
  Download& DownloadFrom(uint32_t from, const v1::Region& region = {}) {
    Action& action = Add();
    action.set_handle_from(from);
    auto* download = action.mutable_download();
    *download->mutable_request()->mutable_region() = region;
    return *download;
  }
  void Describe(uint32_t from) {
    Action& action = Add();
    action.set_handle_from(from);
    action.mutable_describe();
  }
  void DescribeName(const std::string& name) { Add().mutable_describe()->set_handle(name); }
  void List(int page_size = 0) { Add().mutable_list()->set_page_size(page_size); }
  void Delete(uint32_t from) {
    Action& action = Add();
    action.set_handle_from(from);
    action.mutable_delete_();
  }
  v1::ReshardRequest& Reshard(uint32_t from) {
    Action& action = Add();
    action.set_handle_from(from);
    return *action.mutable_reshard();
  }
  void ChangeMode(uint32_t from, v1::Mode mode, bool in_place = false) {
    Action& action = Add();
    action.set_handle_from(from);
    action.mutable_change_mode()->set_mode(mode);
    action.mutable_change_mode()->set_in_place(in_place);
  }
  v1::ElementwiseRequest& Binary(v1::ElementwiseOp op, uint32_t a, uint32_t b) {
    Action& action = Add();
    action.add_operands_from(a);
    action.add_operands_from(b);
    auto* request = action.mutable_elementwise();
    request->mutable_spec()->set_op(op);
    request->mutable_spec()->add_operands()->set_handle("a");
    request->mutable_spec()->add_operands()->set_handle("b");
    return *request;
  }
  v1::ElementwiseRequest& WithScalar(v1::ElementwiseOp op, uint32_t a, const v1::Scalar& s) {
    Action& action = Add();
    action.add_operands_from(a);
    auto* request = action.mutable_elementwise();
    request->mutable_spec()->set_op(op);
    request->mutable_spec()->add_operands()->set_handle("a");
    *request->mutable_spec()->add_operands()->mutable_scalar() = s;
    return *request;
  }
  v1::ElementwiseRequest& Unary(v1::ElementwiseOp op, uint32_t a) {
    Action& action = Add();
    action.add_operands_from(a);
    auto* request = action.mutable_elementwise();
    request->mutable_spec()->set_op(op);
    request->mutable_spec()->add_operands()->set_handle("a");
    return *request;
  }
  v1::ReduceRequest& Reduce(v1::ReduceOp op, uint32_t from, const std::vector<int32_t>& axes) {
    Action& action = Add();
    action.set_handle_from(from);
    auto* request = action.mutable_reduce();
    request->mutable_spec()->set_op(op);
    request->mutable_spec()->mutable_operand()->set_handle("a");
    for (int32_t axis : axes) request->mutable_spec()->add_axes(axis);
    return *request;
  }
  v1::MatmulRequest& Matmul(uint32_t a, uint32_t b) {
    Action& action = Add();
    action.add_operands_from(a);
    action.add_operands_from(b);
    auto* request = action.mutable_matmul();
    request->mutable_spec()->mutable_a()->set_handle("a");
    request->mutable_spec()->mutable_b()->set_handle("b");
    return *request;
  }
  // b < 0: no b.
  v1::LinalgOpSpec& Linalg(v1::LinalgOp op, uint32_t a, int b = -1) {
    Action& action = Add();
    action.add_operands_from(a);
    auto* spec = action.mutable_linalg()->mutable_spec();
    spec->set_op(op);
    spec->mutable_a()->set_handle("a");
    if (b >= 0) {
      action.add_operands_from(static_cast<uint32_t>(b));
      spec->mutable_b()->set_handle("b");
    }
    return *spec;
  }
  // A 4 x 4 CSR matrix whose parts are arrays indptr, indices and data, in row blocks over two
  // devices.
  static v1::CsrMatrix Csr() {
    v1::CsrMatrix matrix;
    matrix.mutable_indptr()->set_handle("indptr");
    matrix.mutable_indices()->set_handle("indices");
    matrix.mutable_data()->set_handle("data");
    matrix.mutable_shape()->add_dims(4);
    matrix.mutable_shape()->add_dims(4);
    *matrix.mutable_blocks() = RowBlocks({4, 4}, 2);
    return matrix;
  }
  // sparse_a @ b, the parts from arrays `parts` (indptr, indices, data) and b from `b`.
  v1::MatmulRequest& SparseMatmul(const std::vector<uint32_t>& parts, uint32_t b) {
    Action& action = Add();
    for (uint32_t from : parts) action.add_operands_from(from);
    action.add_operands_from(b);
    auto* request = action.mutable_matmul();
    *request->mutable_spec()->mutable_sparse_a() = Csr();
    request->mutable_spec()->mutable_b()->set_handle("b");
    return *request;
  }
  v1::SparseRequest& Sparse(const std::vector<uint32_t>& parts, bool transpose) {
    Action& action = Add();
    for (uint32_t from : parts) action.add_operands_from(from);
    auto* request = action.mutable_sparse();
    *(transpose ? request->mutable_spec()->mutable_transpose()
                : request->mutable_spec()->mutable_to_dense()) = Csr();
    return *request;
  }
  v1::ManipulationSpec& Manipulate(const std::vector<uint32_t>& from) {
    Action& action = Add();
    for (uint32_t f : from) action.add_operands_from(f);
    return *action.mutable_manipulate()->mutable_spec();
  }
  void Synchronize(const std::vector<uint32_t>& from, const std::vector<std::string>& handles) {
    Action& action = Add();
    for (uint32_t f : from) action.add_operands_from(f);
    auto* sync = action.mutable_synchronize();
    for (const std::string& h : handles) sync->add_handles(h);
  }

  v1::RunGraphRequest& RunGraph(const v1::Program& program, const std::vector<uint32_t>& from) {
    Action& action = Add();
    for (uint32_t f : from) action.add_operands_from(f);
    *action.mutable_run_graph()->mutable_program() = program;
    return *action.mutable_run_graph();
  }
  void RunRegistered(uint32_t program, const std::string& input, uint32_t from) {
    Action& action = Add();
    action.set_handle_from(program);
    action.mutable_run_graph()->set_program_id("prog");
    (*action.mutable_run_graph()->mutable_arguments())[input] = "a";
    action.add_operands_from(from);
  }
  void Register(const v1::Program& program) {
    *Add().mutable_register_program()->mutable_program() = program;
  }
  void KeepAlive() { Add().mutable_keep_alive(); }
  void EndSession() { Add().mutable_end_session(); }
  void Sweep() { Add().set_sweep_sessions(true); }
  // Sets the session, or the cancellation point, of the last action.
  void SetSession(uint32_t session) { Last().set_session(session); }
  void SetCancelAt(uint32_t check) { Last().set_cancel_at_check(check); }
  // A shared-memory segment of the action's session (the fuzzer's table makes it).
  void CreateSegment(int64_t bytes) { Add().mutable_create_shared_memory()->set_bytes(bytes); }
  // Releases the segment number `from` among those the case made.
  void ReleaseSegment(uint32_t from) {
    Action& action = Add();
    action.set_handle_from(from);
    action.mutable_release_shared_memory();
  }
  // Shared-memory transfers through the case's last segment (the range names none).
  v1::UploadFromSharedMemoryRequest& UploadFromSegment(const v1::ArraySpec& spec, int64_t offset,
                                                       int64_t bytes) {
    auto* request = Add().mutable_upload_from_shared_memory();
    *request->mutable_header()->mutable_new_array() = spec;
    *request->mutable_source() = SegmentRange(offset, bytes);
    return *request;
  }
  v1::DownloadToSharedMemoryRequest& DownloadToSegment(uint32_t from, int64_t offset,
                                                       int64_t bytes) {
    Action& action = Add();
    action.set_handle_from(from);
    auto* request = action.mutable_download_to_shared_memory();
    request->set_handle("placeholder");
    *request->mutable_destination() = SegmentRange(offset, bytes);
    return *request;
  }
  void SetHandleFrom(uint32_t from) { Last().set_handle_from(from); }

  const FuzzCase& proto() const { return case_; }

 private:
  Action& Add() { return *case_.add_actions(); }
  static v1::SharedMemoryRange SegmentRange(int64_t offset, int64_t bytes) {
    v1::SharedMemoryRange range;
    range.set_segment_bytes(1 << 20);
    range.set_offset(offset);
    range.set_bytes(bytes);
    return range;
  }
  Action& Last() { return *case_.mutable_actions(case_.actions_size() - 1); }
  FuzzCase case_;
};

v1::Scalar FloatScalar(double v) {
  v1::Scalar s;
  s.set_float_value(v);
  return s;
}

std::vector<std::pair<std::string, Case>> Seeds() {
  std::vector<std::pair<std::string, Case>> seeds;
  auto add = [&](const std::string& name) -> Case& {
    return seeds.emplace_back(name, Case()).second;
  };
  const v1::DType kF32 = v1::DTYPE_FLOAT32;

  {
    Case& c = add("create_download_rows");
    c.Create(Spec({8, 8}, kF32, RowBlocks({8, 8}, 4)))
        .mutable_fill()
        ->mutable_arange()
        ->set_step(1);
    c.DownloadFrom(0);
    c.DownloadFrom(0, Region({S{1, 7, 2}, S{}}));
  }
  {
    // Zero-size arrays: no chunks (an empty map), or chunks whose boxes hold no element, through
    // the ops that plan around them (reduce over no element, sort, searchsorted, get_item).
    Case& c = add("zero_size");
    c.Create(Spec({0, 4}, kF32, v1::IndexMap()));
    c.Create(Spec({3, 0}, kF32, RowBlocks({3, 0}, 2)));
    c.Create(Spec({5}, kF32, RowBlocks({5}, 2))).mutable_fill()->mutable_uniform();
    c.Reduce(v1::REDUCE_OP_SUM, 0, {0});
    c.Reduce(v1::REDUCE_OP_MAX, 1, {1});
    c.Manipulate({0}).mutable_sort()->set_axis(0);
    c.Manipulate({2, 0}).mutable_search_sorted()->set_right(true);
    c.DownloadFrom(0);
    c.DownloadFrom(1);
  }
  {
    Case& c = add("describe_list_delete");
    c.Create(Spec({16}, v1::DTYPE_INT32, Replicated({16}, 2), v1::MODE_REPLICA, "named-1"));
    c.Create(Spec({3, 5}, v1::DTYPE_UINT8, RowBlocks({3, 5}, 3)));
    c.Describe(0);
    c.DescribeName("named-1");
    c.List();
    c.List(1);
    c.Delete(0);
    c.Describe(0);
    c.Delete(0);
  }
  {
    Case& c = add("upload_new_negative_region");
    Upload& u = c.UploadNew(Spec({4, 4}, v1::DTYPE_FLOAT64, RowBlocks({4, 4}, 2)));
    u.add_pieces(std::string(40, '\x11'));
    u.set_pad(true);
    c.DownloadFrom(0, Region({S{std::nullopt, std::nullopt, -2}, S{1, 3, std::nullopt}}));
    c.DownloadFrom(0, Region({S{-1, 0, -3}, S{std::nullopt, std::nullopt, -1}}));
  }
  {
    Case& c = add("upload_into_region");
    c.Create(Spec({6, 7}, v1::DTYPE_INT16, RowBlocks({6, 7}, 4)));
    Upload& u = c.UploadInto(0, Region({S{std::nullopt, std::nullopt, -2}, S{2, 7, std::nullopt}}));
    u.add_pieces(std::string(10, 'a'));
    u.add_pieces(std::string(20, 'b'));
    c.DownloadFrom(0);
  }
  {
    Case& c = add("upload_abandoned_and_oversized");
    Upload& a = c.UploadNew(Spec({1024, 64}, v1::DTYPE_INT64, RowBlocks({1024, 64}, 4)));
    a.add_pieces(std::string(4096, 'x'));
    a.set_abandon(true);
    Upload& b = c.UploadNew(Spec({2, 2}, v1::DTYPE_INT8, Replicated({2, 2}, 4)));
    b.add_pieces(std::string(5, 'y'));
    Upload& d = c.UploadNew(Spec({2, 2}, v1::DTYPE_INT8, Replicated({2, 2}, 4)));
    d.add_pieces(std::string(3, 'z'));
  }
  {
    Case& c = add("download_small_pieces_cancelled");
    c.Create(Spec({64, 3}, v1::DTYPE_UINT16, RowBlocks({64, 3}, 4)))
        .mutable_fill()
        ->mutable_uniform()
        ->set_high(100);
    Download& d = c.DownloadFrom(0);
    d.mutable_request()->set_max_message_bytes(7);
    d.set_cancel_after_pieces(2);
  }
  {
    // A 20 MiB download, more than one 16 MiB slab, cancelled part-way: the host buffers must
    // outlive the device reads still queued into them. The array is sparse (SUM mode, one small
    // chunk), so its logical size costs no device memory.
    Case& c = add("download_large_cancelled");
    v1::IndexMap map;
    *map.add_chunks() = MakeChunk(1, {S{0, 1, std::nullopt}, S{0, 4096, std::nullopt}});
    c.Create(Spec({5, 1 << 20}, kF32, map, v1::MODE_SUM)).mutable_fill()->mutable_ones();
    c.DownloadFrom(0).set_cancel_after_pieces(3);
    c.DownloadFrom(0).set_cancel_after_pieces(18);
  }
  {
    Case& c = add("reshard_in_place_and_mode");
    c.Create(Spec({10, 10}, kF32, RowBlocks({10, 10}, 4)))
        .mutable_fill()
        ->mutable_arange()
        ->set_step(0.5);
    v1::ReshardRequest& r = c.Reshard(0);
    v1::IndexMap map;
    *map.add_chunks() = MakeChunk(3, {S{0, 10, std::nullopt}, S{0, 5, std::nullopt}});
    *map.add_chunks() = MakeChunk(1, {S{}, S{3, 10, std::nullopt}});
    *r.mutable_index_map() = map;
    r.set_in_place(true);
    v1::ReshardRequest& m = c.Reshard(0);
    m.set_mode(v1::MODE_SUM);
    c.DownloadFrom(1);
  }
  {
    Case& c = add("nan_in_max_then_replica");
    c.Create(Spec({8}, v1::DTYPE_FLOAT64, Replicated({8}, 3), v1::MODE_MAX))
        .mutable_fill()
        ->mutable_full()
        ->mutable_value()
        ->set_float_value(std::numeric_limits<double>::quiet_NaN());
    c.ChangeMode(0, v1::MODE_REPLICA);
    c.ChangeMode(0, v1::MODE_MIN, true);
    c.DownloadFrom(1);
  }
  {
    Case& c = add("elementwise_binary");
    c.Create(Spec({12, 4}, kF32, RowBlocks({12, 4}, 4))).mutable_fill()->mutable_ones();
    c.Create(Spec({12, 4}, kF32, RowBlocks({12, 4}, 3)))
        .mutable_fill()
        ->mutable_arange()
        ->set_step(1);
    c.Binary(v1::ELEMENTWISE_OP_ADD, 0, 1).set_result_name("sum");
    c.Binary(v1::ELEMENTWISE_OP_DIVIDE, 2, 0);
    c.Binary(v1::ELEMENTWISE_OP_LESS, 1, 0);
    c.DownloadFrom(3);
  }
  {
    // complex arrays and scalars: a complex fill, a complex scalar lifting a float32 array, a
    // SUM-mode complex array combined, a MAX mode (NumPy's order), and a function and a
    // comparison of complex values.
    Case& c = add("complex_scalars_and_modes");
    v1::Scalar w;
    w.mutable_complex_value()->set_real(0.5);
    w.mutable_complex_value()->set_imag(-2);
    *c.Create(Spec({6, 4}, v1::DTYPE_COMPLEX64, RowBlocks({6, 4}, 3)))
         .mutable_fill()
         ->mutable_full()
         ->mutable_value() = w;
    c.Create(Spec({6, 4}, kF32, RowBlocks({6, 4}, 2)))
        .mutable_fill()
        ->mutable_arange()
        ->set_step(1);
    c.WithScalar(v1::ELEMENTWISE_OP_MULTIPLY, 1, w);
    c.Binary(v1::ELEMENTWISE_OP_DIVIDE, 0, 1);
    c.ChangeMode(0, v1::MODE_SUM);
    c.ChangeMode(0, v1::MODE_MAX);
    c.Unary(v1::ELEMENTWISE_OP_ARCCOS, 0);
    c.Binary(v1::ELEMENTWISE_OP_GREATER_EQUAL, 2, 0);
    c.DownloadFrom(0);
  }
  {
    Case& c = add("elementwise_scalar_unary");
    c.Create(Spec({5, 5}, v1::DTYPE_INT32, RowBlocks({5, 5}, 2)))
        .mutable_fill()
        ->mutable_arange()
        ->set_step(3);
    c.WithScalar(v1::ELEMENTWISE_OP_MULTIPLY, 0, FloatScalar(2.0));
    c.WithScalar(v1::ELEMENTWISE_OP_POWER, 0, FloatScalar(0.5));
    v1::Scalar big;
    big.set_int_value(std::numeric_limits<int64_t>::min());
    c.WithScalar(v1::ELEMENTWISE_OP_SUBTRACT, 0, big);
    c.Unary(v1::ELEMENTWISE_OP_NEGATIVE, 0);
    c.Unary(v1::ELEMENTWISE_OP_SQRT, 0);
    c.DownloadFrom(1);
  }
  {
    Case& c = add("synchronize");
    c.Create(Spec({4}, v1::DTYPE_BOOL, Replicated({4}, 4)));
    c.Synchronize({0}, {});
    c.Synchronize({0}, {"arr-0123456789abcdef"});
    c.Synchronize({}, {});
  }
  {
    // 0:5:(2^63-3) on an axis of length 5 once normalized to stop 7.
    Case& c = add("extreme_chunk_step");
    v1::IndexMap map;
    *map.add_chunks() = MakeChunk(0, {S{0, 5, kMax - 2}});
    c.Create(Spec({5}, v1::DTYPE_INT8, map));
    Upload& u = c.UploadNew(Spec({5}, v1::DTYPE_INT8, map));
    u.set_pad(true);
    c.DownloadFrom(0);
  }
  {
    // 1:-6:-(2^63-1) once normalized to start -1.
    Case& c = add("extreme_reshard_step");
    c.Create(Spec({5}, v1::DTYPE_INT32, RowBlocks({5}, 2)));
    v1::IndexMap map;
    *map.add_chunks() = MakeChunk(1, {S{1, -6, -kMax}});
    *c.Reshard(0).mutable_index_map() = map;
    *c.Reshard(0).mutable_index_map()->add_chunks() =
        MakeChunk(2, {S{kMax, std::numeric_limits<int64_t>::min(), -1}});
  }
  {
    // Row counts that wrap to zero once divided by zero.
    Case& c = add("extreme_region_step");
    c.Create(Spec({64, 2}, kF32, RowBlocks({64, 2}, 4)));
    c.DownloadFrom(0, Region({S{0, 64, kMax}, S{}}));
    c.DownloadFrom(0, Region({S{std::numeric_limits<int64_t>::min(), kMax, -kMax}, S{}}));
    c.UploadInto(0, Region({S{0, 64, kMax}, S{}})).set_pad(true);
    c.UploadInto(0, Region({S{63, std::nullopt, -kMax}, S{1, 2, std::nullopt}})).set_pad(true);
  }
  {
    Case& c = add("overflowing_shapes");
    c.Create(Spec({int64_t{1} << 62, 4}, kF32, RowBlocks({int64_t{1} << 62, 4}, 4)));
    c.Create(Spec({kMax, kMax}, v1::DTYPE_INT8, Replicated({kMax, kMax}, 1)));
    c.Create(Spec({-1, 3}, v1::DTYPE_INT8, Replicated({-1, 3}, 1)));
    c.UploadNew(Spec({int64_t{1} << 40, 1 << 20}, v1::DTYPE_FLOAT64, Replicated({2, 2}, 1)));
    // One byte of a [1, 2^30] int8 array.
    v1::IndexMap map;
    *map.add_chunks() = MakeChunk(0, {S{}, S{0, 1, std::nullopt}});
    c.Create(Spec({1, 1 << 30}, v1::DTYPE_INT8, map));
    c.DownloadFrom(0);
  }
  {
    Case& c = add("many_chunks");
    v1::IndexMap map;
    for (int i = 0; i < 512; ++i) *map.add_chunks() = MakeChunk(i % 4, {S{i, i + 1, std::nullopt}});
    c.Create(Spec({512}, v1::DTYPE_UINT32, map, v1::MODE_SUM)).mutable_fill()->mutable_ones();
    v1::IndexMap blocks = RowBlocks({512}, 4);
    *c.Reshard(0).mutable_index_map() = blocks;
    c.DownloadFrom(1, Region({S{std::nullopt, std::nullopt, -3}}));
  }
  {
    Case& c = add("unknown_enums");
    c.Create(Spec({4}, static_cast<v1::DType>(99), Replicated({4}, 1)));
    c.Create(Spec({4}, v1::DTYPE_FLOAT16, Replicated({4}, 1)));
    c.Create(Spec({4}, kF32, Replicated({4}, 1), static_cast<v1::Mode>(42)));
    c.Create(Spec({4}, kF32, Replicated({4}, 1)));
    c.ChangeMode(0, static_cast<v1::Mode>(-1));
    c.Reshard(0).set_mode(static_cast<v1::Mode>(7));
    c.Unary(static_cast<v1::ElementwiseOp>(77), 0);
    c.Binary(v1::ELEMENTWISE_OP_UNSPECIFIED, 0, 0);
  }
  {
    // Invalid UTF-8 cannot reach the engine: a proto3 string that is not UTF-8 fails to parse.
    Case& c = add("names");
    c.Create(Spec({2}, kF32, Replicated({2}, 1), v1::MODE_REPLICA, std::string(300, 'n')));
    c.Create(Spec({2}, kF32, Replicated({2}, 1), v1::MODE_REPLICA, "odd\u202e\u540d\x01\n"));
    c.Create(Spec({2}, kF32, Replicated({2}, 1), v1::MODE_REPLICA, "arr-0123456789abcdef"));
    c.Create(Spec({2}, kF32, Replicated({2}, 1), v1::MODE_REPLICA, "twice"));
    c.Create(Spec({2}, kF32, Replicated({2}, 1), v1::MODE_REPLICA, "twice"));
    c.UploadNew(Spec({2}, kF32, Replicated({2}, 1), v1::MODE_REPLICA, "twice")).set_pad(true);
    c.DescribeName(std::string(5000, 'q'));
    c.DescribeName("");
  }
  {
    Case& c = add("every_dtype");
    for (int t = v1::DTYPE_BOOL; t <= v1::DTYPE_COMPLEX128; ++t) {
      auto& create = c.Create(Spec({3, 2}, static_cast<v1::DType>(t), RowBlocks({3, 2}, 3)));
      create.mutable_fill()->mutable_uniform()->set_low(0);
      create.mutable_fill()->mutable_uniform()->set_high(2);
    }
  }
  {
    Case& c = add("scalar_ranges");
    v1::Scalar two63 = FloatScalar(9223372036854775808.0);
    v1::Scalar two64 = FloatScalar(18446744073709551616.0);
    c.Create(Spec({2}, v1::DTYPE_INT64, Replicated({2}, 1)))
        .mutable_fill()
        ->mutable_full()
        ->mutable_value()
        ->CopyFrom(two63);
    c.Create(Spec({2}, v1::DTYPE_UINT64, Replicated({2}, 1)))
        .mutable_fill()
        ->mutable_full()
        ->mutable_value()
        ->CopyFrom(two64);
    c.Create(Spec({2}, v1::DTYPE_UINT8, Replicated({2}, 1)))
        .mutable_fill()
        ->mutable_full()
        ->mutable_value()
        ->set_int_value(256);
    c.Create(Spec({2}, v1::DTYPE_INT8, Replicated({2}, 1)));
    c.WithScalar(v1::ELEMENTWISE_OP_ADD, 0, two63);
    v1::Scalar u;
    u.set_uint_value(std::numeric_limits<uint64_t>::max());
    c.WithScalar(v1::ELEMENTWISE_OP_ADD, 0, u);
  }
  {
    Case& c = add("sessions");
    // An unnamed array of session 1 goes with the sweep; the named one stays.
    c.Create(Spec({4}, kF32, Replicated({4}, 2)));
    c.SetSession(1);
    c.Create(Spec({4}, kF32, Replicated({4}, 2), v1::MODE_REPLICA, "kept"));
    c.SetSession(1);
    c.KeepAlive();
    c.SetSession(1);
    c.List(1);
    c.Sweep();
    c.List();
    c.Describe(0);
  }
  {
    Case& c = add("end_session");
    // Session 2's unnamed array goes when it ends its session; session 1's stays.
    c.Create(Spec({4}, kF32, Replicated({4}, 2)));
    c.SetSession(1);
    c.Create(Spec({4}, kF32, Replicated({4}, 2)));
    c.SetSession(2);
    c.EndSession();
    c.SetSession(2);
    c.EndSession();  // ending it again finds nothing
    c.SetSession(2);
    c.List();
    c.Describe(0);
  }
  {
    // The ufunc table's other fields: broadcasting, mixed dtypes, where, astype, out=.
    Case& c = add("ufuncs_broadcast_out");
    c.Create(Spec({6, 4}, kF32, RowBlocks({6, 4}, 3)))
        .mutable_fill()
        ->mutable_arange()
        ->set_step(1);
    c.Create(Spec({4}, v1::DTYPE_INT32, Replicated({4}, 2))).mutable_fill()->mutable_ones();
    c.Binary(v1::ELEMENTWISE_OP_HYPOT, 0, 1);
    c.Binary(v1::ELEMENTWISE_OP_FLOOR_DIVIDE, 1, 1);
    // The ops added after the first table: nextafter (float32, and int32 computing in float64),
    // signbit, the inverse hyperbolics.
    c.Binary(v1::ELEMENTWISE_OP_NEXTAFTER, 0, 1);
    c.Unary(v1::ELEMENTWISE_OP_SIGNBIT, 1);
    c.Unary(v1::ELEMENTWISE_OP_ARCSINH, 0);
    c.Unary(v1::ELEMENTWISE_OP_ARCCOSH, 0);
    c.Unary(v1::ELEMENTWISE_OP_ARCTANH, 1);
    c.Unary(v1::ELEMENTWISE_OP_ASTYPE, 0).mutable_spec()->set_dtype(v1::DTYPE_UINT8);
    c.Binary(v1::ELEMENTWISE_OP_ADD, 0, 0);
    c.SetHandleFrom(0);  // out = array 0
    c.Binary(v1::ELEMENTWISE_OP_WHERE, 1, 0)
        .mutable_spec()
        ->add_operands()
        ->mutable_scalar()
        ->set_float_value(-1);
    c.DownloadFrom(2);
  }
  {
    // Indexing and shapes: a[1:-1:2, None, ::-1], a[..., 0] = b, a.T, reshape, concat, stack.
    Case& c = add("manipulate");
    c.Create(Spec({6, 4}, kF32, RowBlocks({6, 4}, 3))).mutable_fill()->mutable_uniform();
    c.Create(Spec({6}, kF32, Replicated({6}, 2))).mutable_fill()->mutable_ones();
    // The generated fills, so mutations reach their fields too.
    c.Create(Spec({6, 4}, kF32, RowBlocks({6, 4}, 3)))
        .mutable_fill()
        ->mutable_normal()
        ->set_stddev(2);
    c.Create(Spec({6}, kF32, Replicated({6}, 2))).mutable_fill()->mutable_linspace()->set_stop(1);
    c.Create(Spec({6, 4}, kF32, RowBlocks({6, 4}, 3))).mutable_fill()->mutable_eye()->set_k(-1);
    c.Create(Spec({6, 4}, kF32, RowBlocks({6, 4}, 3))).mutable_fill()->mutable_tri()->set_k(1);
    v1::Fill::Integers* draws =
        c.Create(Spec({6}, v1::DTYPE_INT32, Replicated({6}, 2))).mutable_fill()->mutable_integers();
    draws->set_low(-3);
    draws->set_high(9);
    // a[idx] and a[idx] = b with the index an array held in the daemon (IndexItem.array: the
    // operand after the spec's own), here the draws (int32; a draw past the axis is OUT_OF_RANGE).
    c.Manipulate({0, 6}).mutable_get_item()->mutable_key()->add_items()->mutable_array();
    c.Manipulate({0, 2, 6}).mutable_set_item()->mutable_key()->add_items()->mutable_array();
    auto slice = [](v1::IndexKey* key, int64_t start, int64_t stop, int64_t step) {
      v1::Slice* s = key->add_items()->mutable_slice();
      s->set_start(start);
      s->set_stop(stop);
      s->set_step(step);
    };
    v1::IndexKey* key = c.Manipulate({0}).mutable_get_item()->mutable_key();
    slice(key, 1, -1, 2);
    key->add_items()->mutable_new_axis();
    key->add_items()->mutable_slice()->set_step(-1);
    v1::IndexItem::IndexList* list =
        c.Manipulate({0}).mutable_get_item()->mutable_key()->add_items()->mutable_indices();
    for (int64_t v : {5, 3, 1, 1, -2}) list->add_values(v);
    v1::SetItemSpec* set = c.Manipulate({0, 1}).mutable_set_item();
    set->mutable_key()->add_items()->mutable_ellipsis();
    set->mutable_key()->add_items()->set_index(-1);
    v1::PermuteDimsSpec* permute = c.Manipulate({0}).mutable_permute_dims();
    permute->add_axes(1);
    permute->add_axes(0);
    v1::ReshapeSpec* reshape = c.Manipulate({0}).mutable_reshape();
    reshape->mutable_shape()->add_dims(3);
    reshape->mutable_shape()->add_dims(-1);
    c.Manipulate({0, 2}).mutable_concat()->set_axis(0);
    v1::ConcatSpec* stack = c.Manipulate({1, 1}).mutable_concat();
    stack->set_stack(true);
    stack->set_axis(-1);
    v1::BroadcastToSpec* broadcast = c.Manipulate({1}).mutable_broadcast_to();
    broadcast->mutable_shape()->add_dims(3);
    broadcast->mutable_shape()->add_dims(6);
    c.Manipulate({0}).mutable_sort()->set_axis(0);
    v1::SortSpec* argsort = c.Manipulate({0}).mutable_sort();
    argsort->set_axis(-1);
    argsort->set_descending(true);
    argsort->set_indices(true);
    c.Manipulate({0, 1}).mutable_search_sorted()->set_right(true);
    c.DownloadFrom(3);
  }
  {
    // Scans whose chunks carry between devices (rows over 3 devices, scanned down the rows) and
    // whose lines are whole (along the columns); a product over the same chunks.
    Case& c = add("scan");
    c.Create(Spec({6, 4}, kF32, RowBlocks({6, 4}, 3))).mutable_fill()->mutable_uniform();
    c.Manipulate({0}).mutable_scan()->set_axis(0);
    v1::ScanSpec* product = c.Manipulate({0}).mutable_scan();
    product->set_axis(-1);
    product->set_product(true);
    c.DownloadFrom(1);
  }
  {
    Case& c = add("reduce_matmul");
    c.Create(Spec({6, 4}, kF32, RowBlocks({6, 4}, 3))).mutable_fill()->mutable_uniform();
    c.Create(Spec({4, 5}, kF32, Replicated({4, 5}, 2))).mutable_fill()->mutable_ones();
    c.Reduce(v1::REDUCE_OP_SUM, 0, {1});
    c.Reduce(v1::REDUCE_OP_ARGMAX, 0, {}).mutable_spec()->set_keepdims(true);
    c.Reduce(v1::REDUCE_OP_MEAN, 0, {0, -1}).mutable_spec()->set_combine(true);
    c.Reduce(v1::REDUCE_OP_MAX, 0, {7});
    c.Matmul(0, 1);
    c.Matmul(1, 0);
    c.DownloadFrom(2);
  }
  {
    // Symmetric products: a square matrix whole on one device (symv, symm), the same split
    // (the plain product), and a non-square one (refused).
    Case& c = add("symmetric_matmul");
    c.Create(Spec({6, 6}, kF32, Replicated({6, 6}, 1))).mutable_fill()->mutable_uniform();
    c.Create(Spec({6, 6}, kF32, RowBlocks({6, 6}, 2))).mutable_fill()->mutable_uniform();
    c.Create(Spec({6, 2}, kF32, Replicated({6, 2}, 1))).mutable_fill()->mutable_ones();
    c.Create(Spec({6, 4}, kF32, Replicated({6, 4}, 1))).mutable_fill()->mutable_ones();
    c.Matmul(0, 2).mutable_spec()->set_a_symmetric(true);
    c.Matmul(1, 2).mutable_spec()->set_a_symmetric(true);
    c.Matmul(3, 2).mutable_spec()->set_a_symmetric(true);
    c.DownloadFrom(4);
  }
  {
    // Dense linear algebra: every op on split square matrices and a stack, a wide matrix for
    // qr/svd, a singular one (zeros), a b of the wrong shape, b where the op takes none, an
    // unknown op (16 actions, the most a case holds).
    Case& c = add("linalg");
    c.Create(Spec({6, 6}, v1::DTYPE_FLOAT64, RowBlocks({6, 6}, 3)))
        .mutable_fill()
        ->mutable_uniform()
        ->set_high(1);
    c.Create(Spec({6, 2}, v1::DTYPE_FLOAT64, Replicated({6, 2}, 2))).mutable_fill()->mutable_ones();
    c.Create(Spec({3, 5}, kF32, RowBlocks({3, 5}, 2)))
        .mutable_fill()
        ->mutable_uniform()
        ->set_high(1);
    c.Create(Spec({2, 4, 4}, v1::DTYPE_COMPLEX64, RowBlocks({2, 4, 4}, 2)))
        .mutable_fill()
        ->mutable_uniform()
        ->set_high(1);
    c.Create(Spec({4, 4}, v1::DTYPE_FLOAT64, Replicated({4, 4}, 1)));  // zeros: singular
    c.Linalg(v1::LINALG_OP_SOLVE, 0, 1);
    c.Linalg(v1::LINALG_OP_INV, 3);
    c.Linalg(v1::LINALG_OP_CHOLESKY, 0).set_upper(true);
    c.Linalg(v1::LINALG_OP_QR, 2).set_full_matrices(true);
    c.Linalg(v1::LINALG_OP_EIGH, 3).set_compute_uv(true);
    v1::LinalgOpSpec& svd = c.Linalg(v1::LINALG_OP_SVD, 2);
    svd.set_compute_uv(true);
    svd.set_full_matrices(true);
    c.Linalg(v1::LINALG_OP_SLOGDET, 3);
    c.Linalg(v1::LINALG_OP_INV, 4);
    c.Linalg(v1::LINALG_OP_SOLVE, 2, 1);
    c.Linalg(v1::LINALG_OP_DET, 0, 1);
    c.Linalg(static_cast<v1::LinalgOp>(42), 0);
  }
  {
    // Linear algebra inside programs: solve and qr in a loop over split and replicated
    // operands, a singular matrix (zeros), targets that do not fit the op (one for qr, none, a
    // target set beside them) and an unknown op.
    Case& c = add("run_graph_linalg");
    c.Create(Spec({6, 6}, v1::DTYPE_FLOAT64, RowBlocks({6, 6}, 3)))
        .mutable_fill()
        ->mutable_uniform()
        ->set_high(1);
    c.Create(Spec({6}, v1::DTYPE_FLOAT64, Replicated({6}, 2))).mutable_fill()->mutable_ones();
    c.Create(Spec({6, 6}, v1::DTYPE_FLOAT64, Replicated({6, 6}, 1)));  // zeros: singular
    v1::Program program;
    program.add_inputs("a");
    program.add_inputs("b");
    v1::Statement* qr = program.add_statements();
    qr->mutable_linalg()->mutable_spec()->set_op(v1::LINALG_OP_QR);
    qr->mutable_linalg()->mutable_spec()->mutable_a()->set_variable("a");
    qr->mutable_linalg()->add_targets("q");
    qr->mutable_linalg()->add_targets("r");
    v1::WhileLoop* w = program.add_statements()->mutable_while_loop();
    v1::Statement* more = program.add_statements();
    more->set_target("more");
    more->mutable_reduce()->set_op(v1::REDUCE_OP_ALL);
    more->mutable_reduce()->mutable_operand()->set_variable("b");
    more->mutable_reduce()->set_combine(true);
    // The loop's condition before it: move the reduce ahead of the loop.
    program.mutable_statements()->SwapElements(1, 2);
    w->set_condition("more");
    w->set_max_iterations(3);
    v1::Statement* solve = w->add_body();
    solve->mutable_linalg()->mutable_spec()->set_op(v1::LINALG_OP_SOLVE);
    solve->mutable_linalg()->mutable_spec()->mutable_a()->set_variable("a");
    solve->mutable_linalg()->mutable_spec()->mutable_b()->set_variable("b");
    solve->mutable_linalg()->add_targets("b");
    program.add_outputs("b");
    program.add_outputs("r");
    c.RunGraph(program, {0, 1});
    c.RunGraph(program, {2, 1});
    v1::Program one_target = program;
    one_target.mutable_statements(0)->mutable_linalg()->mutable_targets()->RemoveLast();
    c.RunGraph(one_target, {0, 1});
    v1::Program with_target = program;
    with_target.mutable_statements(0)->set_target("x");
    c.RunGraph(with_target, {0, 1});
    v1::Program unknown = program;
    unknown.mutable_statements(0)->mutable_linalg()->mutable_spec()->set_op(
        static_cast<v1::LinalgOp>(42));
    c.RunGraph(unknown, {0, 1});
  }
  {
    // Create statements: a random draw in a split layout, a cumulative sum of it in a loop whose
    // body creates its own ones, and the same program with a fill its dtype cannot hold.
    Case& c = add("run_graph_create");
    c.Create(Spec({4}, v1::DTYPE_FLOAT32, Replicated({4}, 1))).mutable_fill()->mutable_ones();
    v1::Program program;
    v1::Statement* x = program.add_statements();
    x->set_target("x");
    x->mutable_create()->mutable_shape()->add_dims(12);
    x->mutable_create()->set_dtype(v1::DTYPE_FLOAT32);
    *x->mutable_create()->mutable_index_map() = RowBlocks({12}, 3);
    x->mutable_create()->mutable_fill()->mutable_normal()->set_stddev(1);
    v1::Statement* scan = program.add_statements();
    scan->set_target("y");
    scan->mutable_manipulate()->mutable_scan()->mutable_source()->set_variable("x");
    program.add_outputs("y");
    c.RunGraph(program, {});
    v1::Program wrong = program;
    wrong.mutable_statements(0)->mutable_create()->set_dtype(v1::DTYPE_INT8);
    wrong.mutable_statements(0)->mutable_create()->mutable_fill()->mutable_arange()->set_step(40);
    c.RunGraph(wrong, {});
  }
  {
    // Sparse matrices: parts made by fills (indptr's second block starts at 3, not 0: offsets
    // the kernels clamp), products with a vector and a matrix, the dense form, the transpose and
    // its product, parts in the wrong roles, a b of the wrong dtype, a request without an op.
    Case& c = add("sparse");
    c.Create(Spec({6}, v1::DTYPE_INT64, RowBlocks({6}, 2))).mutable_fill()->mutable_arange();
    c.Create(Spec({4}, v1::DTYPE_INT32, RowBlocks({4}, 2))).mutable_fill()->mutable_arange();
    c.Create(Spec({4}, v1::DTYPE_FLOAT64, RowBlocks({4}, 2))).mutable_fill()->mutable_uniform();
    c.Create(Spec({4}, v1::DTYPE_FLOAT64, Replicated({4}, 2))).mutable_fill()->mutable_ones();
    c.Create(Spec({4, 3}, v1::DTYPE_FLOAT64, RowBlocks({4, 3}, 2))).mutable_fill()->mutable_ones();
    c.SparseMatmul({0, 1, 2}, 3);
    c.SparseMatmul({0, 1, 2}, 4);
    c.Sparse({0, 1, 2}, /*transpose=*/false);
    c.Sparse({0, 1, 2}, /*transpose=*/true);
    c.SparseMatmul({1, 0, 2}, 3);                           // indices as indptr
    c.SparseMatmul({0, 1, 2}, 0);                           // an int64 b
    c.Sparse({0, 1, 2}, false).mutable_spec()->clear_op();  // no op
    c.DownloadFrom(5);
    c.DownloadFrom(7);
  }
  {
    // while all(a < 10): a = a + 1, then if any(a > 3): b = -a else b = a; value output.
    v1::Program loop;
    loop.add_inputs("a");
    auto statement = [](v1::Statement* s, const std::string& target, v1::ElementwiseOp op,
                        const std::string& x, double y) {
      s->set_target(target);
      s->mutable_elementwise()->set_op(op);
      s->mutable_elementwise()->add_operands()->set_variable(x);
      s->mutable_elementwise()->add_operands()->mutable_scalar()->set_float_value(y);
    };
    auto reduce = [](v1::Statement* s, const std::string& target, v1::ReduceOp op,
                     const std::string& x) {
      s->set_target(target);
      s->mutable_reduce()->set_op(op);
      s->mutable_reduce()->mutable_operand()->set_variable(x);
      s->mutable_reduce()->set_combine(true);
    };
    statement(loop.add_statements(), "lt", v1::ELEMENTWISE_OP_LESS, "a", 10);
    reduce(loop.add_statements(), "c", v1::REDUCE_OP_ALL, "lt");
    v1::WhileLoop* w = loop.add_statements()->mutable_while_loop();
    w->set_condition("c");
    w->set_max_iterations(20);
    statement(w->add_body(), "a", v1::ELEMENTWISE_OP_ADD, "a", 1);
    statement(w->add_body(), "lt", v1::ELEMENTWISE_OP_LESS, "a", 10);
    reduce(w->add_body(), "c", v1::REDUCE_OP_ALL, "lt");
    statement(loop.add_statements(), "gt", v1::ELEMENTWISE_OP_GREATER, "a", 3);
    reduce(loop.add_statements(), "p", v1::REDUCE_OP_ANY, "gt");
    statement(loop.add_statements(), "b", v1::ELEMENTWISE_OP_MULTIPLY, "a", 1);
    v1::IfElse* branch = loop.add_statements()->mutable_if_else();
    branch->set_condition("p");
    statement(branch->add_then_body(), "b", v1::ELEMENTWISE_OP_MULTIPLY, "a", -1);
    statement(branch->add_else_body(), "b", v1::ELEMENTWISE_OP_ADD, "a", 0);
    loop.add_outputs("b");
    loop.add_value_outputs("c");
    Case& c = add("run_graph");
    c.Create(Spec({8, 3}, kF32, RowBlocks({8, 3}, 2))).mutable_fill()->mutable_uniform();
    c.Create(Spec({8, 3}, kF32, Replicated({8, 3}, 1))).mutable_fill()->mutable_ones();
    c.RunGraph(loop, {0});
    c.RunGraph(loop, {1});
    c.Register(loop);
    c.RunRegistered(0, "a", 1);
    v1::Program bad = loop;
    bad.mutable_statements(2)->mutable_while_loop()->set_condition("lt");
    c.RunGraph(bad, {0});
    c.SetCancelAt(3);
    c.RunGraph(loop, {0});
    c.DownloadFrom(2);
  }
  {
    Case& c = add("shared_memory");
    // A segment of session 1, a round trip through it, then a misaligned range, a range of the
    // wrong size, one past the segment, and a bool upload of whatever bytes the segment holds;
    // the same segment from another session (not found), its release, and a use after it.
    c.CreateSegment(1 << 20);
    c.SetSession(1);
    c.UploadFromSegment(Spec({4, 4}, kF32, RowBlocks({4, 4}, 2)), 0, 64);
    c.SetSession(1);
    c.DownloadToSegment(0, 4096, 64);
    c.SetSession(1);
    c.DownloadToSegment(0, 4098, 64);
    c.SetSession(1);
    c.DownloadToSegment(0, 0, 60);
    c.SetSession(1);
    c.UploadFromSegment(Spec({4, 4}, kF32, Replicated({4, 4}, 1)), (1 << 20) - 32, 64);
    c.SetSession(1);
    c.UploadFromSegment(Spec({64}, v1::DTYPE_BOOL, Replicated({64}, 1)), 4096, 64);
    c.SetSession(1);
    c.DownloadToSegment(0, 0, 64);
    c.SetSession(2);
    c.ReleaseSegment(0);
    c.SetSession(1);
    c.DownloadToSegment(0, 0, 64);
    c.SetSession(1);
    c.DownloadFrom(0);
  }
  {
    Case& c = add("shared_memory_bounds");
    // Past the tenant's bytes, past its count, a negative size, no session; then the sweep
    // removes the session's segments and a transfer through one is not found.
    c.CreateSegment(int64_t{8} << 20);
    c.SetSession(1);
    for (int i = 0; i < 5; ++i) {
      c.CreateSegment(4096);
      c.SetSession(1);
    }
    c.CreateSegment(-1);
    c.SetSession(1);
    c.CreateSegment(4096);
    c.Create(Spec({4, 4}, kF32, RowBlocks({4, 4}, 2)));
    c.Sweep();
    c.DownloadToSegment(0, 0, 64);
    c.SetSession(1);
  }
  {
    Case& c = add("cancelled_calls");
    // Each call after the first is cancelled at its first, second or third check.
    c.Create(Spec({6, 6}, kF32, RowBlocks({6, 6}, 3))).mutable_fill()->mutable_ones();
    c.Create(Spec({6, 6}, kF32, RowBlocks({6, 6}, 2)));
    c.SetCancelAt(1);
    *c.Reshard(0).mutable_index_map() = RowBlocks({6, 6}, 4);
    c.SetCancelAt(2);
    c.Binary(v1::ELEMENTWISE_OP_ADD, 0, 0);
    c.SetCancelAt(3);
    c.UploadNew(Spec({2, 2}, v1::DTYPE_INT8, Replicated({2, 2}, 1))).set_pad(true);
    c.SetCancelAt(1);
    c.List();
  }
  return seeds;
}

}  // namespace
}  // namespace distarray::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  for (const auto& [name, c] : distarray::fuzz::Seeds()) {
    const std::string path = std::string(argv[1]) + "/" + name;
    std::ofstream out(path, std::ios::binary);
    if (!c.proto().SerializeToOstream(&out)) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return 1;
    }
  }
  return 0;
}
