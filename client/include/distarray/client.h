// The distarray C++ SDK: connect to a distarrayd, create and upload arrays, and compute on them
// through RAII handles. Every call returns absl::Status(Or) carrying the server's gRPC status
// code and message. Thread-safe: one Client may be shared by many threads.
#ifndef DISTARRAY_CLIENT_CLIENT_H_
#define DISTARRAY_CLIENT_CLIENT_H_

#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "distarray/index_maps.h"
#include "distarray/indexing.h"
#include "distarray/types.h"
#include "distarray/v1/distarray.grpc.pb.h"

namespace distarray {

class Array;
class Operand;
namespace internal {
class RawDownloadStub;
}  // namespace internal
struct GraphRun;

// When transfers go through a shared-memory segment instead of gRPC messages (docs/api.md).
enum class SharedMemoryUse {
  // When the daemon reports this host's host_id and the transfer holds at least
  // shared_memory_min_bytes; a refusal (FAILED_PRECONDITION, PERMISSION_DENIED, UNIMPLEMENTED:
  // another /dev/shm, another user, an older daemon, shared memory off on the daemon) streams
  // instead, and the client streams from then on. A segment the daemon will not make now (the
  // tenant's shared-memory bounds, RESOURCE_EXHAUSTED) streams that transfer only.
  kAuto,
  kAlways,  // every whole-array or region transfer of a known size; errors are returned as such
  kNever,   // always stream
};

// This process's host id by the daemon's rule (docs/api.md): GetServerInfo's host_id equals it
// exactly when the daemon sees the same /dev/shm. Empty when /dev/shm cannot be read.
const std::string& LocalHostId();

struct ConnectOptions {
  int64_t upload_message_bytes = 1 << 20;  // size of each data message of an upload
  // The most bytes of each message of a download (DownloadArrayRequest.max_message_bytes);
  // 0: the daemon's default, 1 MiB.
  int64_t download_message_bytes = 0;
  // Whole-array transfers of at least `parallel_min_bytes` are split along the first axis over
  // this many streams, each on its own connection: one gRPC stream is bounded by one
  // connection's processing (docs/performance.md).
  int parallel_streams = 4;
  int64_t parallel_min_bytes = 64 << 20;
  // The session this client's calls belong to (metadata "distarray-session"); empty: a random
  // one. Unnamed arrays the client creates are deleted by the server when the session ends: when
  // the last copy of the Client goes (a random session only: a chosen id may be shared, so that
  // one is left to its lease), or when its lease runs out, that is when the process died or lost
  // the network.
  std::string session_id;
  // Renew the lease from a background thread (every lease/3), so arrays survive idle periods.
  bool keepalive = true;
  SharedMemoryUse shared_memory = SharedMemoryUse::kAuto;
  int64_t shared_memory_min_bytes = 1 << 20;  // kAuto: smaller transfers stream
  // After a shared-memory transfer the client keeps its segment (if at most this large) for the
  // next one: making a segment costs more than the copy it saves. 0: a segment per transfer.
  // Kept segments count against the tenant's shared-memory bounds on the daemon.
  int64_t shared_memory_cache_bytes = int64_t{1} << 30;
  // The bearer token of a daemon run with --auth_tokens_file, sent on every call as
  // "authorization: Bearer <token>"; empty: none. It decides the tenant the client's arrays,
  // sessions and programs belong to.
  std::string token;
  // TLS to a daemon run with --tls_cert_file. `tls_root_certs_pem` verifies the server (empty:
  // the system's roots); a client certificate and key (PEM) answer --tls_client_ca_file.
  bool tls = false;
  std::string tls_root_certs_pem;
  std::string tls_client_cert_pem;
  std::string tls_client_key_pem;
};

// The layout and identity of a new array.
struct ArrayOptions {
  v1::IndexMap index_map;  // required
  v1::Mode mode = v1::MODE_REPLICA;
  std::string name;  // optional; a named array outlives its Array object
};

class Client {
 public:
  // Connects to `address` (host:port) and reads the server's session lease. Fails with
  // UNAVAILABLE when no daemon answers within `timeout_ms`, and sooner (about 0.5 s) when the
  // connection is refused (nothing listens there); the message says which. The keepalive thread
  // stops, and the session ends, when the last copy of the Client (Arrays hold one) is gone.
  //
  // Calls that change nothing on the daemon (GetServerInfo, DescribeArray, ListArrays,
  // DownloadArray before its first message, DownloadToSharedMemory, Synchronize, KeepAlive,
  // EndSession) are retried on UNAVAILABLE, as during a drain: up to 5 attempts, 0.1 s to 1 s
  // apart (docs/api.md, "Retries"). Other calls return UNAVAILABLE as it comes.
  static absl::StatusOr<Client> Connect(const std::string& address, int timeout_ms = 5000,
                                        ConnectOptions options = {});

