#include "server/cluster/data_plane.h"

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <utility>
#include <vector>

#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>
#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "common/checked.h"
#include "server/backend/unreachable_node.h"

namespace distarray::cluster {
namespace {

std::chrono::milliseconds ToChrono(absl::Duration d) {
  return std::chrono::milliseconds(absl::ToInt64Milliseconds(d));
}

// The box's elements as a dense C-order block of their own.
BufferBox DenseBlock(const BufferPtr& buffer, const Box& like) {
  BufferBox block{buffer, Shape(like.size()), Box(like.size())};
  for (size_t d = 0; d < like.size(); ++d) {
    block.shape[d] = like[d].count;
    block.box[d] = Range{.start = 0, .step = 1, .count = like[d].count};
  }
  return block;
}

}  // namespace

absl::StatusOr<int64_t> BoxBytes(DType dtype, const Box& box) {
  int64_t elements = 1;
  for (const Range& r : box) {
    std::optional<int64_t> next = r.count >= 0 ? MulOrNull(elements, r.count) : std::nullopt;
    if (!next) return absl::InternalError("a copy's box has a bad extent");
    elements = *next;
  }
  std::optional<int64_t> bytes = MulOrNull(elements, DTypeSize(dtype));
  if (!bytes) return absl::InternalError("a copy's box is too large");
  return *bytes;
}

DataPlane::DataPlane(Options options) : options_(std::move(options)) {}

DataPlane::~DataPlane() {
  absl::MutexLock lock(&senders_mu_);
  for (Sender& sender : senders_) sender.thread.join();
}

absl::Status DataPlane::Connect(gloo::rendezvous::Store& store, int64_t epoch) {
  try {
    if (device_ == nullptr) {
      gloo::transport::tcp::attr attr;
      attr.hostname = options_.address;
      attr.ai_family = AF_UNSPEC;
      device_ = gloo::transport::tcp::CreateDevice(attr);
    }
    gloo::rendezvous::PrefixStore scoped(absl::StrCat("epoch", epoch), store);
    auto context = std::make_shared<gloo::rendezvous::Context>(options_.rank, options_.size);
    context->setTimeout(ToChrono(options_.timeout));
    context->connectFullMesh(scoped, device_);
    absl::MutexLock lock(&mu_);
    context_ = std::move(context);
    epoch_ = epoch;
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("the cluster's data plane (epoch ", epoch,
                                               ", address ", options_.address,
                                               ") did not connect: ", e.what()));
  }
  spdlog::info("cluster data plane connected: rank {} of {}, epoch {}", options_.rank,
               options_.size, epoch);
  return absl::OkStatus();
}

int64_t DataPlane::epoch() const {
  absl::MutexLock lock(&mu_);
  return epoch_;
}

absl::StatusOr<std::shared_ptr<gloo::Context>> DataPlane::Current() const {
  absl::MutexLock lock(&mu_);
  if (context_ == nullptr) {
    return absl::UnavailableError(
        "the cluster's data plane is not connected (a member was lost; it reconnects once every "
        "member is back)");
  }
  return context_;
}

void DataPlane::MarkBroken(const std::shared_ptr<gloo::Context>& context, const std::string& why) {
  absl::MutexLock lock(&mu_);
  if (context_ != context) return;  // already replaced
  spdlog::error("cluster data plane epoch {} broken: {}", epoch_, why);
  context_.reset();
  epoch_ = 0;
}

void DataPlane::ReapFinishedSenders() {
  for (auto it = senders_.begin(); it != senders_.end();) {
    if (it->done->load()) {
      it->thread.join();
      it = senders_.erase(it);
    } else {
      ++it;
    }
  }
}

