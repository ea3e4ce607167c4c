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

absl::Status DataPlane::Send(Backend& backend, DType dtype, const BufferBox& src, int peer,
                             uint64_t tag) {
  absl::StatusOr<std::shared_ptr<gloo::Context>> context = Current();
  if (!context.ok()) return context.status();
  absl::StatusOr<int64_t> bytes = BoxBytes(dtype, src.box);
  if (!bytes.ok()) return bytes.status();
  // Pack on the device, then one read to the host.
  absl::StatusOr<BufferPtr> packed = backend.Allocate(src.buffer->device(), *bytes);
  if (!packed.ok()) return packed.status();
  const BoxCopy pack{src, DenseBlock(*packed, src.box), Combine::kAssign};
  if (absl::Status s = backend.Copy(dtype, absl::MakeConstSpan(&pack, 1)); !s.ok()) return s;
  auto host = std::make_shared<std::vector<char>>(*bytes);
  absl::StatusOr<std::unique_ptr<PendingRead>> read =
      backend.ReadToHost(*packed, 0, *bytes, host->data());
  if (!read.ok()) return read.status();
  if (absl::Status s = (*read)->Wait(); !s.ok()) return s;

  std::shared_ptr<gloo::transport::UnboundBuffer> posted;
  try {
    posted = (*context)->createUnboundBuffer(host->data(), host->size());
    posted->send(peer, tag);
  } catch (const std::exception& e) {
    MarkBroken(*context, e.what());
    return absl::UnavailableError(absl::StrCat("send to node ", peer, ": ", e.what()));
  }
  // The bytes must outlive the send, which completes only when the peer receives.
  auto done = std::make_shared<std::atomic<bool>>(false);
  absl::MutexLock lock(&senders_mu_);
  ReapFinishedSenders();
  senders_.push_back(Sender{
      std::thread([this, context = *context, posted, host, done, peer, tag] {
        try {
          if (!posted->waitSend(ToChrono(options_.timeout))) {
            MarkBroken(context, absl::StrCat("send to node ", peer, " (tag ", tag, ") aborted"));
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
  std::vector<char> host(*bytes);
  try {
    auto posted = (*context)->createUnboundBuffer(host.data(), host.size());
    posted->recv(peer, tag);
    if (!posted->waitRecv(ToChrono(options_.timeout))) {
      MarkBroken(*context, "receive aborted");
      return absl::UnavailableError(absl::StrCat("receive from node ", peer, " aborted"));
    }
  } catch (const std::exception& e) {
    MarkBroken(*context, e.what());
    return absl::UnavailableError(absl::StrCat("receive from node ", peer, ": ", e.what()));
  }
  absl::StatusOr<BufferPtr> staged = backend.Allocate(dst.buffer->device(), *bytes);
  if (!staged.ok()) return staged.status();
  if (absl::Status s = backend.WriteFromHost(*staged, 0, host.data(), *bytes); !s.ok()) return s;
  const BoxCopy unpack{DenseBlock(*staged, dst.box), dst, combine};
  return backend.Copy(dtype, absl::MakeConstSpan(&unpack, 1));
}

}  // namespace distarray::cluster
