#include "distarray/client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "client/channel.h"
#include "client/raw_download.h"
#include "client/shared_memory.h"

namespace distarray {

struct Client::Session {
  std::string id;
  std::string authorization;  // "Bearer <token>", or empty
  // Set when the session is this client's own (a random id): it is ended when the last copy of
  // the Client goes, so it stops counting as live and its unnamed arrays go at once.
  std::shared_ptr<v1::ArrayService::Stub> end_on_close;
  std::shared_ptr<grpc::Channel> channel;  // end_on_close's
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::thread keepalive;
  // The daemon reported this host's host_id, and has not refused a segment since.
  std::atomic<bool> same_host{false};
  // Set at Connect from ConnectOptions::shared_memory_cache_bytes.
  std::unique_ptr<internal::SegmentCache> segments;

  ~Session();
};

namespace {

constexpr char kSessionKey[] = "distarray-session";
constexpr char kAuthorizationKey[] = "authorization";

// The session and, when there is one, the token: what every call carries.
void AddCallMetadata(grpc::ClientContext& context, const std::string& session,
                     const std::string& authorization) {
  context.AddMetadata(kSessionKey, session);
  if (!authorization.empty()) context.AddMetadata(kAuthorizationKey, authorization);
}

std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(const ConnectOptions& options) {
  if (!options.tls) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = options.tls_root_certs_pem;
  ssl.pem_cert_chain = options.tls_client_cert_pem;
  ssl.pem_private_key = options.tls_client_key_pem;
  return grpc::SslCredentials(ssl);
}

std::string RandomSessionId() {
  std::random_device rd;
  std::string id = "s-";
  for (int i = 0; i < 4; ++i) absl::StrAppend(&id, absl::Hex(rd(), absl::kZeroPad8));
  return id;
}

absl::Status FromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

// Adds a client's call metadata (its session and token) to a context: Client::Attacher().
using AttachFn = absl::FunctionRef<void(grpc::ClientContext&)>;

// Sends a header and `bytes` of data in messages of `message_bytes` on one stream.
absl::StatusOr<v1::ArrayInfo> StreamUpload(v1::ArrayService::Stub& stub, AttachFn attach,
                                           const v1::UploadHeader& header, const void* data,
                                           int64_t bytes, int64_t message_bytes) {
  grpc::ClientContext context;
  attach(context);
  v1::UploadArrayResponse response;
  auto writer = stub.UploadArray(&context, &response);
  v1::UploadArrayRequest message;
  *message.mutable_header() = header;
  bool open = writer->Write(message);
  const char* p = static_cast<const char*>(data);
  for (int64_t sent = 0; open && sent < bytes;) {
    const int64_t n = std::min(message_bytes, bytes - sent);
    message.set_data(p + sent, n);
    // The last message can go with the end of the stream in one write.
    open = sent + n == bytes ? writer->Write(message, grpc::WriteOptions().set_last_message())
                             : writer->Write(message);
    sent += n;
  }
  // A last_message write already half-closed the stream.
  if (open && bytes == 0) writer->WritesDone();
  absl::Status s = FromGrpc(writer->Finish());  // the server's verdict, even if writes stopped
  if (!s.ok()) return s;
  return response.array();
}

// Streams a download, handing its bytes to `sink` piece by piece, straight from gRPC's receive
// buffers (client/raw_download.h).
template <typename Sink>
absl::Status StreamDownload(const internal::RawDownloadStub& stub, AttachFn attach,
                            const std::string& handle, const v1::Region& region,
                            int64_t message_bytes, Sink&& sink) {
  grpc::ClientContext context;
  attach(context);
  v1::DownloadArrayRequest request;
  request.set_handle(handle);
  *request.mutable_region() = region;
  request.set_max_message_bytes(message_bytes);
  auto reader = stub.DownloadArray(&context, request);
  grpc::ByteBuffer message;
  absl::Status sink_status;
  while (reader->Read(&message)) {
    if (sink_status.ok()) sink_status = internal::ForEachDataPiece(message, sink);
    if (!sink_status.ok()) context.TryCancel();
  }
  absl::Status status = FromGrpc(reader->Finish());
  return sink_status.ok() ? status : sink_status;
}

// Streams a download into `dst`, which holds exactly `capacity` bytes; FAILED_PRECONDITION when
// the server sends more or fewer.
absl::Status StreamDownloadInto(const internal::RawDownloadStub& stub, AttachFn attach,
                                const std::string& handle, const v1::Region& region,
                                int64_t message_bytes, char* dst, int64_t capacity) {
  int64_t got = 0;
  absl::Status s =
      StreamDownload(stub, attach, handle, region, message_bytes, [&](absl::string_view piece) {
        if (got + static_cast<int64_t>(piece.size()) > capacity) {
          return absl::FailedPreconditionError(absl::StrCat(
              "download of ", handle, " carried more than the ", capacity, " bytes expected"));
        }
        // A zero-size array's one message has no bytes (and its destination may be null).
        if (piece.empty()) return absl::OkStatus();
        std::memcpy(dst + got, piece.data(), piece.size());
        got += piece.size();
        return absl::OkStatus();
      });
  if (s.ok() && got != capacity) {
    return absl::FailedPreconditionError(
        absl::StrCat("download of ", handle, " carried ", got, " bytes, expected ", capacity));
  }
  return s;
}

}  // namespace

Client::Session::~Session() {
  {
    std::lock_guard<std::mutex> lock(mu);
    stop = true;
  }
  cv.notify_all();
  if (keepalive.joinable()) keepalive.join();
  // The kept segment is released by name first; ending the session would also remove it.
  segments.reset();
  // Only over a live connection: a daemon already gone would hold the process in retries.
  if (end_on_close != nullptr && channel->GetState(false) == GRPC_CHANNEL_READY) {
    grpc::ClientContext context;
    AddCallMetadata(context, id, authorization);
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    v1::EndSessionResponse response;
    // Best effort: a daemon that does not answer (or an older one) lets the lease run out.
    end_on_close->EndSession(&context, {}, &response).IgnoreError();
  }
}

absl::StatusOr<Client> Client::Connect(const std::string& address, int timeout_ms,
                                       ConnectOptions options) {
  const grpc::ChannelArguments args = internal::SdkChannelArguments();
  auto channel = grpc::CreateCustomChannel(address, ChannelCredentials(options), args);
  const auto deadline = std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms);
  if (absl::Status connected = internal::WaitForChannel(*channel, address, deadline, timeout_ms);
      !connected.ok()) {
    return connected;
  }
  std::vector<Connection> bulk;
  for (int i = 0; i < options.parallel_streams; ++i) {
    grpc::ChannelArguments bulk_args = args;
    bulk_args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own
    auto bulk_channel = grpc::CreateCustomChannel(address, ChannelCredentials(options), bulk_args);
    // Connected now, within the same deadline: a first call on a channel still connecting fails
    // at once if that attempt fails (seen once on a loaded 2-core machine), where waiting here
    // rides out a failed attempt.
    if (absl::Status connected =
            internal::WaitForChannel(*bulk_channel, address, deadline, timeout_ms);
        !connected.ok()) {
      return absl::UnavailableError(absl::StrCat("distarrayd at ", address,
                                                 " answered, but parallel stream connection ", i,
                                                 " did not: ", connected.message()));
    }
    bulk.push_back({v1::ArrayService::NewStub(bulk_channel),
                    std::make_shared<internal::RawDownloadStub>(bulk_channel)});
  }
  auto stub = std::shared_ptr<v1::ArrayService::Stub>(v1::ArrayService::NewStub(channel));
  auto download = std::make_shared<internal::RawDownloadStub>(channel);
  auto session = std::make_shared<Session>();
  session->id = options.session_id.empty() ? RandomSessionId() : options.session_id;
  const bool own_session = options.session_id.empty();
  if (!options.token.empty()) session->authorization = "Bearer " + options.token;
  // The segment calls carry the session and token by value: the cache's last segment is released
  // as the Session goes.
  session->segments = std::make_unique<internal::SegmentCache>(
      std::max<int64_t>(0, options.shared_memory_cache_bytes),
      internal::MakeSegmentCalls(stub, [id = session->id, authorization = session->authorization](
                                           grpc::ClientContext& context) {
        AddCallMetadata(context, id, authorization);
      }));
  const bool keepalive = options.keepalive;
  Client client({stub, std::move(download)}, std::move(bulk), std::move(options), session);
  absl::StatusOr<v1::GetServerInfoResponse> info = client.ServerInfo();
  if (!info.ok()) return info.status();
  session->same_host = !info->host_id().empty() && info->host_id() == LocalHostId();
  // A session id the caller chose may be shared with other clients: only an own one is ended.
  if (own_session) {
    session->end_on_close = stub;
    session->channel = channel;
  }
  if (keepalive && info->session_lease_seconds() > 0) {
    // A third of the lease: two renewals may be lost before the session expires.
    const auto period =
        std::chrono::milliseconds(std::max<int64_t>(100, info->session_lease_seconds() * 1000 / 3));
    Session* s = session.get();  // the thread is joined before *s is destroyed
    s->keepalive = std::thread([s, stub, period] {
      std::unique_lock<std::mutex> lock(s->mu);
      while (!s->cv.wait_for(lock, period, [s] { return s->stop; })) {
        lock.unlock();
        grpc::ClientContext context;
        AddCallMetadata(context, s->id, s->authorization);
        context.set_deadline(std::chrono::system_clock::now() + period);
        v1::KeepAliveResponse response;
        stub->KeepAlive(&context, {}, &response).IgnoreError();  // the next one retries
        lock.lock();
      }
    });
  }
  return client;
}

