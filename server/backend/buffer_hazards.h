// Per-buffer dependency tracking, shared by both backends: the event of the last work that wrote
// a buffer and the events of work that read it since. New work waits on exactly these, which is
// how a consumer of one chunk waits for that chunk's producer and nothing else.
#ifndef DISTARRAY_SERVER_BACKEND_BUFFER_HAZARDS_H_
#define DISTARRAY_SERVER_BACKEND_BUFFER_HAZARDS_H_

#include <vector>

namespace distarray {

// EventPtr: a copyable, nullable handle to a backend event (a shared_ptr).
// Not thread-safe on its own: backends guard all hazards with one ordering mutex held while
// they collect dependencies and enqueue, so the order of enqueue is the order of effects.
template <typename EventPtr>
class BufferHazards {
 public:
  // Events that work reading this buffer must wait for.
  void CollectForRead(std::vector<EventPtr>& deps) const {
    if (last_write_) deps.push_back(last_write_);
  }
  // Events that work writing this buffer must wait for (write-after-write, write-after-read).
  void CollectForWrite(std::vector<EventPtr>& deps) const {
    if (last_write_) deps.push_back(last_write_);
    deps.insert(deps.end(), reads_.begin(), reads_.end());
  }
  // `is_done(event)` says whether an event has completed; finished reads are dropped once the
  // list grows, so a buffer read many times between writes keeps a short list.
  template <typename IsDone>
  void RecordRead(const EventPtr& event, IsDone&& is_done) {
    if (reads_.size() >= 32) std::erase_if(reads_, is_done);
    reads_.push_back(event);
  }
  void RecordWrite(const EventPtr& event) {
    last_write_ = event;
    reads_.clear();
  }
  // Everything outstanding: what a release of the buffer must wait for.
  std::vector<EventPtr> All() const {
    std::vector<EventPtr> all = reads_;
    if (last_write_) all.push_back(last_write_);
    return all;
  }

 private:
  EventPtr last_write_{};
  std::vector<EventPtr> reads_;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_BACKEND_BUFFER_HAZARDS_H_