  absl::StatusOr<v1::GetServerInfoResponse> ServerInfo() const;
  // Whether transfers may use shared memory now: the daemon reported this host's host_id at
  // Connect (and has not refused a segment since), and the options allow it.
  bool shared_memory_available() const;

  absl::StatusOr<Array> Create(const std::vector<int64_t>& shape, v1::DType dtype,
                               const ArrayOptions& options, const v1::Fill& fill = {}) const;
  // Streams `data` (C order) into a new array of `shape`.
  template <typename T>
  absl::StatusOr<Array> Upload(std::span<const T> data, const std::vector<int64_t>& shape,
                               const ArrayOptions& options) const;
  // An Array for an existing handle or name. It does not own the array (Release()d).
  absl::StatusOr<Array> Open(const std::string& handle_or_name) const;
  // Every live array, following ListArrays pages.
  absl::StatusOr<std::vector<v1::ArrayInfo>> List() const;
  absl::Status Synchronize() const;

  // Compute with a full request (every option of the API); the result is a new owned Array, or
  // with `spec.out` the updated `out` array (not owned: the caller's Array for it still owns it).
  absl::StatusOr<Array> Elementwise(const v1::ElementwiseRequest& request) const;
  absl::StatusOr<Array> Reduce(const v1::ReduceRequest& request) const;
  absl::StatusOr<Array> Matmul(const v1::MatmulRequest& request) const;
  // Dense linear algebra: the results in LinalgOp's order (Q and R; U, S and Vh; ...), each one
  // chunk on the device the operand was gathered to.
  absl::StatusOr<std::vector<Array>> Linalg(const v1::LinalgRequest& request) const;
  // Indexing and shapes (get_item, set_item, permute_dims, reshape, concat); GetItem and the
  // others below build the request. With set_item the result is the updated target (not owned).
  absl::StatusOr<Array> Manipulate(const v1::ManipulateRequest& request) const;
  // Ops on sparse matrices other than products (distarray/sparse.h wraps them): the results in
  // order, each owned.
  absl::StatusOr<std::vector<Array>> Sparse(const v1::SparseRequest& request) const;

  // Runs a program (distarray/graph.h builds one) on arrays bound to its inputs by name. A
  // `timeout_ms` > 0 is the call's deadline: a loop still running then is stopped on the GPUs
  // and the call fails with DEADLINE_EXCEEDED, leaving no output behind.
  absl::StatusOr<GraphRun> RunGraph(const v1::Program& program,
                                    const std::map<std::string, const Array*>& arguments,
                                    int64_t timeout_ms = 0) const;
  absl::StatusOr<GraphRun> RunGraph(const std::string& program_id,
                                    const std::map<std::string, const Array*>& arguments,
                                    int64_t timeout_ms = 0) const;
  absl::StatusOr<GraphRun> RunGraph(const v1::RunGraphRequest& request,
                                    int64_t timeout_ms = 0) const;
  // Keeps a program on the server to run many times by id.
  absl::StatusOr<std::string> RegisterProgram(const v1::Program& program) const;
  absl::Status DeleteProgram(const std::string& program_id) const;

  const std::string& session_id() const;

  // Untyped transfers the typed wrappers use.
  absl::StatusOr<v1::ArrayInfo> UploadBytes(const v1::UploadHeader& header, const void* data,
                                            int64_t bytes) const;
  // Downloads the region's bytes into `dst` (capacity `bytes`); FAILED_PRECONDITION when the
  // server sends a different amount.
  absl::Status DownloadBytes(const std::string& handle, const v1::Region& region, void* dst,
                             int64_t bytes) const;
  // Downloads the region's bytes, however many, into `out`.
  absl::Status DownloadBytes(const std::string& handle, const v1::Region& region,
                             std::string* out) const;
  // The whole array's bytes into `dst`, over parallel streams when large (ConnectOptions).
  absl::Status DownloadAll(const v1::ArrayInfo& info, void* dst, int64_t bytes) const;
  // Overwrites the whole of a REPLICA array, over parallel streams when large.
  absl::Status WriteAll(const v1::ArrayInfo& info, const void* data, int64_t bytes) const;
  // The same transfers through a segment the daemon makes for this client's session
  // (CreateSharedMemory), whatever the options say (no fallback): UploadFromSharedMemory /
  // DownloadToSharedMemory.
  absl::StatusOr<v1::ArrayInfo> UploadThroughSharedMemory(const v1::UploadHeader& header,
                                                          const void* data, int64_t bytes) const;
  absl::Status DownloadThroughSharedMemory(const std::string& handle, const v1::Region& region,
                                           void* dst, int64_t bytes) const;