const std::string& Client::session_id() const { return session_->id; }

void Client::AttachSession(grpc::ClientContext& context) const {
  AddCallMetadata(context, session_->id, session_->authorization);
}

std::function<void(grpc::ClientContext&)> Client::Attacher() const {
  return [this](grpc::ClientContext& context) { AttachSession(context); };
}

absl::StatusOr<v1::GetServerInfoResponse> Client::ServerInfo() const {
  grpc::ClientContext context;
  AttachSession(context);
  v1::GetServerInfoResponse response;
  absl::Status s = FromGrpc(stub_->GetServerInfo(&context, {}, &response));
  if (!s.ok()) return s;
  return response;
}

absl::StatusOr<Array> Client::Create(const std::vector<int64_t>& shape, v1::DType dtype,
                                     const ArrayOptions& options, const v1::Fill& fill) const {
  v1::CreateArrayRequest request;
  v1::ArraySpec* spec = request.mutable_spec();
  for (int64_t d : shape) spec->mutable_shape()->add_dims(d);
  spec->set_dtype(dtype);
  *spec->mutable_index_map() = options.index_map;
  spec->set_mode(options.mode);
  spec->set_name(options.name);
  *request.mutable_fill() = fill;
  grpc::ClientContext context;
  AttachSession(context);
  v1::CreateArrayResponse response;
  absl::Status s = FromGrpc(stub_->CreateArray(&context, request, &response));
  if (!s.ok()) return s;
  return Array(*this, response.array(), options.name.empty());
}

absl::StatusOr<Array> Client::Open(const std::string& handle_or_name) const {
  grpc::ClientContext context;
  AttachSession(context);
  v1::DescribeArrayRequest request;
  request.set_handle(handle_or_name);
  v1::DescribeArrayResponse response;
  absl::Status s = FromGrpc(stub_->DescribeArray(&context, request, &response));
  if (!s.ok()) return s;
  return Array(*this, response.array(), /*owned=*/false);
}

