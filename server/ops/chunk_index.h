// A spatial index over boxes (chunks of an index map, or pieces of a plan), so planning finds the
// boxes that meet a query box without testing every box: a static R-tree packed by
// sort-tile-recursive over each box's hull ([start, last] per axis). Strided boxes can have
// overlapping hulls without sharing an element, so callers confirm every candidate exactly
// (IntersectBoxes, BoxContains). Header-only: it is small and templated on the visitor.
#ifndef DISTARRAY_SERVER_OPS_CHUNK_INDEX_H_
#define DISTARRAY_SERVER_OPS_CHUNK_INDEX_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <span>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/box.h"
#include "common/index_map.h"

namespace distarray {

// The most box tests one plan may make before it is refused. Disjoint tilings cost a few tests
// per chunk (65,536 chunks of a 2-D grid resharded to another grid: about 10^6), while maps whose
// chunks all overlap each other need quadratically many copies and are refused instead of taking
// hours of a core.
inline constexpr int64_t kDefaultPlanWorkLimit = 10'000'000;

// Counts the work of one plan: one unit per index node entered or candidate box tested exactly;
// the planners spend more per copy or fill they keep (reshard_planner.cc).
// OK while the call a plan serves is still wanted; CANCELLED or DEADLINE_EXCEEDED once not.
using StopCheck = std::function<absl::Status()>;

class PlanBudget {
 public:
  explicit PlanBudget(int64_t limit = kDefaultPlanWorkLimit, StopCheck stop = {})
      : limit_(limit), stop_(std::move(stop)) {}

  // Spends `n` units; false once the limit is passed or, checked every kUnitsPerStopCheck
  // units, once the call is no longer wanted (a client that cancels or whose deadline passes
  // does not keep a core planning for it).
  bool Spend(int64_t n = 1) {
    used_ += n;
    if (stop_ && used_ >= next_stop_check_) {
      next_stop_check_ = used_ + kUnitsPerStopCheck;
      if (absl::Status s = stop_(); !s.ok()) stopped_ = std::move(s);
    }
    return !exhausted();
  }
  bool exhausted() const { return used_ > limit_ || !stopped_.ok(); }
  int64_t used() const { return used_; }
  int64_t limit() const { return limit_; }

  // RESOURCE_EXHAUSTED naming what was being planned, or why the call stopped.
  absl::Status ExhaustedError(absl::string_view what) const {
    if (!stopped_.ok()) {
      return absl::Status(stopped_.code(), absl::StrCat(what, ": ", stopped_.message()));
    }
    return absl::ResourceExhaustedError(
        absl::StrCat(what, ": the plan needs more than ", limit_,
                     " box intersections (chunks that overlap many other chunks)"));
  }

 private:
  static constexpr int64_t kUnitsPerStopCheck = 1 << 14;  // about a millisecond of planning

  int64_t limit_;
  int64_t used_ = 0;
  StopCheck stop_;
  int64_t next_stop_check_ = 0;
  absl::Status stopped_;
};

class ChunkIndex {
 public:
  ChunkIndex() = default;
  explicit ChunkIndex(const IndexMap& map) {
    Build(map.size(), map.empty() ? 0 : map[0].box.size(),
          [&](size_t i) -> const Box& { return map[i].box; });
  }
  explicit ChunkIndex(const std::vector<Box>& boxes) {
    Build(boxes.size(), boxes.empty() ? 0 : boxes[0].size(),
          [&](size_t i) -> const Box& { return boxes[i]; });
  }

  size_t size() const { return order_.size(); }

  // Calls visit(id) for every box whose id is below `below` and whose hull meets `query`'s hull,
  // in no particular order, until visit returns false. Each node entered and each candidate
  // visited is spent from `budget`; returns false when the budget ran out or visit stopped.
  template <typename Visit>
  bool ForEachOverlap(const Box& query, int64_t below, PlanBudget& budget, Visit&& visit) const {
    return Search(query, below, budget, /*containing=*/false, visit);
  }
  template <typename Visit>
  bool ForEachOverlap(const Box& query, PlanBudget& budget, Visit&& visit) const {
    return ForEachOverlap(query, std::numeric_limits<int64_t>::max(), budget, visit);
  }

  // The same for boxes whose hull contains `query`'s hull (the candidates for BoxContains).
  template <typename Visit>
  bool ForEachContaining(const Box& query, int64_t below, PlanBudget& budget, Visit&& visit) const {
    return Search(query, below, budget, /*containing=*/true, visit);
  }

 private:
  static constexpr int kFanout = 16;

  struct Node {
    int64_t first = 0;  // leaves: first position in order_; inner nodes: first child in nodes_
    int32_t count = 0;
    bool leaf = true;
    int64_t min_id = 0;  // the smallest id below the node, for `below` pruning
  };

  template <typename BoxOf>
  void Build(size_t n, size_t rank, BoxOf box_of) {
    rank_ = rank;
    lo_.resize(n * rank);
    hi_.resize(n * rank);
    for (size_t i = 0; i < n; ++i) {
      const Box& b = box_of(i);
      for (size_t d = 0; d < rank; ++d) {
        lo_[i * rank + d] = b[d].start;
        hi_[i * rank + d] = b[d].last();
      }
    }
    order_.resize(n);
    std::iota(order_.begin(), order_.end(), int64_t{0});
    if (n == 0) return;
    Tile(std::span<int64_t>(order_), 0);

    // Leaves over runs of kFanout entries in tile order, then parents over runs of kFanout nodes.
    const size_t leaves = (n + kFanout - 1) / kFanout;
    for (size_t l = 0; l < leaves; ++l) {
      Node node;
      node.first = static_cast<int64_t>(l * kFanout);
      node.count = static_cast<int32_t>(std::min<size_t>(kFanout, n - l * kFanout));
      node.leaf = true;
      AddNode(node);
    }
    size_t level_begin = 0, level_end = nodes_.size();
    while (level_end - level_begin > 1) {
      for (size_t c = level_begin; c < level_end; c += kFanout) {
        Node node;
        node.first = static_cast<int64_t>(c);
        node.count = static_cast<int32_t>(std::min<size_t>(kFanout, level_end - c));
        node.leaf = false;
        AddNode(node);
      }
      level_begin = level_end;
      level_end = nodes_.size();
    }
    root_ = static_cast<int64_t>(nodes_.size()) - 1;
  }