 private:
  struct Session;  // the id and the keepalive thread, shared by copies of the Client
  // One gRPC channel: the generated stub, and DownloadArray with its messages left serialized.
  struct Connection {
    std::shared_ptr<v1::ArrayService::Stub> stub;
    std::shared_ptr<internal::RawDownloadStub> download;
  };
  Client(Connection main, std::vector<Connection> bulk, ConnectOptions options,
         std::shared_ptr<Session> session)
      : stub_(std::move(main.stub)),
        download_(std::move(main.download)),
        bulk_(std::move(bulk)),
        options_(std::move(options)),
        session_(std::move(session)) {}
  friend class Array;
  // Adds this client's session and token to a context, for each call the client makes.
  void AttachSession(grpc::ClientContext& context) const;
  // AttachSession as a callable, for the call helpers of client.cc.
  std::function<void(grpc::ClientContext&)> Attacher() const;
  // One unary compute call (Elementwise, Reduce, Matmul); the result is the response's array.
  template <typename Request, typename Response, typename Call>
  absl::StatusOr<Array> Compute(const Request& request, Call call, bool owned) const;
  // Runs `part(connection, rows_begin, rows_end, offset, length)` over axis-0 ranges in
  // parallel, one connection each.
  template <typename Part>
  absl::Status SplitRows(const v1::ArrayInfo& info, int64_t bytes, Part&& part) const;
  // Whether a transfer of `bytes` should try shared memory first.
  bool UseSharedMemory(int64_t bytes) const;
  // As the public ones; `*got_segment` tells whether a segment was had, so that a segment the
  // daemon would not make now (the tenant's bounds) is not taken for a refusal of the transfer.
  absl::StatusOr<v1::ArrayInfo> UploadThroughSharedMemory(const v1::UploadHeader& header,
                                                          const void* data, int64_t bytes,
                                                          bool* got_segment) const;
  absl::Status DownloadThroughSharedMemory(const std::string& handle, const v1::Region& region,
                                           void* dst, int64_t bytes, bool* got_segment) const;
  // Whether `status`, from a shared-memory attempt, means "stream instead" (kAuto only): any
  // failure to get a segment, or the transfer's refusal of shared memory.
  bool StreamInstead(const absl::Status& status, bool got_segment) const;
  // Whether that failure says shared memory does not work for this client (remembered once
  // streaming delivered), rather than a passing bound.
  static bool IsRefusal(const absl::Status& status, bool got_segment);
  // After a transfer that streamed: when the daemon had `refused` shared memory and streaming
  // then worked, this client streams from now on.
  void RememberRefusal(bool refused, const absl::Status& streamed) const;

  std::shared_ptr<v1::ArrayService::Stub> stub_;
  std::shared_ptr<internal::RawDownloadStub> download_;  // over stub_'s channel
  std::vector<Connection> bulk_;                         // the parallel streams' connections
  ConnectOptions options_;
  std::shared_ptr<Session> session_;
};

// A handle to an array on the server. Deleted on the server when this object dies, unless it
// was Release()d or has a name. Move-only.
class Array {
 public:
  Array(Client client, v1::ArrayInfo info, bool owned)
      : client_(std::move(client)), info_(std::move(info)), owned_(owned) {}
  ~Array();
  Array(Array&& other) noexcept;
  Array& operator=(Array&& other) noexcept;
  Array(const Array&) = delete;
  Array& operator=(const Array&) = delete;

  const v1::ArrayInfo& info() const { return info_; }
  const std::string& handle() const { return info_.handle(); }
  std::vector<int64_t> shape() const {
    return {info_.shape().dims().begin(), info_.shape().dims().end()};
  }
  int64_t size() const;