absl::StatusOr<std::vector<v1::ArrayInfo>> Client::List() const {
  std::vector<v1::ArrayInfo> arrays;
  v1::ListArraysRequest request;
  do {
    grpc::ClientContext context;
    AttachSession(context);
    v1::ListArraysResponse response;
    absl::Status s = FromGrpc(stub_->ListArrays(&context, request, &response));
    if (!s.ok()) return s;
    for (v1::ArrayInfo& info : *response.mutable_arrays()) arrays.push_back(std::move(info));
    request.set_page_token(response.next_page_token());
  } while (!request.page_token().empty());
  return arrays;
}

absl::Status Client::Synchronize() const {
  grpc::ClientContext context;
  AttachSession(context);
  v1::SynchronizeResponse response;
  return FromGrpc(stub_->Synchronize(&context, {}, &response));
}

absl::StatusOr<v1::ArrayInfo> Client::UploadBytes(const v1::UploadHeader& header, const void* data,
                                                  int64_t bytes) const {
  bool refused = false;
  if (UseSharedMemory(bytes)) {
    bool got_segment = false;
    absl::StatusOr<v1::ArrayInfo> info =
        UploadThroughSharedMemory(header, data, bytes, &got_segment);
    if (!StreamInstead(info.status(), got_segment)) return info;
    refused = IsRefusal(info.status(), got_segment);
  }
  absl::StatusOr<v1::ArrayInfo> streamed =
      StreamUpload(*stub_, Attacher(), header, data, bytes, options_.upload_message_bytes);
  RememberRefusal(refused, streamed.status());
  return streamed;
}