  // Sort-tile-recursive: slabs along axis `axis` by hull centre, each tiled along the next axis.
  void Tile(std::span<int64_t> ids, size_t axis) {
    auto centre = [&](int64_t id) {
      const int64_t lo = lo_[id * rank_ + axis], hi = hi_[id * rank_ + axis];
      return lo + (hi - lo) / 2;
    };
    if (rank_ == 0) return;
    std::sort(ids.begin(), ids.end(), [&](int64_t a, int64_t b) {
      const int64_t ca = centre(a), cb = centre(b);
      return ca != cb ? ca < cb : a < b;
    });
    if (axis + 1 >= rank_ || ids.size() <= kFanout) return;
    const double leaves = std::ceil(static_cast<double>(ids.size()) / kFanout);
    const double slabs = std::ceil(std::pow(leaves, 1.0 / static_cast<double>(rank_ - axis)));
    size_t per_slab = static_cast<size_t>(std::ceil(ids.size() / slabs));
    per_slab = (per_slab + kFanout - 1) / kFanout * kFanout;
    for (size_t begin = 0; begin < ids.size(); begin += per_slab) {
      Tile(ids.subspan(begin, std::min(per_slab, ids.size() - begin)), axis + 1);
    }
  }

  void AddNode(Node node) {
    std::vector<int64_t> lo(rank_, std::numeric_limits<int64_t>::max());
    std::vector<int64_t> hi(rank_, std::numeric_limits<int64_t>::min());
    node.min_id = std::numeric_limits<int64_t>::max();
    for (int32_t k = 0; k < node.count; ++k) {
      const int64_t* clo;
      const int64_t* chi;
      if (node.leaf) {
        const int64_t id = order_[node.first + k];
        clo = lo_.data() + id * rank_;
        chi = hi_.data() + id * rank_;
        node.min_id = std::min(node.min_id, id);
      } else {
        const int64_t child = node.first + k;
        clo = node_lo_.data() + child * rank_;
        chi = node_hi_.data() + child * rank_;
        node.min_id = std::min(node.min_id, nodes_[child].min_id);
      }
      for (size_t d = 0; d < rank_; ++d) {
        lo[d] = std::min(lo[d], clo[d]);
        hi[d] = std::max(hi[d], chi[d]);
      }
    }
    nodes_.push_back(node);
    node_lo_.insert(node_lo_.end(), lo.begin(), lo.end());
    node_hi_.insert(node_hi_.end(), hi.begin(), hi.end());
  }

  // Whether hull [lo, hi] meets (or, `containing`, contains) the query hull [qlo, qhi].
  bool Matches(const int64_t* lo, const int64_t* hi, const int64_t* qlo, const int64_t* qhi,
               bool containing) const {
    for (size_t d = 0; d < rank_; ++d) {
      if (containing ? (lo[d] > qlo[d] || hi[d] < qhi[d]) : (lo[d] > qhi[d] || hi[d] < qlo[d]))
        return false;
    }
    return true;
  }

  template <typename Visit>
  bool Search(const Box& query, int64_t below, PlanBudget& budget, bool containing,
              Visit& visit) const {
    if (order_.empty()) return true;
    int64_t qlo[kMaxRank], qhi[kMaxRank];
    for (size_t d = 0; d < rank_; ++d) {
      qlo[d] = query[d].start;
      qhi[d] = query[d].last();
    }
    std::vector<int64_t> stack;
    if (nodes_[root_].min_id < below &&
        Matches(node_lo_.data() + root_ * rank_, node_hi_.data() + root_ * rank_, qlo, qhi,
                containing)) {
      stack.push_back(root_);
    }
    while (!stack.empty()) {
      const Node& node = nodes_[stack.back()];
      stack.pop_back();
      if (!budget.Spend()) return false;
      for (int32_t k = 0; k < node.count; ++k) {
        if (node.leaf) {
          const int64_t id = order_[node.first + k];
          if (id >= below) continue;
          if (!Matches(lo_.data() + id * rank_, hi_.data() + id * rank_, qlo, qhi, containing))
            continue;
          if (!budget.Spend() || !visit(id)) return false;
        } else {
          const int64_t child = node.first + k;
          if (nodes_[child].min_id >= below) continue;
          if (Matches(node_lo_.data() + child * rank_, node_hi_.data() + child * rank_, qlo, qhi,
                      containing))
            stack.push_back(child);
        }
      }
    }
    return true;
  }

  size_t rank_ = 0;
  std::vector<int64_t> lo_, hi_;  // per box, rank_ values each
  std::vector<int64_t> order_;    // box ids in leaf order
  std::vector<Node> nodes_;       // leaves first, then each level above, the root last
  std::vector<int64_t> node_lo_, node_hi_;
  int64_t root_ = 0;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_OPS_CHUNK_INDEX_H_
