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

// Host memory for one transfer's bytes, left uninitialized (they are overwritten at once).
struct HostBytes {
  explicit HostBytes(int64_t n) : data(new char[static_cast<size_t>(n)]), size(n) {}
  std::unique_ptr<char[]> data;
  int64_t size;
};

}  // namespace

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
  auto host = std::make_shared<HostBytes>(*bytes);
  auto reads = std::make_shared<std::vector<std::unique_ptr<PendingRead>>>();
  for (int64_t piece = 0; piece < PieceCount(*bytes); ++piece) {
    const int64_t offset = piece * kPieceBytes;
    const int64_t n = std::min(kPieceBytes, *bytes - offset);
    absl::StatusOr<std::unique_ptr<PendingRead>> read =
        backend.ReadToHost(dense, offset, n, host->data.get() + offset);
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
            const int64_t offset = static_cast<int64_t>(piece) * kPieceBytes;
            posted.push_back(context->createUnboundBuffer(
                host->data.get() + offset,
                static_cast<size_t>(std::min(kPieceBytes, host->size - offset))));
            posted.back()->send(peer, PieceSlot(tag, static_cast<int64_t>(piece)));
          }
          for (auto& buffer : posted) {
            if (!buffer->waitSend(ToChrono(options_.timeout))) {
              MarkBroken(context, absl::StrCat("send to node ", peer, " (tag ", tag, ") aborted"));
              break;
            }
          }
        } catch (const std::exception& e) {
          MarkBroken(context, absl::StrCat("send to node ", peer, ": ", e.what()));
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
  HostBytes host(*bytes);
  try {
    // Every piece's receive is posted at once; each is written to the device as it lands.
    std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> posted;
    for (int64_t piece = 0; piece < PieceCount(*bytes); ++piece) {
      const int64_t offset = piece * kPieceBytes;
      posted.push_back((*context)->createUnboundBuffer(
          host.data.get() + offset, static_cast<size_t>(std::min(kPieceBytes, *bytes - offset))));
      posted.back()->recv(peer, PieceSlot(tag, piece));
    }
    // Every posted piece is waited for, even after an error: Gloo writes into `host` until then.
    absl::Status written;
    for (int64_t piece = 0; piece < static_cast<int64_t>(posted.size()); ++piece) {
      if (!posted[piece]->waitRecv(ToChrono(options_.timeout))) {
        MarkBroken(*context, "receive aborted");  // closes the pairs: nothing lands any more
        return absl::UnavailableError(absl::StrCat("receive from node ", peer, " aborted"));
      }
      const int64_t offset = piece * kPieceBytes;
      if (written.ok()) {
        written = backend.WriteFromHost(target, offset, host.data.get() + offset,
                                        std::min(kPieceBytes, *bytes - offset));
      }
    }
    if (!written.ok()) return written;
  } catch (const std::exception& e) {
    MarkBroken(*context, e.what());
    return absl::UnavailableError(absl::StrCat("receive from node ", peer, ": ", e.what()));
  }
  if (direct) return absl::OkStatus();
  const BoxCopy unpack{DenseBlock(target, dst.box), dst, combine};
  return backend.Copy(dtype, absl::MakeConstSpan(&unpack, 1));
}

}  // namespace distarray::cluster