template <typename Part>
absl::Status Client::SplitRows(const v1::ArrayInfo& info, int64_t bytes, Part&& part) const {
  const int64_t rows = info.shape().dims_size() > 0 ? info.shape().dims(0) : 1;
  const int parts = bytes >= options_.parallel_min_bytes && !bulk_.empty()
                        ? static_cast<int>(std::min<int64_t>(bulk_.size(), rows))
                        : 1;
  if (parts <= 1) return part(Connection{stub_, download_}, 0, rows, 0, bytes);
  const int64_t row_bytes = bytes / rows;
  std::vector<absl::Status> results(parts);
  std::vector<std::thread> threads;
  for (int i = 0; i < parts; ++i) {
    threads.emplace_back([&, i] {
      const int64_t begin = rows * i / parts, end = rows * (i + 1) / parts;
      results[i] = part(bulk_[i], begin, end, begin * row_bytes, (end - begin) * row_bytes);
    });
  }
  for (auto& t : threads) t.join();
  for (const absl::Status& s : results) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

namespace {

// Within each stream's row range, shared-memory transfers go in calls of about this many bytes
// (whole rows), so that one stream's copy overlaps another's call. With one call per range,
// every stream copied at once and then called at once, and a 1 GiB upload ran at 6.4 GB/s where
// the daemon's side alone ran at 8 to 9.6 (docs/performance.md).
constexpr int64_t kSharedMemoryPieceBytes = int64_t{32} << 20;

// A piece of a stream's row range: rows [begin, end), `length` bytes from `offset`.
struct RowPiece {
  int64_t begin, end, offset, length;
};

// The consecutive pieces of whole rows of the range [begin, end), which holds `length` bytes
// from `offset`: each at most kSharedMemoryPieceBytes, or one row where a row is larger.
std::vector<RowPiece> RowPieces(int64_t begin, int64_t end, int64_t offset, int64_t length) {
  if (end - begin <= 1 || length == 0) return {{begin, end, offset, length}};
  const int64_t row_bytes = length / (end - begin);
  const int64_t rows_per_piece = std::max<int64_t>(1, kSharedMemoryPieceBytes / row_bytes);
  std::vector<RowPiece> pieces;
  for (int64_t row = begin; row < end; row += rows_per_piece) {
    const int64_t stop = std::min(end, row + rows_per_piece);
    pieces.push_back({row, stop, offset + (row - begin) * row_bytes, (stop - row) * row_bytes});
  }
  return pieces;
}

// For each piece of [begin, end) in turn (RowPieces'): `before(piece)`, then
// `call(piece)` on a thread of its own, then `after(piece)` once that returned. The next piece's
// `before` runs while the previous call is in flight, and `after` while the next one is, so a
// stream's copies overlap its own calls (as the Python SDK's _overlapped): copying and calling in
// turn, a 1 GiB upload measured 5.0 GB/s where the Python SDK's overlapped one measured 8.4-10.8
// on the same host. Stops at the first error, once the call in flight has returned (the segment
// stays untouched by the daemon after this returns).
template <typename Before, typename Call, typename After>
absl::Status OverlapRowPieces(int64_t begin, int64_t end, int64_t offset, int64_t length,
                              Before&& before, Call&& call, After&& after) {
  const std::vector<RowPiece> pieces = RowPieces(begin, end, offset, length);
  if (pieces.size() == 1) {  // nothing to overlap: no thread
    before(pieces[0]);
    const absl::Status called = call(pieces[0]);
    return called.ok() ? after(pieces[0]) : called;
  }
  absl::Status status;
  std::optional<std::pair<RowPiece, std::future<absl::Status>>> in_flight;
  const auto finish = [&] {  // waits for the call in flight, then `after` (if all went well)
    absl::Status called = in_flight->second.get();
    if (status.ok()) status = called.ok() ? after(in_flight->first) : called;
    in_flight.reset();
  };
  for (const RowPiece& piece : pieces) {
    before(piece);
    std::future<absl::Status> started =
        std::async(std::launch::async, [&call, piece] { return call(piece); });
    if (in_flight.has_value()) finish();
    in_flight.emplace(piece, std::move(started));
    if (!status.ok()) break;
  }
  if (in_flight.has_value()) finish();
  return status;
}

v1::Region RowRange(const v1::ArrayInfo& info, int64_t begin, int64_t end) {
  v1::Region region;
  if (info.shape().dims_size() == 0) return region;
  v1::Slice* rows = region.add_slices();
  rows->set_start(begin);
  rows->set_stop(end);
  for (int d = 1; d < info.shape().dims_size(); ++d) region.add_slices();
  return region;
}

}  // namespace

absl::Status Client::WriteAll(const v1::ArrayInfo& info, const void* data, int64_t bytes) const {
  const char* base = static_cast<const char*>(data);
  bool refused = false;  // shared memory was refused, and the transfer streams instead
  if (UseSharedMemory(bytes)) {
    // One segment; the row ranges (the same split as the streams below) are copied in and sent
    // by one thread each, in pieces of kSharedMemoryPieceBytes, so the copies on both sides run
    // in parallel and overlap the calls.
    absl::StatusOr<internal::SharedMemorySegment> segment = session_->segments->Take(bytes);
    absl::Status s = segment.status();
    if (segment.ok()) {
      const auto copy_in = [&](const RowPiece& p) {
        if (p.length > 0) std::memcpy(segment->data() + p.offset, base + p.offset, p.length);
      };
      const auto upload = [&](v1::ArrayService::Stub& stub, const RowPiece& p) {
        v1::UploadFromSharedMemoryRequest request;
        request.mutable_header()->set_handle(info.handle());
        *request.mutable_header()->mutable_region() = RowRange(info, p.begin, p.end);
        *request.mutable_source() = segment->Range(p.offset, p.length);
        grpc::ClientContext context;
        AttachSession(context);
        v1::UploadFromSharedMemoryResponse response;
        return FromGrpc(stub.UploadFromSharedMemory(&context, request, &response));
      };
      s = SplitRows(info, bytes,
                    [&](const Connection& connection, int64_t begin, int64_t end, int64_t offset,
                        int64_t length) {
                      return OverlapRowPieces(
                          begin, end, offset, length, copy_in,
                          [&](const RowPiece& p) { return upload(*connection.stub, p); },
                          [](const RowPiece&) { return absl::OkStatus(); });
                    });
      if (s.ok()) session_->segments->Give(*std::move(segment));
    }
    if (!StreamInstead(s, segment.ok())) return s;
    refused = IsRefusal(s, segment.ok());
  }
  const absl::Status streamed =
      SplitRows(info, bytes,
                [&](const Connection& connection, int64_t begin, int64_t end, int64_t offset,
                    int64_t length) {
                  v1::UploadHeader header;
                  header.set_handle(info.handle());
                  *header.mutable_region() = RowRange(info, begin, end);
                  return StreamUpload(*connection.stub, Attacher(), header, base + offset, length,
                                      options_.upload_message_bytes)
                      .status();
                });
  RememberRefusal(refused, streamed);
  return streamed;
}

absl::Status Client::DownloadAll(const v1::ArrayInfo& info, void* dst, int64_t bytes) const {
  char* base = static_cast<char*>(dst);
  bool refused = false;
  if (UseSharedMemory(bytes)) {
    // As WriteAll: one segment, a thread per row range calling for its pieces and copying each
    // out as it lands.
    absl::StatusOr<internal::SharedMemorySegment> segment = session_->segments->Take(bytes);
    absl::Status s = segment.status();
    if (segment.ok()) {
      const auto download = [&](v1::ArrayService::Stub& stub, const RowPiece& p) {
        v1::DownloadToSharedMemoryRequest request;
        request.set_handle(info.handle());
        *request.mutable_region() = RowRange(info, p.begin, p.end);
        *request.mutable_destination() = segment->Range(p.offset, p.length);
        grpc::ClientContext context;
        AttachSession(context);
        v1::DownloadToSharedMemoryResponse response;
        const absl::Status called =
            FromGrpc(stub.DownloadToSharedMemory(&context, request, &response));
        if (!called.ok()) return called;
        if (response.bytes() != p.length) {
          return absl::FailedPreconditionError(
              absl::StrCat("download wrote ", response.bytes(), " bytes, expected ", p.length));
        }
        return absl::OkStatus();
      };
      const auto copy_out = [&](const RowPiece& p) {
        if (p.length > 0) std::memcpy(base + p.offset, segment->data() + p.offset, p.length);
        return absl::OkStatus();
      };
      s = SplitRows(info, bytes,
                    [&](const Connection& connection, int64_t begin, int64_t end, int64_t offset,
                        int64_t length) {
                      return OverlapRowPieces(
                          begin, end, offset, length, [](const RowPiece&) {},
                          [&](const RowPiece& p) { return download(*connection.stub, p); },
                          copy_out);
                    });
      if (s.ok()) session_->segments->Give(*std::move(segment));
    }
    if (!StreamInstead(s, segment.ok())) return s;
    refused = IsRefusal(s, segment.ok());
  }
  const absl::Status streamed =
      SplitRows(info, bytes,
                [&](const Connection& connection, int64_t begin, int64_t end, int64_t offset,
                    int64_t length) {
                  return StreamDownloadInto(*connection.download, Attacher(), info.handle(),
                                            RowRange(info, begin, end),
                                            options_.download_message_bytes, base + offset, length);
                });
  RememberRefusal(refused, streamed);
  return streamed;
}

absl::Status Client::DownloadBytes(const std::string& handle, const v1::Region& region, void* dst,
                                   int64_t bytes) const {
  bool refused = false;
  if (UseSharedMemory(bytes)) {
    bool got_segment = false;
    absl::Status s = DownloadThroughSharedMemory(handle, region, dst, bytes, &got_segment);
    if (!StreamInstead(s, got_segment)) return s;
    refused = IsRefusal(s, got_segment);
  }
  absl::Status s =
      StreamDownloadInto(*download_, Attacher(), handle, region, options_.download_message_bytes,
                         static_cast<char*>(dst), bytes);
  RememberRefusal(refused, s);
  return s;
}

absl::Status Client::DownloadBytes(const std::string& handle, const v1::Region& region,
                                   std::string* out) const {
  out->clear();
  return StreamDownload(*download_, Attacher(), handle, region, options_.download_message_bytes,
                        [&](absl::string_view piece) {
                          out->append(piece.data(), piece.size());
                          return absl::OkStatus();
                        });
}

const std::string& LocalHostId() { return internal::LocalHostId(); }

bool Client::shared_memory_available() const {
  return options_.shared_memory != SharedMemoryUse::kNever && session_->same_host.load();
}

bool Client::UseSharedMemory(int64_t bytes) const {
  switch (options_.shared_memory) {
    case SharedMemoryUse::kNever:
      return false;
    case SharedMemoryUse::kAlways:
      return true;
    case SharedMemoryUse::kAuto:
      return bytes >= options_.shared_memory_min_bytes && session_->same_host.load();
  }
  return false;
}

void Client::RememberRefusal(bool refused, const absl::Status& streamed) const {
  // A refusal that streaming then got past was about shared memory (another /dev/shm, another
  // user, the feature off): later transfers stream at once. A refusal streaming repeats (say,
  // a write into a SUM-mode array, FAILED_PRECONDITION either way) was about the request.
  if (refused && streamed.ok()) session_->same_host = false;
}

bool Client::StreamInstead(const absl::Status& status, bool got_segment) const {
  if (options_.shared_memory != SharedMemoryUse::kAuto) return false;
  // No segment (the daemon refused to make one, or this process could not open it): stream.
  if (!got_segment) return !status.ok();
  switch (status.code()) {
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnimplemented:
      return true;
    default:
      return false;
  }
}

bool Client::IsRefusal(const absl::Status& status, bool got_segment) {
  // Bounds the daemon put on segments (RESOURCE_EXHAUSTED) pass; the rest does not.
  return got_segment || status.code() != absl::StatusCode::kResourceExhausted;
}

absl::StatusOr<v1::ArrayInfo> Client::UploadThroughSharedMemory(const v1::UploadHeader& header,
                                                                const void* data,
                                                                int64_t bytes) const {
  bool got_segment = false;
  return UploadThroughSharedMemory(header, data, bytes, &got_segment);
}

absl::StatusOr<v1::ArrayInfo> Client::UploadThroughSharedMemory(const v1::UploadHeader& header,
                                                                const void* data, int64_t bytes,
                                                                bool* got_segment) const {
  absl::StatusOr<internal::SharedMemorySegment> segment = session_->segments->Take(bytes);
  if (!segment.ok()) return segment.status();
  *got_segment = true;
  if (bytes > 0) std::memcpy(segment->data(), data, bytes);
  v1::UploadFromSharedMemoryRequest request;
  *request.mutable_header() = header;
  *request.mutable_source() = segment->Range(0, bytes);
  grpc::ClientContext context;
  AttachSession(context);
  v1::UploadFromSharedMemoryResponse response;
  absl::Status s = FromGrpc(stub_->UploadFromSharedMemory(&context, request, &response));
  if (!s.ok()) return s;
  session_->segments->Give(*std::move(segment));
  return response.array();
}

absl::Status Client::DownloadThroughSharedMemory(const std::string& handle,
                                                 const v1::Region& region, void* dst,
                                                 int64_t bytes) const {
  bool got_segment = false;
  return DownloadThroughSharedMemory(handle, region, dst, bytes, &got_segment);
}

absl::Status Client::DownloadThroughSharedMemory(const std::string& handle,
                                                 const v1::Region& region, void* dst, int64_t bytes,
                                                 bool* got_segment) const {
  absl::StatusOr<internal::SharedMemorySegment> segment = session_->segments->Take(bytes);
  if (!segment.ok()) return segment.status();
  *got_segment = true;
  v1::DownloadToSharedMemoryRequest request;
  request.set_handle(handle);
  *request.mutable_region() = region;
  *request.mutable_destination() = segment->Range(0, bytes);
  grpc::ClientContext context;
  AttachSession(context);
  v1::DownloadToSharedMemoryResponse response;
  absl::Status s = FromGrpc(stub_->DownloadToSharedMemory(&context, request, &response));
  if (!s.ok()) return s;
  if (response.bytes() != bytes) {
    return absl::FailedPreconditionError(absl::StrCat(
        "download of ", handle, " wrote ", response.bytes(), " bytes, expected ", bytes));
  }
  if (bytes > 0) std::memcpy(dst, segment->data(), bytes);
  session_->segments->Give(*std::move(segment));
  return absl::OkStatus();
}

Array::~Array() {
  if (owned_ && !info_.handle().empty()) Delete().IgnoreError();  // best effort, as a destructor
}

Array::Array(Array&& other) noexcept
    : client_(other.client_), info_(std::move(other.info_)), owned_(other.owned_) {
  other.owned_ = false;
}

Array& Array::operator=(Array&& other) noexcept {
  if (this != &other) {
    if (owned_) Delete().IgnoreError();
    client_ = other.client_;
    info_ = std::move(other.info_);
    owned_ = other.owned_;
    other.owned_ = false;
  }
  return *this;
}

int64_t Array::size() const {
  int64_t n = 1;
  for (int64_t d : info_.shape().dims()) n *= d;
  return n;
}

v1::Operand Array::AsOperand() const {
  v1::Operand o;
  o.set_handle(handle());
  return o;
}

absl::StatusOr<Array> Array::Reshard(const v1::IndexMap& index_map,
                                     std::optional<v1::Mode> mode) const {
  grpc::ClientContext context;
  client_.AttachSession(context);
  v1::ReshardRequest request;
  request.set_handle(handle());
  *request.mutable_index_map() = index_map;
  if (mode) request.set_mode(*mode);
  v1::ReshardResponse response;
  absl::Status s = FromGrpc(client_.stub_->Reshard(&context, request, &response));
  if (!s.ok()) return s;
  return Array(client_, response.array(), /*owned=*/true);
}

absl::Status Array::ReshardInPlace(const v1::IndexMap& index_map, std::optional<v1::Mode> mode) {
  grpc::ClientContext context;
  client_.AttachSession(context);
  v1::ReshardRequest request;
  request.set_handle(handle());
  *request.mutable_index_map() = index_map;
  if (mode) request.set_mode(*mode);
  request.set_in_place(true);
  v1::ReshardResponse response;
  absl::Status s = FromGrpc(client_.stub_->Reshard(&context, request, &response));
  if (s.ok()) info_ = response.array();
  return s;
}

absl::StatusOr<Array> Array::ChangeMode(v1::Mode mode) const {
  grpc::ClientContext context;
  client_.AttachSession(context);
  v1::ChangeModeRequest request;
  request.set_handle(handle());
  request.set_mode(mode);
  v1::ChangeModeResponse response;
  absl::Status s = FromGrpc(client_.stub_->ChangeMode(&context, request, &response));
  if (!s.ok()) return s;
  return Array(client_, response.array(), /*owned=*/true);
}

absl::StatusOr<Array> Array::Elementwise(v1::ElementwiseOp op, const v1::Operand& other,
                                         bool this_first) const {
  grpc::ClientContext context;
  client_.AttachSession(context);
  v1::ElementwiseRequest request;
  request.mutable_spec()->set_op(op);
  *request.mutable_spec()->add_operands() = this_first ? AsOperand() : other;
  *request.mutable_spec()->add_operands() = this_first ? other : AsOperand();
  v1::ElementwiseResponse response;
  absl::Status s = FromGrpc(client_.stub_->Elementwise(&context, request, &response));
  if (!s.ok()) return s;
  return Array(client_, response.array(), /*owned=*/true);
}

absl::Status Array::SetItem(const std::vector<Index>& key, const Operand& value) {
  v1::ManipulateRequest request;
  v1::SetItemSpec* spec = request.mutable_spec()->mutable_set_item();
  *spec->mutable_target() = AsOperand();
  *spec->mutable_key() = MakeIndexKey(key);
  *spec->mutable_value() = value.proto();
  absl::StatusOr<Array> updated = client_.Manipulate(request);  // not owned: this one owns it
  if (!updated.ok()) return updated.status();
  info_ = updated->info();
  return absl::OkStatus();
}

absl::Status Array::Refresh() {
  auto opened = client_.Open(handle());
  if (!opened.ok()) return opened.status();
  info_ = opened->info();
  return absl::OkStatus();
}

std::string Array::Release() {
  owned_ = false;
  return handle();
}

absl::Status Array::Delete() {
  grpc::ClientContext context;
  client_.AttachSession(context);
  v1::DeleteArrayRequest request;
  request.set_handle(handle());
  v1::DeleteArrayResponse response;
  owned_ = false;
  return FromGrpc(client_.stub_->DeleteArray(&context, request, &response));
}

absl::StatusOr<Array> operator+(const Array& a, const Array& b) {
  return a.Elementwise(v1::ELEMENTWISE_OP_ADD, b.AsOperand());
}
absl::StatusOr<Array> operator-(const Array& a, const Array& b) {
  return a.Elementwise(v1::ELEMENTWISE_OP_SUBTRACT, b.AsOperand());
}
absl::StatusOr<Array> operator*(const Array& a, const Array& b) {
  return a.Elementwise(v1::ELEMENTWISE_OP_MULTIPLY, b.AsOperand());
}
absl::StatusOr<Array> operator/(const Array& a, const Array& b) {
  return a.Elementwise(v1::ELEMENTWISE_OP_DIVIDE, b.AsOperand());
}

template <typename Request, typename Response, typename Call>
absl::StatusOr<Array> Client::Compute(const Request& request, Call call, bool owned) const {
  grpc::ClientContext context;
  AttachSession(context);
  Response response;
  absl::Status s = FromGrpc(((*stub_).*call)(&context, request, &response));
  if (!s.ok()) return s;
  return Array(*this, response.array(), owned);
}

absl::StatusOr<Array> Client::Elementwise(const v1::ElementwiseRequest& request) const {
  return Compute<v1::ElementwiseRequest, v1::ElementwiseResponse>(
      request, &v1::ArrayService::Stub::Elementwise, request.spec().out().empty());
}
absl::StatusOr<Array> Client::Reduce(const v1::ReduceRequest& request) const {
  return Compute<v1::ReduceRequest, v1::ReduceResponse>(request, &v1::ArrayService::Stub::Reduce,
                                                        true);
}
absl::StatusOr<Array> Client::Matmul(const v1::MatmulRequest& request) const {
  return Compute<v1::MatmulRequest, v1::MatmulResponse>(request, &v1::ArrayService::Stub::Matmul,
                                                        true);
}

absl::StatusOr<std::vector<Array>> Client::Linalg(const v1::LinalgRequest& request) const {
  grpc::ClientContext context;
  AttachSession(context);
  v1::LinalgResponse response;
  absl::Status s = FromGrpc(stub_->Linalg(&context, request, &response));
  if (!s.ok()) return s;
  std::vector<Array> arrays;
  for (const v1::ArrayInfo& info : response.arrays()) {
    arrays.push_back(Array(*this, info, /*owned=*/true));
  }
  return arrays;
}

absl::StatusOr<Array> Client::Manipulate(const v1::ManipulateRequest& request) const {
  return Compute<v1::ManipulateRequest, v1::ManipulateResponse>(
      request, &v1::ArrayService::Stub::Manipulate, !request.spec().has_set_item());
}

absl::StatusOr<std::vector<Array>> Client::Sparse(const v1::SparseRequest& request) const {
  grpc::ClientContext context;
  AttachSession(context);
  v1::SparseResponse response;
  absl::Status s = FromGrpc(stub_->Sparse(&context, request, &response));
  if (!s.ok()) return s;
  std::vector<Array> arrays;
  for (const v1::ArrayInfo& info : response.arrays()) arrays.emplace_back(*this, info, true);
  return arrays;
}

absl::StatusOr<GraphRun> Client::RunGraph(const v1::RunGraphRequest& request,
                                          int64_t timeout_ms) const {
  grpc::ClientContext context;
  AttachSession(context);
  if (timeout_ms > 0) {
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
  }
  v1::RunGraphResponse response;
  absl::Status s = FromGrpc(stub_->RunGraph(&context, request, &response));
  if (!s.ok()) return s;
  GraphRun run;
  for (const auto& [variable, info] : response.outputs()) {
    run.outputs.emplace(variable, Array(*this, info, /*owned=*/true));
  }
  run.values.insert(response.values().begin(), response.values().end());
  run.iterations = response.iterations();
  run.hit_iteration_cap = response.hit_iteration_cap();
  run.graph_cache_hit = response.graph_cache_hit();
  run.execution = response.execution();
  run.device_seconds = response.device_seconds();
  run.fused_loops = response.fused_loops();
  run.fused_chains_in_bodies = response.fused_chains_in_bodies();
  run.fused_chain_statements_in_bodies = response.fused_chain_statements_in_bodies();
  return run;
}

namespace {
v1::RunGraphRequest GraphRequest(const std::map<std::string, const Array*>& arguments) {
  v1::RunGraphRequest request;
  for (const auto& [variable, array] : arguments) {
    (*request.mutable_arguments())[variable] = array->handle();
  }
  return request;
}
}  // namespace

absl::StatusOr<GraphRun> Client::RunGraph(const v1::Program& program,
                                          const std::map<std::string, const Array*>& arguments,
                                          int64_t timeout_ms) const {
  v1::RunGraphRequest request = GraphRequest(arguments);
  *request.mutable_program() = program;
  return RunGraph(request, timeout_ms);
}

absl::StatusOr<GraphRun> Client::RunGraph(const std::string& program_id,
                                          const std::map<std::string, const Array*>& arguments,
                                          int64_t timeout_ms) const {
  v1::RunGraphRequest request = GraphRequest(arguments);
  request.set_program_id(program_id);
  return RunGraph(request, timeout_ms);
}

absl::StatusOr<std::string> Client::RegisterProgram(const v1::Program& program) const {
  grpc::ClientContext context;
  AttachSession(context);
  v1::RegisterProgramRequest request;
  *request.mutable_program() = program;
  v1::RegisterProgramResponse response;
  absl::Status s = FromGrpc(stub_->RegisterProgram(&context, request, &response));
  if (!s.ok()) return s;
  return response.program_id();
}

absl::Status Client::DeleteProgram(const std::string& program_id) const {
  grpc::ClientContext context;
  AttachSession(context);
  v1::DeleteProgramRequest request;
  request.set_program_id(program_id);
  v1::DeleteProgramResponse response;
  return FromGrpc(stub_->DeleteProgram(&context, request, &response));
}

Operand::Operand(const Array& array) : client_(&array.client()) {
  proto_.set_handle(array.handle());
}

absl::StatusOr<Array> Ufunc(v1::ElementwiseOp op, std::initializer_list<Operand> operands) {
  const Client* client = nullptr;
  v1::ElementwiseRequest request;
  request.mutable_spec()->set_op(op);
  for (const Operand& o : operands) {
    *request.mutable_spec()->add_operands() = o.proto();
    if (client == nullptr) client = o.client();
  }
  if (client == nullptr) {
    return absl::InvalidArgumentError("Ufunc: at least one operand must be an array");
  }
  return client->Elementwise(request);
}

absl::StatusOr<Array> AsType(const Array& a, v1::DType dtype) {
  v1::ElementwiseRequest request;
  request.mutable_spec()->set_op(v1::ELEMENTWISE_OP_ASTYPE);
  *request.mutable_spec()->add_operands() = a.AsOperand();
  request.mutable_spec()->set_dtype(dtype);
  return a.client().Elementwise(request);
}

absl::StatusOr<Array> Reduce(const Array& a, v1::ReduceOp op, std::vector<int32_t> axes,
                             bool keepdims, bool combine) {
  v1::ReduceRequest request;
  request.mutable_spec()->set_op(op);
  *request.mutable_spec()->mutable_operand() = a.AsOperand();
  for (int32_t axis : axes) request.mutable_spec()->add_axes(axis);
  request.mutable_spec()->set_keepdims(keepdims);
  request.mutable_spec()->set_combine(combine);
  return a.client().Reduce(request);
}

absl::StatusOr<Array> Matmul(const Array& a, const Array& b) {
  v1::MatmulRequest request;
  *request.mutable_spec()->mutable_a() = a.AsOperand();
  *request.mutable_spec()->mutable_b() = b.AsOperand();
  return a.client().Matmul(request);
}

absl::StatusOr<std::vector<Array>> Linalg(v1::LinalgOp op, const Array& a, const Array* b,
                                          const LinalgOptions& options) {
  v1::LinalgRequest request;
  v1::LinalgOpSpec* spec = request.mutable_spec();
  spec->set_op(op);
  *spec->mutable_a() = a.AsOperand();
  if (b != nullptr) *spec->mutable_b() = b->AsOperand();
  spec->set_upper(options.upper);
  spec->set_full_matrices(options.full_matrices);
  spec->set_compute_uv(options.compute_uv);
  return a.client().Linalg(request);
}

namespace {
absl::StatusOr<Array> OnlyResult(absl::StatusOr<std::vector<Array>> results) {
  if (!results.ok()) return results.status();
  if (results->size() != 1) {
    return absl::InternalError(
        absl::StrCat("linalg: the daemon gave ", results->size(), " results for one"));
  }
  return std::move(results->front());
}
}  // namespace

absl::StatusOr<Array> Solve(const Array& a, const Array& b) {
  return OnlyResult(Linalg(v1::LINALG_OP_SOLVE, a, &b));
}
absl::StatusOr<Array> Inv(const Array& a) { return OnlyResult(Linalg(v1::LINALG_OP_INV, a)); }
absl::StatusOr<Array> Det(const Array& a) { return OnlyResult(Linalg(v1::LINALG_OP_DET, a)); }

absl::StatusOr<Array> GetItem(const Array& a, const std::vector<Index>& key) {
  v1::ManipulateRequest request;
  v1::GetItemSpec* spec = request.mutable_spec()->mutable_get_item();
  *spec->mutable_source() = a.AsOperand();
  *spec->mutable_key() = MakeIndexKey(key);
  return a.client().Manipulate(request);
}

absl::Status SetItem(Array& target, const std::vector<Index>& key, const Operand& value) {
  return target.SetItem(key, value);
}

absl::StatusOr<Array> PermuteDims(const Array& a, const std::vector<int32_t>& axes) {
  v1::ManipulateRequest request;
  v1::PermuteDimsSpec* spec = request.mutable_spec()->mutable_permute_dims();
  *spec->mutable_source() = a.AsOperand();
  for (int32_t axis : axes) spec->add_axes(axis);
  return a.client().Manipulate(request);
}

absl::StatusOr<Array> Reshape(const Array& a, const std::vector<int64_t>& shape) {
  v1::ManipulateRequest request;
  v1::ReshapeSpec* spec = request.mutable_spec()->mutable_reshape();
  *spec->mutable_source() = a.AsOperand();
  for (int64_t d : shape) spec->mutable_shape()->add_dims(d);
  return a.client().Manipulate(request);
}

absl::StatusOr<Array> BroadcastTo(const Array& a, const std::vector<int64_t>& shape) {
  v1::ManipulateRequest request;
  v1::BroadcastToSpec* spec = request.mutable_spec()->mutable_broadcast_to();
  *spec->mutable_source() = a.AsOperand();
  for (int64_t d : shape) spec->mutable_shape()->add_dims(d);
  return a.client().Manipulate(request);
}

namespace {
absl::StatusOr<Array> SortRequest(const Array& a, int32_t axis, bool descending, bool indices) {
  v1::ManipulateRequest request;
  v1::SortSpec* spec = request.mutable_spec()->mutable_sort();
  *spec->mutable_source() = a.AsOperand();
  spec->set_axis(axis);
  spec->set_descending(descending);
  spec->set_indices(indices);
  return a.client().Manipulate(request);
}
}  // namespace

absl::StatusOr<Array> Sort(const Array& a, int32_t axis, bool descending) {
  return SortRequest(a, axis, descending, /*indices=*/false);
}

absl::StatusOr<Array> Argsort(const Array& a, int32_t axis, bool descending) {
  return SortRequest(a, axis, descending, /*indices=*/true);
}

namespace {

absl::StatusOr<Array> ScanRequest(const Array& a, int32_t axis, bool product) {
  v1::ManipulateRequest request;
  v1::ScanSpec* spec = request.mutable_spec()->mutable_scan();
  *spec->mutable_source() = a.AsOperand();
  spec->set_axis(axis);
  spec->set_product(product);
  return a.client().Manipulate(request);
}

}  // namespace

absl::StatusOr<Array> CumulativeSum(const Array& a, int32_t axis) {
  return ScanRequest(a, axis, /*product=*/false);
}

absl::StatusOr<Array> CumulativeProd(const Array& a, int32_t axis) {
  return ScanRequest(a, axis, /*product=*/true);
}

absl::StatusOr<Array> SearchSorted(const Array& sorted, const Array& values, bool right) {
  v1::ManipulateRequest request;
  v1::SearchSortedSpec* spec = request.mutable_spec()->mutable_search_sorted();
  *spec->mutable_sorted() = sorted.AsOperand();
  *spec->mutable_values() = values.AsOperand();
  spec->set_right(right);
  return sorted.client().Manipulate(request);
}

namespace {
absl::StatusOr<Array> Join(const std::vector<Operand>& arrays, int32_t axis, bool stack) {
  const Client* client = nullptr;
  v1::ManipulateRequest request;
  v1::ConcatSpec* spec = request.mutable_spec()->mutable_concat();
  for (const Operand& o : arrays) {
    *spec->add_sources() = o.proto();
    if (client == nullptr) client = o.client();
  }
  spec->set_axis(axis);
  spec->set_stack(stack);
  if (client == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(stack ? "Stack" : "Concat", ": at least one operand must be an array"));
  }
  return client->Manipulate(request);
}
}  // namespace

absl::StatusOr<Array> Concat(const std::vector<Operand>& arrays, int32_t axis) {
  return Join(arrays, axis, /*stack=*/false);
}

absl::StatusOr<Array> Stack(const std::vector<Operand>& arrays, int32_t axis) {
  return Join(arrays, axis, /*stack=*/true);
}

}  // namespace distarray
