// Basic-indexing keys as in NumPy, for GetItem and SetItem (distarray/client.h) and their graph
// statements (distarray/graph.h). A key is a list of Index items:
//
//   a[2, 1:-1, None, ...]  is  {2, Slice{1, -1}, NewAxis(), Ellipsis()}
//   a[::-1, :3]            is  {Slice{.step = -1}, Slice{.stop = 3}}
//
// Slice ends are clamped to the axis as Python does; an integer outside its axis is OUT_OF_RANGE.
#ifndef DISTARRAY_CLIENT_INDEXING_H_
#define DISTARRAY_CLIENT_INDEXING_H_

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "distarray/index_maps.h"
#include "distarray/v1/distarray.pb.h"

namespace distarray {

// start:stop:step, each part optional (SliceSpec's fields, so designated initializers read as
// Python: Slice{.start = 2}, Slice{.step = -1}).
using Slice = SliceSpec;
// None: a new axis of length 1.
struct NewAxis {};
// `...`: whole slices for every axis the other items leave (at most one per key).
struct Ellipsis {};
// An integer-array index along one axis (a[[0, 3, 3]], take): the positions in order, repeats
// allowed, negative counting from the end. At most one per key.
struct Positions {
  std::vector<int64_t> values;
};
// An integer-array index whose positions are an array held in the daemon, named by its handle
// (take(x, idx), x[idx] with idx an Array: HeldPositions{idx.handle()}). A 1-D array of any integer
// dtype, read as Positions are; the daemon reads its values back once, so it may hold far more
// positions than a listed Positions (docs/api.md). GetItem and SetItem only: a graph statement
// with it is refused (UNIMPLEMENTED).
struct HeldPositions {
  std::string handle;
};

// One item of a key. Implicit from each kind, so a key is written as a braced list.
class Index {
 public:
  // a[2]: any integer type, so literals and sizes need no cast.
  template <typename T,
            typename = std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>>
  Index(T position) {  // NOLINT
    item_.set_index(static_cast<int64_t>(position));
  }
  Index(const Slice& slice) {  // NOLINT
    v1::Slice* s = item_.mutable_slice();
    if (slice.start) s->set_start(*slice.start);
    if (slice.stop) s->set_stop(*slice.stop);
    if (slice.step) s->set_step(*slice.step);
  }
  Index(NewAxis) { item_.mutable_new_axis(); }                 // NOLINT
  Index(const Positions& positions) {                          // NOLINT
    v1::IndexItem::IndexList* list = item_.mutable_indices();  // set even when empty: a[[]]
    for (int64_t v : positions.values) list->add_values(v);
  }
  Index(const HeldPositions& positions) {  // NOLINT
    item_.mutable_array()->set_handle(positions.handle);
  }
  Index(Ellipsis) { item_.mutable_ellipsis(); }  // NOLINT

  const v1::IndexItem& proto() const { return item_; }

 private:
  v1::IndexItem item_;
};

// The wire form of a key.
inline v1::IndexKey MakeIndexKey(const std::vector<Index>& key) {
  v1::IndexKey out;
  for (const Index& item : key) *out.add_items() = item.proto();
  return out;
}

}  // namespace distarray

#endif  // DISTARRAY_CLIENT_INDEXING_H_
