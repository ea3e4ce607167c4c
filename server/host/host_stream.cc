#include "server/host/host_stream.h"

namespace distarray {

void HostEvent::Signal() {
  {
    std::lock_guard lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
}

void HostEvent::Wait() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return done_; });
}

bool HostEvent::WaitFor(std::chrono::nanoseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return done_; });
}

bool HostEvent::done() {
  std::lock_guard lock(mu_);
  return done_;
}

HostStream::HostStream() : worker_([this] { Run(); }) {}

HostStream::~HostStream() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void HostStream::Enqueue(std::function<void()> work) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(work));
    ++enqueued_;
  }
  cv_.notify_all();
}

void HostStream::Synchronize() {
  std::unique_lock lock(mu_);
  const int64_t target = enqueued_;
  cv_.wait(lock, [&] { return finished_ >= target; });
}

void HostStream::Run() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and all work done
    std::function<void()> work = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    work();
    work = nullptr;  // release captured buffers before reporting completion
    lock.lock();
    ++finished_;
    cv_.notify_all();
  }
}

}  // namespace distarray