  // The logical values of the whole array (or a region), C order. INVALID_ARGUMENT unless T is
  // the array's dtype (DTypeOf<T>), or uint16_t/int16_t for a float16 or bfloat16 array's bits.
  template <typename T>
  absl::StatusOr<std::vector<T>> Download(const v1::Region& region = {}) const;
  // The whole array's logical values into memory the caller owns (C order); INVALID_ARGUMENT
  // when `out` does not hold exactly size() elements, or T is not the array's dtype (as Download).
  template <typename T>
  absl::Status DownloadTo(std::span<T> out) const;
  // Overwrites a region (default: all) of a REPLICA array with `data` (C order); T must be the
  // array's dtype (as Download: INVALID_ARGUMENT otherwise).
  template <typename T>
  absl::Status Write(std::span<const T> data, const v1::Region& region = {}) const;

  // A new array with the same values in another layout and/or mode.
  absl::StatusOr<Array> Reshard(const v1::IndexMap& index_map,
                                std::optional<v1::Mode> mode = std::nullopt) const;
  // This handle now has the new layout (and mode).
  absl::Status ReshardInPlace(const v1::IndexMap& index_map,
                              std::optional<v1::Mode> mode = std::nullopt);
  absl::StatusOr<Array> ChangeMode(v1::Mode mode) const;
  absl::StatusOr<Array> Elementwise(v1::ElementwiseOp op, const v1::Operand& other,
                                    bool this_first = true) const;
  // this[key] = value, as NumPy's: the value (an array or a scalar) is broadcast to the selection
  // and converted to this array's dtype. In place: the handle stays, the array becomes REPLICA
  // (this object's info says so afterwards).
  absl::Status SetItem(const std::vector<Index>& key, const Operand& value);
  absl::Status Refresh();  // re-reads the server's ArrayInfo

  // Stops owning the array: it stays on the server, an unnamed one until its client's session
  // ends (the last copy of the Client goes, or the lease runs out). Returns its handle.
  std::string Release();
  absl::Status Delete();

  v1::Operand AsOperand() const;
  const Client& client() const { return client_; }

 private:
  // OK when T is the array's dtype's C++ type (or raw 16 bits of a 16-bit float): the SDK copies
  // bytes as they are. INVALID_ARGUMENT naming `call` and both dtypes otherwise.
  template <typename T>
  absl::Status CheckElementType(const char* call) const;
  Client client_;
  v1::ArrayInfo info_;
  bool owned_;
};

// What a RunGraph call returned (see RunGraphResponse).
struct GraphRun {
  std::map<std::string, Array> outputs;     // Program.outputs, owned new arrays
  std::map<std::string, v1::Value> values;  // Program.value_outputs
  int64_t iterations = 0;
  bool hit_iteration_cap = false;
  bool graph_cache_hit = false;
  v1::GraphExecution execution = v1::GRAPH_EXECUTION_UNSPECIFIED;
  double device_seconds = 0;  // the replay's device time, where the daemon measures it
  int fused_loops = 0;        // loops run as one fused kernel per iteration (docs/graphs.md)
  // Straight-line runs of statements inside loop and branch bodies recorded as one kernel per
  // device each, and the statements they cover (docs/graphs.md, "Fused straight-line chains").
  int fused_chains_in_bodies = 0;
  int fused_chain_statements_in_bodies = 0;
};

// An operand for the calls below: an array or a scalar (weak, as a Python scalar in NumPy 2).
class Operand {
 public:
  Operand(const Array& array);  // NOLINT: implicit, so arrays and scalars mix in one call
  template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
  Operand(T scalar) {  // NOLINT
    *proto_.mutable_scalar() = MakeScalar(scalar);
  }
  Operand(std::complex<double> scalar) {  // NOLINT
    *proto_.mutable_scalar() = MakeScalar(scalar);
  }
  const v1::Operand& proto() const { return proto_; }
  const Client* client() const { return client_; }  // null for a scalar