namespace {

// A transfer moves in pieces, so that reading one piece from the device, sending another and
// writing a third to the destination device overlap. 8 MiB: large enough that a piece's fixed
// costs (a device read, a Gloo message) vanish, small enough to fill the pipe at once.
constexpr int64_t kPieceBytes = int64_t{8} << 20;

int64_t PieceCount(int64_t bytes) { return (bytes + kPieceBytes - 1) / kPieceBytes; }

// Gloo's slot of piece `piece` of the copy `tag`: the leader's tags keep their piece bits
// (kPieceShift and up, below the top bit) clear.
uint64_t PieceSlot(uint64_t tag, int64_t piece) {
  return tag ^ (static_cast<uint64_t>(piece) << kPieceShift);
}

// Whether `box` is all of its buffer's dense array, in order: then a copy needs no packing.
bool WholeBuffer(DType dtype, const BufferBox& box) {
  int64_t elements = 1;
  for (size_t d = 0; d < box.box.size(); ++d) {
    const Range& r = box.box[d];
    if (r.start != 0 || r.step != 1 || r.count != box.shape[d]) return false;
    elements *= r.count;
  }
  return elements * DTypeSize(dtype) == box.buffer->bytes();
}

}  // namespace

// Host memory for one transfer, one pool piece per kPieceBytes, given back when done.
class DataPlane::HostPieces {
 public:
  HostPieces(PiecePool& pool, int64_t bytes) : pool_(pool), bytes_(bytes) {
    for (int64_t i = 0; i < PieceCount(bytes); ++i) pieces_.push_back(pool_.Take());
  }
  ~HostPieces() {
    for (auto& piece : pieces_) pool_.Give(std::move(piece));
  }
  int64_t count() const { return static_cast<int64_t>(pieces_.size()); }
  char* data(int64_t i) const { return pieces_[i].get(); }
  int64_t bytes(int64_t i) const { return std::min(kPieceBytes, bytes_ - i * kPieceBytes); }

 private:
  PiecePool& pool_;
  const int64_t bytes_;
  std::vector<std::unique_ptr<char[]>> pieces_;
};

std::unique_ptr<char[]> DataPlane::PiecePool::Take() {
  {
    absl::MutexLock lock(&mu_);
    if (!idle_.empty()) {
      std::unique_ptr<char[]> piece = std::move(idle_.back());
      idle_.pop_back();
      return piece;
    }
  }
  return std::unique_ptr<char[]>(new char[kPieceBytes]);
}

void DataPlane::PiecePool::Give(std::unique_ptr<char[]> piece) {
  absl::MutexLock lock(&mu_);
  if (static_cast<int64_t>(idle_.size()) < kMaxIdlePieces) idle_.push_back(std::move(piece));
}

absl::Status DataPlane::Send(Backend& backend, DType dtype, const BufferBox& src, int peer,
                             uint64_t tag) {
  absl::StatusOr<std::shared_ptr<gloo::Context>> context = Current();
  if (!context.ok()) return context.status();
  absl::StatusOr<int64_t> bytes = BoxBytes(dtype, src.box);
  if (!bytes.ok()) return bytes.status();
  // The box as one dense block on its device: the buffer itself, or packed into a new one.
  BufferPtr dense = src.buffer;
  if (!WholeBuffer(dtype, src)) {
    absl::StatusOr<BufferPtr> packed = backend.Allocate(src.buffer->device(), *bytes);
    if (!packed.ok()) return packed.status();
    const BoxCopy pack{src, DenseBlock(*packed, src.box), Combine::kAssign};
    if (absl::Status s = backend.Copy(dtype, absl::MakeConstSpan(&pack, 1)); !s.ok()) return s;
    dense = *std::move(packed);
  }
  // Every piece's read is queued at once; the sender thread posts each piece as its read lands.
  auto host = std::make_shared<HostPieces>(pool_, *bytes);
  auto reads = std::make_shared<std::vector<std::unique_ptr<PendingRead>>>();
  for (int64_t piece = 0; piece < host->count(); ++piece) {
    absl::StatusOr<std::unique_ptr<PendingRead>> read =
        backend.ReadToHost(dense, piece * kPieceBytes, host->bytes(piece), host->data(piece));
    if (!read.ok()) return read.status();
    reads->push_back(*std::move(read));
  }
  auto done = std::make_shared<std::atomic<bool>>(false);
  absl::MutexLock lock(&senders_mu_);
  ReapFinishedSenders();
  senders_.push_back(Sender{
      std::thread([this, context = *context, dense, host, reads, done, peer, tag] {
        std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> posted;
        try {
          for (size_t piece = 0; piece < reads->size(); ++piece) {
            if (absl::Status s = (*reads)[piece]->Wait(); !s.ok()) {
              // The receiver then times out, and the epoch ends with it.
              spdlog::error("send to node {}: reading piece {} from the device: {}", peer, piece,
                            std::string(s.message()));
              break;
            }
            posted.push_back(context->createUnboundBuffer(host->data(piece),
                                                          static_cast<size_t>(host->bytes(piece))));
            posted.back()->send(peer, PieceSlot(tag, static_cast<int64_t>(piece)));
          }
          for (auto& buffer : posted) {
            if (!buffer->waitSend(ToChrono(options_.timeout))) {
              MarkBroken(context,
                         absl::StrCat("send to cluster node ", peer, " (tag ", tag, ") aborted"));
              break;
            }
          }
        } catch (const std::exception& e) {
          MarkBroken(context, absl::StrCat("send to cluster node ", peer, ": ", e.what()));
        }
        done->store(true);
      }),
      done});
  return absl::OkStatus();
}

