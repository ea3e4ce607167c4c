// The host backend's model of a CUDA stream and event: one worker thread runs a device's work in
// enqueue order; an event is a flag that work on other threads can wait on.
#ifndef DISTARRAY_SERVER_HOST_HOST_STREAM_H_
#define DISTARRAY_SERVER_HOST_HOST_STREAM_H_

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace distarray {

class HostEvent {
 public:
  void Signal();
  void Wait();
  // Waits at most `timeout`; whether the event has fired. Lets a waiter do other things between
  // polls (a recorded graph's Wait asks its caller whether to cancel).
  bool WaitFor(std::chrono::nanoseconds timeout);
  bool done();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
};
using HostEventPtr = std::shared_ptr<HostEvent>;

class HostStream {
 public:
  HostStream();
  ~HostStream();  // finishes queued work, then joins
  HostStream(const HostStream&) = delete;
  HostStream& operator=(const HostStream&) = delete;

  void Enqueue(std::function<void()> work);
  // Blocks until everything enqueued before the call has run (and its captures are released).
  void Synchronize();

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  int64_t enqueued_ = 0;
  int64_t finished_ = 0;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_HOST_HOST_STREAM_H_