 private:
  v1::Operand proto_;
  const Client* client_ = nullptr;
};

// NumPy-style calls: Ufunc(v1::ELEMENTWISE_OP_SIN, a), Ufunc(v1::ELEMENTWISE_OP_WHERE, c, x, 0.0).
// Operands broadcast and promote as in NumPy; the client of the first array operand sends it.
absl::StatusOr<Array> Ufunc(v1::ElementwiseOp op, std::initializer_list<Operand> operands);
absl::StatusOr<Array> AsType(const Array& a, v1::DType dtype);
// A reduction over `axes` (empty: all). The result is a partial (SUM/PROD/MAX/MIN-mode) array
// unless `combine`; see ReduceOpSpec.
absl::StatusOr<Array> Reduce(const Array& a, v1::ReduceOp op, std::vector<int32_t> axes = {},
                             bool keepdims = false, bool combine = false);
// a @ b as numpy.matmul: vectors, matrices and stacks (the axes before the last two broadcast).
// A split shared axis gives a SUM-mode array of partial products.
absl::StatusOr<Array> Matmul(const Array& a, const Array& b);

// Dense linear algebra on a matrix or a stack of them (the last two axes), as numpy.linalg's;
// float32, float64, complex64 and complex128. The results are in LinalgOp's order.
// (LinalgOptions is in types.h, shared with graph::ProgramBuilder::Linalg.)
absl::StatusOr<std::vector<Array>> Linalg(v1::LinalgOp op, const Array& a, const Array* b = nullptr,
                                          const LinalgOptions& options = {});
// x with a @ x = b (b: (..., n) or (..., n, k) with a's stack axes).
absl::StatusOr<Array> Solve(const Array& a, const Array& b);
absl::StatusOr<Array> Inv(const Array& a);
absl::StatusOr<Array> Det(const Array& a);

// Indexing and shapes, as NumPy's (distarray/indexing.h writes keys). Each result is a new array
// whose chunks follow the source's where they can (ManipulationSpec's messages say how).
// a[key]: a copy of the selected elements; each chunk holding some stays on its device, and the
// mode is kept.
absl::StatusOr<Array> GetItem(const Array& a, const std::vector<Index>& key);
// target[key] = value (Array::SetItem).
absl::Status SetItem(Array& target, const std::vector<Index>& key, const Operand& value);
// numpy.permute_dims: result axis i is a's axis axes[i].
absl::StatusOr<Array> PermuteDims(const Array& a, const std::vector<int32_t>& axes);
// numpy.reshape in C order; one entry may be -1 (inferred).
absl::StatusOr<Array> Reshape(const Array& a, const std::vector<int64_t>& shape);
// numpy.broadcast_to: axes aligned at the end, a length-1 axis repeated; each chunk stays on its
// device, extended along the broadcast axes.
absl::StatusOr<Array> BroadcastTo(const Array& a, const std::vector<int64_t>& shape);
// numpy.sort along `axis` (stable; ascending puts NaNs last, descending is the exact reverse),
// and argsort's int64 positions; the result takes a's layout (SortSpec says how it is sorted).
absl::StatusOr<Array> Sort(const Array& a, int32_t axis = -1, bool descending = false);
absl::StatusOr<Array> Argsort(const Array& a, int32_t axis = -1, bool descending = false);
// numpy.searchsorted: where each of `values` goes in the 1-D ascending `sorted` (before equal
// elements, or after them with `right`); int64, values' layout.
absl::StatusOr<Array> SearchSorted(const Array& sorted, const Array& values, bool right = false);
// The array API's cumulative_sum and cumulative_prod along `axis` (inclusive; dtypes as sum's and
// prod's: int64 for bool and narrower signed integers, uint64 for narrower unsigned ones); the
// result takes a's layout, each chunk starting from the carry of the chunks before it (ScanSpec).
absl::StatusOr<Array> CumulativeSum(const Array& a, int32_t axis = 0);
absl::StatusOr<Array> CumulativeProd(const Array& a, int32_t axis = 0);
// numpy.concat along `axis`, and numpy.stack along a new axis `axis`; dtypes promote as NumPy's.
absl::StatusOr<Array> Concat(const std::vector<Operand>& arrays, int32_t axis = 0);
absl::StatusOr<Array> Stack(const std::vector<Operand>& arrays, int32_t axis = 0);

// Elementwise arithmetic; the result takes the left array's layout.
absl::StatusOr<Array> operator+(const Array& a, const Array& b);
absl::StatusOr<Array> operator-(const Array& a, const Array& b);
absl::StatusOr<Array> operator*(const Array& a, const Array& b);
absl::StatusOr<Array> operator/(const Array& a, const Array& b);
// Array (op) scalar; the scalar must convert to the array's dtype exactly.
template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
absl::StatusOr<Array> WithScalar(const Array& a, v1::ElementwiseOp op, T s) {
  v1::Operand o;
  *o.mutable_scalar() = MakeScalar(s);
  return a.Elementwise(op, o);
}
template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
absl::StatusOr<Array> operator+(const Array& a, T s) {
  return WithScalar(a, v1::ELEMENTWISE_OP_ADD, s);
}
template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
absl::StatusOr<Array> operator-(const Array& a, T s) {
  return WithScalar(a, v1::ELEMENTWISE_OP_SUBTRACT, s);
}
template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
absl::StatusOr<Array> operator*(const Array& a, T s) {
  return WithScalar(a, v1::ELEMENTWISE_OP_MULTIPLY, s);
}
template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
absl::StatusOr<Array> operator/(const Array& a, T s) {
  return WithScalar(a, v1::ELEMENTWISE_OP_DIVIDE, s);
}

// ---- template implementations ----

template <typename T>
absl::StatusOr<Array> Client::Upload(std::span<const T> data, const std::vector<int64_t>& shape,
                                     const ArrayOptions& options) const {
  v1::UploadHeader header;
  v1::ArraySpec* spec = header.mutable_new_array();
  for (int64_t d : shape) spec->mutable_shape()->add_dims(d);
  spec->set_dtype(DTypeOf<T>());
  *spec->mutable_index_map() = options.index_map;
  spec->set_mode(options.mode);
  spec->set_name(options.name);
  const auto bytes = static_cast<int64_t>(data.size_bytes());
  if (bytes >= options_.parallel_min_bytes && options.mode == v1::MODE_REPLICA && !shape.empty() &&
      shape[0] > 1) {
    auto created = Create(shape, DTypeOf<T>(), options);
    if (!created.ok()) return created.status();
    if (absl::Status s = WriteAll(created->info(), data.data(), bytes); !s.ok()) return s;
    return created;
  }
  auto info = UploadBytes(header, data.data(), bytes);
  if (!info.ok()) return info.status();
  return Array(*this, *std::move(info), options.name.empty());
}

template <typename T>
absl::Status Array::CheckElementType(const char* call) const {
  // The bytes are copied as they are, so T must be the dtype's own type: a float64 array read as
  // float would be silent garbage. 16-bit floats may also come as their raw 16 bits (bfloat16 has
  // no C++ type here).
  const v1::DType dtype = info_.dtype();
  bool raw_half_bits = false;
  if constexpr (std::is_same_v<T, uint16_t> || std::is_same_v<T, int16_t>) {
    raw_half_bits = dtype == v1::DTYPE_FLOAT16 || dtype == v1::DTYPE_BFLOAT16;
  }
  if (dtype == DTypeOf<T>() || raw_half_bits) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(call, ": the array ", handle(), " is ",
                                                 v1::DType_Name(dtype), ", not ",
                                                 v1::DType_Name(DTypeOf<T>())));
}

