#include "server/ops/op_table.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/kernels/elementwise_loop.h"

namespace distarray {
namespace {

constexpr ElementwiseOpInfo kOps[] = {
#define DA_OP_INFO(suffix, F, name, arity, rule, complex)             \
  {ElementwiseOpId::k##F, v1::ELEMENTWISE_OP_##suffix,   name, arity, \
   ufunc::TypeRule::rule, ufunc::ComplexSupport::complex},
    DISTARRAY_ELEMENTWISE_OPS(DA_OP_INFO)
#undef DA_OP_INFO
};
static_assert(sizeof(kOps) / sizeof(kOps[0]) == static_cast<size_t>(ElementwiseOpId::kCount));

}  // namespace

const ElementwiseOpInfo* FindElementwiseOp(v1::ElementwiseOp op) {
  for (const ElementwiseOpInfo& info : kOps) {
    if (info.proto == op) return &info;
  }
  return nullptr;
}

const ElementwiseOpInfo& OpInfo(ElementwiseOpId id) { return kOps[static_cast<int>(id)]; }

const std::vector<std::string>& ComputeFeatures() {
  // Built once: GetServerInfo answers with it on every call.
  static const std::vector<std::string>* const features = [] {
    auto* list = new std::vector<std::string>();
    for (const ElementwiseOpInfo& info : kOps)
      list->push_back(absl::StrCat("elementwise.", info.name));
    list->push_back("elementwise.astype");
    list->push_back("elementwise.broadcasting");
    list->push_back("elementwise.out");
    for (const char* op : {"sum", "prod", "max", "min", "all", "any", "mean", "argmax", "argmin"}) {
      list->push_back(absl::StrCat("reduce.", op));
    }
    list->push_back("matmul");
    // CSR matrices: products (MatmulOpSpec.sparse_a), to_dense and transpose (Sparse).
    for (const char* op : {"matmul", "to_dense", "transpose"}) {
      list->push_back(absl::StrCat("sparse.", op));
    }
    for (const char* op : {"solve", "inv", "cholesky", "qr", "eigh", "svd", "det", "slogdet"}) {
      list->push_back(absl::StrCat("linalg.", op));
    }
    for (const char* op : {"get_item", "set_item", "permute_dims", "reshape", "concat", "stack",
                           "broadcast_to", "sort", "argsort", "search_sorted", "take", "scan"}) {
      list->push_back(absl::StrCat("manipulate.", op));
    }
    return list;
  }();
  return *features;
}

}  // namespace distarray