absl::Status DataPlane::Receive(Backend& backend, DType dtype, const BufferBox& dst,
                                Combine combine, int peer, uint64_t tag) {
  absl::StatusOr<std::shared_ptr<gloo::Context>> context = Current();
  if (!context.ok()) return context.status();
  absl::StatusOr<int64_t> bytes = BoxBytes(dtype, dst.box);
  if (!bytes.ok()) return bytes.status();
  // Straight into the destination when the box is all of it and nothing combines; else into a
  // dense block of its own, unpacked (and combined) at the end.
  const bool direct = combine == Combine::kAssign && WholeBuffer(dtype, dst);
  BufferPtr target = dst.buffer;
  if (!direct) {
    absl::StatusOr<BufferPtr> staged = backend.Allocate(dst.buffer->device(), *bytes);
    if (!staged.ok()) return staged.status();
    target = *std::move(staged);
  }
  HostPieces host(pool_, *bytes);
  try {
    // Every piece's receive is posted at once; each is written to the device as it lands.
    std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> posted;
    for (int64_t piece = 0; piece < host.count(); ++piece) {
      posted.push_back((*context)->createUnboundBuffer(host.data(piece),
                                                       static_cast<size_t>(host.bytes(piece))));
      posted.back()->recv(peer, PieceSlot(tag, piece));
    }
    // Every posted piece is waited for, even after an error: Gloo writes into `host` until then.
    absl::Status written;
    for (int64_t piece = 0; piece < static_cast<int64_t>(posted.size()); ++piece) {
      if (!posted[piece]->waitRecv(ToChrono(options_.timeout))) {
        MarkBroken(*context, "receive aborted");  // closes the pairs: nothing lands any more
        return WithUnreachableNode(
            absl::UnavailableError(absl::StrCat("receive from cluster node ", peer, " aborted")),
            peer);
      }
      if (written.ok()) {
        written =
            backend.WriteFromHost(target, piece * kPieceBytes, host.data(piece), host.bytes(piece));
      }
    }
    if (!written.ok()) return written;
  } catch (const std::exception& e) {
    MarkBroken(*context, e.what());
    return WithUnreachableNode(
        absl::UnavailableError(absl::StrCat("receive from cluster node ", peer, ": ", e.what())),
        peer);
  }
  if (direct) return absl::OkStatus();
  const BoxCopy unpack{DenseBlock(target, dst.box), dst, combine};
  return backend.Copy(dtype, absl::MakeConstSpan(&unpack, 1));
}

}  // namespace distarray::cluster