template <typename T>
absl::StatusOr<std::vector<T>> Array::Download(const v1::Region& region) const {
  if (absl::Status s = CheckElementType<T>("Download"); !s.ok()) return s;
  if constexpr (!std::is_same_v<T, bool>) {
    if (region.slices_size() == 0 && info_.dtype() == DTypeOf<T>()) {
      std::vector<T> out(size());
      absl::Status s = client_.DownloadAll(info_, out.data(), size() * sizeof(T));
      if (!s.ok()) return s;
      return out;
    }
  }
  std::string bytes;
  if (absl::Status s = client_.DownloadBytes(handle(), region, &bytes); !s.ok()) return s;
  std::vector<T> out(bytes.size() / sizeof(T));
  if constexpr (std::is_same_v<T, bool>) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = bytes[i] != 0;
  } else {
    std::memcpy(out.data(), bytes.data(), bytes.size());
  }
  return out;
}

template <typename T>
absl::Status Array::DownloadTo(std::span<T> out) const {
  static_assert(!std::is_same_v<T, bool> || sizeof(bool) == 1);
  if (absl::Status s = CheckElementType<T>("DownloadTo"); !s.ok()) return s;
  if (static_cast<int64_t>(out.size()) != size()) {
    return absl::InvalidArgumentError(absl::StrCat("DownloadTo: the span holds ", out.size(),
                                                   " elements, the array ", handle(), " ", size()));
  }
  return client_.DownloadAll(info_, out.data(), static_cast<int64_t>(out.size_bytes()));
}

template <typename T>
absl::Status Array::Write(std::span<const T> data, const v1::Region& region) const {
  if (absl::Status s = CheckElementType<T>("Write"); !s.ok()) return s;
  v1::UploadHeader header;
  header.set_handle(handle());
  *header.mutable_region() = region;
  return client_.UploadBytes(header, data.data(), static_cast<int64_t>(data.size_bytes())).status();
}

}  // namespace distarray

#endif  // DISTARRAY_CLIENT_CLIENT_H_
