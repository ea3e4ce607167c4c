#include "server/ops/linalg.h"

#include <algorithm>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/checked.h"
#include "common/status_macros.h"
#include "server/ops/device_gather.h"
#include "server/ops/layout.h"
#include "server/ops/operand.h"

namespace distarray {
namespace {

const char* OpName(v1::LinalgOp op) {
  switch (op) {
    case v1::LINALG_OP_SOLVE:
      return "solve";
    case v1::LINALG_OP_INV:
      return "inv";
    case v1::LINALG_OP_CHOLESKY:
      return "cholesky";
    case v1::LINALG_OP_QR:
      return "qr";
    case v1::LINALG_OP_EIGH:
      return "eigh";
    case v1::LINALG_OP_SVD:
      return "svd";
    case v1::LINALG_OP_DET:
      return "det";
    case v1::LINALG_OP_SLOGDET:
      return "slogdet";
    default:
      return nullptr;
  }
}

bool IsLinalgDType(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64 || dtype == DType::kComplex64 ||
         dtype == DType::kComplex128;
}

Shape Appended(const Shape& stack, std::initializer_list<int64_t> dims) {
  Shape shape = stack;
  shape.insert(shape.end(), dims);
  return shape;
}

IndexMap OneChunk(int device, const Shape& shape) { return {ChunkSpec{device, FullBox(shape)}}; }

// dst (batch x rows x cols, C order) gets, for each matrix, the column-major matrix of `src` with
// leading dimension `ld` (>= rows): dst[b][i][j] = src[b * ld * cols + j * ld + i]. Both ways of
// the layout change are this: a C-order matrix read as column-major is its transpose.
absl::Status Transpose(DeviceOps& ops, DType dtype, const BufferPtr& src, int64_t src_elements,
                       int64_t batch, int64_t rows, int64_t cols, int64_t ld,
                       const BufferPtr& dst) {
  StridedBox view;
  view.rank = 3;
  view.count[0] = batch;
  view.count[1] = rows;
  view.count[2] = cols;
  view.stride[0] = ld * cols;
  view.stride[1] = 1;
  view.stride[2] = ld;
  return Gather(ops, dtype, src, src_elements, view, dst, batch * rows * cols);
}

// A generated (eye or tri) fill of `buffer`, a stack of `batch` matrices rows x cols in C order.
absl::Status FillMatrices(DeviceOps& ops, DType dtype, const BufferPtr& buffer, int64_t batch,
                          int64_t rows, int64_t cols, Generator::Kind kind, int64_t diagonal) {
  Generator g;
  g.kind = kind;
  g.rows = rows;
  g.cols = cols;
  g.diagonal = diagonal;
  const Shape shape{batch, rows, cols};
  return ops.FillGenerated(dtype, buffer, shape, FullBox(shape), g);
}

// out = the lower (tril) or upper (triu) triangle of `src` (a stack of rows x cols C-order
// matrices), zeros elsewhere.
absl::Status KeepTriangle(DeviceOps& ops, DType dtype, int device, const BufferPtr& src,
                          int64_t batch, int64_t rows, int64_t cols, bool upper,
                          const BufferPtr& out) {
  const int64_t count = batch * rows * cols;
  ASSIGN_OR_RETURN(BufferPtr mask, ops.Allocate(device, count));
  // tri(k=0) marks the lower triangle; tri(k=-1) the part strictly below the diagonal.
  RETURN_IF_ERROR(FillMatrices(ops, DType::kBool, mask, batch, rows, cols, Generator::Kind::kTri,
                               upper ? -1 : 0));
  ElementwiseArg condition{mask, {}, true, {}};
  ElementwiseArg values{src, {}, true, {}};
  ElementwiseArg zero{nullptr, {}, true, Scalar::Int(0)};
  const ElementwiseArg args[3] = {condition, upper ? zero : values, upper ? values : zero};
  return ops.Elementwise(ElementwiseOpId::kWhere, dtype, out, count, args);
}

// The first of `batch` matrices (`per_matrix` elements each, consecutive in `a`) holding a NaN or
// an infinity, or -1 when all are finite. LAPACK's and cuSOLVER's iterative eigen- and
// singular-value solvers are not safe on such input: a host SVD of a matrix holding -inf was seen
// to spin without end, and NaN comes back as a convergence failure the library reports in its own
// terms. NumPy raises LinAlgError for both, so the daemon refuses them before the solver runs.
// `lower_only`: the matrices are square and column-major, and only their lower triangles count
// (eigh reads no other entry, as NumPy's UPLO='L'), so a NaN above the diagonal is no fault.
absl::StatusOr<int64_t> FirstNonFiniteMatrix(DeviceOps& ops, Backend& backend, DType dtype,
                                             int device, const BufferPtr& a, int64_t batch,
                                             int64_t rows, int64_t cols, bool lower_only) {
  const int64_t per_matrix = rows * cols;
  const int64_t total = batch * per_matrix;
  ASSIGN_OR_RETURN(BufferPtr finite, ops.Allocate(device, total));
  const ElementwiseArg values{a, {}, /*contiguous=*/true, {}};
  RETURN_IF_ERROR(ops.Elementwise(ElementwiseOpId::kIsFinite, dtype, finite, total, {values}));
  if (lower_only) {
    // Column-major, read as C order, is the transpose: the lower triangle is that view's upper
    // one, and tri(k=-1) marks what lies strictly below it, the entries eigh never reads.
    ASSIGN_OR_RETURN(BufferPtr unread, ops.Allocate(device, total));
    RETURN_IF_ERROR(
        FillMatrices(ops, DType::kBool, unread, batch, cols, rows, Generator::Kind::kTri, -1));
    ASSIGN_OR_RETURN(BufferPtr counted, ops.Allocate(device, total));
    const ElementwiseArg finite_arg{finite, {}, true, {}}, unread_arg{unread, {}, true, {}};
    RETURN_IF_ERROR(ops.Elementwise(ElementwiseOpId::kLogicalOr, DType::kBool, counted, total,
                                    {finite_arg, unread_arg}));
    finite = counted;
  }
  ReduceGeometry per;
  per.kept.rank = 1;
  per.kept.count[0] = batch;
  per.kept.stride[0] = per_matrix;
  per.reduced.rank = 1;
  per.reduced.count[0] = per_matrix;
  per.reduced.stride[0] = 1;
  per.reduced_contiguous = true;
  ASSIGN_OR_RETURN(BufferPtr all_finite, ops.Allocate(device, batch));
  RETURN_IF_ERROR(ops.Reduce(ReduceKind::kAll, DType::kBool, finite, per, all_finite,
                             /*scale=*/1.0, /*extreme=*/nullptr));
  std::vector<uint8_t> flags(batch);
  ASSIGN_OR_RETURN(std::unique_ptr<PendingRead> read,
                   backend.ReadToHost(all_finite, 0, batch, flags.data()));
  RETURN_IF_ERROR(read->Wait());
  for (int64_t i = 0; i < batch; ++i) {
    if (!flags[i]) return i;
  }
  return -1;
}

}  // namespace

int LinalgResultCount(v1::LinalgOp op, bool compute_uv) {
  switch (op) {
    case v1::LINALG_OP_SOLVE:
    case v1::LINALG_OP_INV:
    case v1::LINALG_OP_CHOLESKY:
    case v1::LINALG_OP_DET:
      return 1;
    case v1::LINALG_OP_QR:
    case v1::LINALG_OP_SLOGDET:
      return 2;
    case v1::LINALG_OP_EIGH:
      return compute_uv ? 2 : 1;
    case v1::LINALG_OP_SVD:
      return compute_uv ? 3 : 1;
    default:
      return 0;
  }
}

absl::StatusOr<PlannedLinalg> PlanLinalgOp(const OpContext& context, const v1::LinalgOpSpec& spec,
                                           absl::string_view field) {
  PlannedLinalg p;
  p.op = spec.op();
  const char* name = OpName(p.op);
  if (name == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".op: unknown linalg op ", spec.op()));
  }
  const std::string a_field = absl::StrCat(field, ".a"), b_field = absl::StrCat(field, ".b");
  if (spec.a().kind_case() == v1::Operand::kScalar) {
    return absl::InvalidArgumentError(
        absl::StrCat(a_field, ": ", name, " takes an array (a handle), not a scalar"));
  }
  ASSIGN_OR_RETURN(p.a, context.resolve(spec.a(), a_field));
  const Array& a = *p.a;
  p.dtype = a.dtype;
  if (!IsLinalgDType(a.dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(
        a_field, ": ", name, " takes float32, float64, complex64 or complex128 matrices, got ",
        DTypeName(a.dtype), " (cast with astype)"));
  }
  p.real = RealPartDType(a.dtype);
  const size_t rank = a.shape.size();
  if (rank < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        a_field, ": ", name, " takes matrices (2 or more axes), got shape ", ShapeString(a.shape)));
  }
  p.m = a.shape[rank - 2];
  p.n = a.shape[rank - 1];
  p.stack.assign(a.shape.begin(), a.shape.end() - 2);
  const bool square = p.op != v1::LINALG_OP_QR && p.op != v1::LINALG_OP_SVD;
  if (square && p.m != p.n) {
    return absl::InvalidArgumentError(
        absl::StrCat(a_field, ": ", name, " takes square matrices, got shape ",
                     ShapeString(a.shape), " (", p.m, " x ", p.n, ")"));
  }
  if (p.m > kMaxLinalgDim || p.n > kMaxLinalgDim) {
    return absl::ResourceExhaustedError(absl::StrCat(a_field, ": matrices of ", p.m, " x ", p.n,
                                                     " are over the bound of ", kMaxLinalgDim,
                                                     " rows and columns per matrix"));
  }
  p.batch = 1;
  for (int64_t dim : p.stack) {
    ASSIGN_OR_RETURN(p.batch, CheckedMul(p.batch, dim, a_field));
  }
  if (p.batch > kMaxLinalgBatch) {
    return absl::ResourceExhaustedError(absl::StrCat(a_field, ": a stack of ", p.batch,
                                                     " matrices is over the bound of ",
                                                     kMaxLinalgBatch, " per request"));
  }
  // Every size the execution computes, checked once here: the largest is a stack of matrices
  // max(m, n) x max(m, n) (a full SVD's U or Vh).
  const int64_t big = std::max(p.m, p.n);
  ASSIGN_OR_RETURN(const int64_t square_elements, CheckedMul(big, big, a_field));
  ASSIGN_OR_RETURN(const int64_t stack_elements, CheckedMul(square_elements, p.batch, a_field));
  RETURN_IF_ERROR(CheckedMul(stack_elements, DTypeSize(p.dtype), a_field).status());

  if (p.op == v1::LINALG_OP_SOLVE) {
    if (spec.b().kind_case() != v1::Operand::kHandle &&
        spec.b().kind_case() != v1::Operand::kVariable) {
      return absl::InvalidArgumentError(
          absl::StrCat(b_field, ": solve takes the right-hand sides as an array (a handle)"));
    }
    ASSIGN_OR_RETURN(p.b, context.resolve(spec.b(), b_field));
    const Array& b = *p.b;
    if (b.dtype != a.dtype) {
      return absl::InvalidArgumentError(
          absl::StrCat(b_field, ": dtype ", DTypeName(b.dtype), " differs from ", a_field, "'s ",
                       DTypeName(a.dtype), " (cast one with astype)"));
    }
    const Shape vector = Appended(p.stack, {p.n});
    if (b.shape == vector) {
      p.b_vector = true;
      p.nrhs = 1;
    } else if (b.shape.size() == rank &&
               std::equal(p.stack.begin(), p.stack.end(), b.shape.begin()) &&
               b.shape[rank - 2] == p.n) {
      p.nrhs = b.shape[rank - 1];
      if (p.nrhs > kMaxLinalgDim) {
        return absl::ResourceExhaustedError(absl::StrCat(b_field, ": ", p.nrhs,
                                                         " right-hand sides are over the bound of ",
                                                         kMaxLinalgDim, " per matrix"));
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          b_field, ": shape ", ShapeString(b.shape), " does not match ", a_field, "'s ",
          ShapeString(a.shape), ": solve takes b of shape ", ShapeString(vector),
          " (one right-hand side per matrix) or (", absl::StrJoin(p.stack, ", "),
          p.stack.empty() ? "" : ", ", p.n, ", k) (k of them); broadcast the stack axes first"));
    }
  } else if (spec.b().kind_case() != v1::Operand::KIND_NOT_SET) {
    return absl::InvalidArgumentError(
        absl::StrCat(b_field, ": only solve takes a second operand; ", name, " takes a alone"));
  }
  p.upper = spec.upper();
  p.full_matrices = spec.full_matrices();
  p.compute_uv = spec.compute_uv();

  // The device holding most of a's elements (copies counted; the lowest id on a tie): the
  // gather then moves the least.
  std::map<int, int64_t> held;
  for (const Chunk& chunk : a.chunks) held[chunk.spec.device] += NumElements(chunk.spec.box);
  int64_t most = -1;
  for (const auto& [device, elements] : held) {
    if (elements > most) {
      most = elements;
      p.device = device;
    }
  }

  const int64_t k = std::min(p.m, p.n);
  switch (p.op) {
    case v1::LINALG_OP_SOLVE:
      p.results = {p.b->shape};
      p.dtypes = {p.dtype};
      break;
    case v1::LINALG_OP_INV:
    case v1::LINALG_OP_CHOLESKY:
      p.results = {a.shape};
      p.dtypes = {p.dtype};
      break;
    case v1::LINALG_OP_QR: {
      const int64_t q = p.full_matrices ? p.m : k;
      p.results = {Appended(p.stack, {p.m, q}), Appended(p.stack, {q, p.n})};
      p.dtypes = {p.dtype, p.dtype};
      break;
    }
    case v1::LINALG_OP_EIGH:
      p.results = {Appended(p.stack, {p.n})};
      p.dtypes = {p.real};
      if (p.compute_uv) {
        p.results.push_back(a.shape);
        p.dtypes.push_back(p.dtype);
      }
      break;
    case v1::LINALG_OP_SVD:
      if (p.compute_uv) {
        const int64_t u = p.full_matrices ? p.m : k, v = p.full_matrices ? p.n : k;
        p.results = {Appended(p.stack, {p.m, u}), Appended(p.stack, {k}),
                     Appended(p.stack, {v, p.n})};
        p.dtypes = {p.dtype, p.real, p.dtype};
      } else {
        p.results = {Appended(p.stack, {k})};
        p.dtypes = {p.real};
      }
      break;
    case v1::LINALG_OP_DET:
      p.results = {p.stack};
      p.dtypes = {p.dtype};
      break;
    case v1::LINALG_OP_SLOGDET:
      p.results = {p.stack, p.stack};
      p.dtypes = {p.dtype, p.real};
      break;
    default:
      break;
  }
  return p;
}

std::vector<ArrayMeta> LinalgResultMetas(const PlannedLinalg& planned) {
  std::vector<ArrayMeta> metas;
  for (size_t r = 0; r < planned.results.size(); ++r) {
    metas.push_back({planned.results[r], planned.dtypes[r], Mode::kReplica,
                     OneChunk(planned.device, planned.results[r])});
  }
  return metas;
}

absl::StatusOr<std::vector<OpResult>> ExecuteLinalg(const OpContext& context, Backend& backend,
                                                    const PlannedLinalg& p) {
  DeviceOps& ops = *context.ops;
  const int d = p.device;
  const DType dtype = p.dtype;
  const int64_t size = DTypeSize(dtype);
  const int64_t m = p.m, n = p.n, k = std::min(m, n), batch = p.batch;
  const int64_t total = batch * m * n;  // bounded by PlanLinalgOp

  std::vector<OpResult> results;
  for (size_t r = 0; r < p.results.size(); ++r) {
    OpResult result{p.results[r], p.dtypes[r], Mode::kReplica, {}};
    ASSIGN_OR_RETURN(result.chunks, AllocateChunks(ops, result.dtype, OneChunk(d, result.shape)));
    results.push_back(std::move(result));
  }
  auto buffer_of = [&](size_t r) { return results[r].chunks.front().buffer; };
  RETURN_IF_ERROR(context.CheckAlive());

  const bool empty_b = p.op == v1::LINALG_OP_SOLVE && p.nrhs == 0;
  if (total == 0 || empty_b) {
    // Nothing to factorize. What still has elements is what NumPy gives empty matrices: the
    // identity for a complete Q and for U and Vh of a full SVD, and det 1 (sign 1, log 0).
    for (size_t r = 0; r < results.size(); ++r) {
      const Shape& shape = results[r].shape;
      if (NumElements(shape) == 0) continue;
      if (p.op == v1::LINALG_OP_DET || p.op == v1::LINALG_OP_SLOGDET) {
        RETURN_IF_ERROR(
            FillChunks(ops, results[r].dtype, results[r].chunks, Scalar::Int(r == 0 ? 1 : 0)));
      } else if (shape.size() >= 2 && p.op != v1::LINALG_OP_SOLVE) {
        RETURN_IF_ERROR(FillMatrices(ops, results[r].dtype, buffer_of(r), batch,
                                     shape[shape.size() - 2], shape.back(), Generator::Kind::kEye,
                                     0));
      } else {
        RETURN_IF_ERROR(FillChunks(ops, results[r].dtype, results[r].chunks, Scalar::Int(0)));
      }
    }
    return results;
  }

  // a, whole on device d, then column-major in a scratch buffer the factorization may overwrite.
  ASSIGN_OR_RETURN(std::vector<Chunk> gathered,
                   ReadOnlyChunksIn(ops, *p.a, OneChunk(d, p.a->shape), context.alive));
  ASSIGN_OR_RETURN(BufferPtr a_col, ops.Allocate(d, total * size));
  RETURN_IF_ERROR(Transpose(ops, dtype, gathered.front().buffer, total, batch, n, m, n, a_col));
  gathered.clear();
  // How messages name matrix i of the operand.
  auto which_matrix = [&](int64_t i) {
    return p.stack.empty() ? std::string("the matrix")
                           : absl::StrCat("matrix ", i, " of the stack (C order)");
  };
  // Before any result buffer is set up: a refused operand costs only the check.
  if (p.op == v1::LINALG_OP_SVD || p.op == v1::LINALG_OP_EIGH) {
    ASSIGN_OR_RETURN(const int64_t bad,
                     FirstNonFiniteMatrix(ops, backend, dtype, d, a_col, batch, m, n,
                                          /*lower_only=*/p.op == v1::LINALG_OP_EIGH));
    if (bad >= 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("spec.a: ", which_matrix(bad), " holds a NaN or an infinity; ", OpName(p.op),
                       " needs finite entries (NumPy: LinAlgError: ",
                       p.op == v1::LINALG_OP_SVD ? "SVD" : "Eigenvalues", " did not converge)"));
    }
  }
  ASSIGN_OR_RETURN(BufferPtr info, ops.Allocate(d, batch * 4));

  DenseFactorization f;
  f.batch = batch;
  f.m = m;
  f.n = n;
  f.a = a_col;
  f.info = info;
  f.upper = p.upper;
  f.full_matrices = p.full_matrices;
  f.compute_uv = p.compute_uv;
  // Results the post-processing below reads from: column-major buffers.
  BufferPtr b_col, q_col, u_col, vh_col;
  const int64_t q = p.full_matrices ? m : k;       // QR's Q columns, R rows; SVD's U columns
  const int64_t v_rows = p.full_matrices ? n : k;  // SVD's Vh rows
  switch (p.op) {
    case v1::LINALG_OP_SOLVE:
    case v1::LINALG_OP_INV: {
      f.kind = Factorization::kSolve;
      f.nrhs = p.op == v1::LINALG_OP_INV ? n : p.nrhs;
      ASSIGN_OR_RETURN(b_col, ops.Allocate(d, batch * n * f.nrhs * size));
      if (p.op == v1::LINALG_OP_INV) {
        RETURN_IF_ERROR(FillMatrices(ops, dtype, b_col, batch, n, n, Generator::Kind::kEye, 0));
      } else {
        ASSIGN_OR_RETURN(std::vector<Chunk> b_gathered,
                         ReadOnlyChunksIn(ops, *p.b, OneChunk(d, p.b->shape), context.alive));
        RETURN_IF_ERROR(Transpose(ops, dtype, b_gathered.front().buffer, batch * n * f.nrhs, batch,
                                  f.nrhs, n, f.nrhs, b_col));
      }
      f.b = b_col;
      break;
    }
    case v1::LINALG_OP_CHOLESKY:
      f.kind = Factorization::kCholesky;
      break;
    case v1::LINALG_OP_QR: {
      f.kind = Factorization::kQr;
      ASSIGN_OR_RETURN(q_col, ops.Allocate(d, batch * m * q * size));
      // Column-major m x q read as C order is q x m: its identity is the same eye.
      RETURN_IF_ERROR(FillMatrices(ops, dtype, q_col, batch, q, m, Generator::Kind::kEye, 0));
      f.out0 = q_col;
      break;
    }
    case v1::LINALG_OP_EIGH:
      f.kind = Factorization::kEigh;
      f.out0 = buffer_of(0);
      break;
    case v1::LINALG_OP_SVD: {
      f.kind = Factorization::kSvd;
      if (p.compute_uv) {
        f.out0 = buffer_of(1);
        ASSIGN_OR_RETURN(u_col, ops.Allocate(d, batch * m * q * size));
        ASSIGN_OR_RETURN(vh_col, ops.Allocate(d, batch * v_rows * n * size));
        f.out1 = u_col;
        f.out2 = vh_col;
      } else {
        f.out0 = buffer_of(0);
      }
      break;
    }
    case v1::LINALG_OP_DET:
    case v1::LINALG_OP_SLOGDET:
      f.kind = Factorization::kSlogdet;
      f.det = p.op == v1::LINALG_OP_DET;
      f.out0 = buffer_of(0);
      if (!f.det) f.out1 = buffer_of(1);
      break;
    default:
      return absl::InternalError("linalg: an op the planner refuses");
  }
  RETURN_IF_ERROR(context.CheckAlive());
  RETURN_IF_ERROR(ops.Factorize(dtype, f));

  // The factorization's status, read back now: a failure is the request's error (NumPy raises
  // LinAlgError), so it must be known before the results are registered.
  if (f.kind != Factorization::kSlogdet) {
    std::vector<int32_t> infos(batch);
    ASSIGN_OR_RETURN(std::unique_ptr<PendingRead> read,
                     backend.ReadToHost(info, 0, batch * 4, infos.data()));
    RETURN_IF_ERROR(read->Wait());
    for (int64_t i = 0; i < batch; ++i) {
      if (infos[i] == 0) continue;
      const std::string which = which_matrix(i);
      if (infos[i] < 0) {
        return absl::InternalError(absl::StrCat("linalg ", OpName(p.op), ": argument ", -infos[i],
                                                " refused by the library"));
      }
      switch (p.op) {
        case v1::LINALG_OP_SOLVE:
        case v1::LINALG_OP_INV:
          return absl::FailedPreconditionError(
              absl::StrCat("spec.a: ", which, " is singular (U[", infos[i] - 1, ", ", infos[i] - 1,
                           "] of its LU factorization is exactly zero); ", OpName(p.op),
                           " needs a nonsingular matrix (NumPy: LinAlgError: Singular matrix)"));
        case v1::LINALG_OP_CHOLESKY:
          return absl::FailedPreconditionError(absl::StrCat(
              "spec.a: ", which, " is not positive definite (its leading minor of order ", infos[i],
              " is not positive); cholesky needs a Hermitian positive-definite matrix (NumPy: "
              "LinAlgError: Matrix is not positive definite)"));
        default:
          return absl::FailedPreconditionError(absl::StrCat(
              "spec.a: ", OpName(p.op), " of ", which, " did not converge (LAPACK info ", infos[i],
              "); NumPy: LinAlgError: did not converge"));
      }
    }
  }

  // Column-major results back to C order, into the results' chunks.
  switch (p.op) {
    case v1::LINALG_OP_SOLVE:
    case v1::LINALG_OP_INV:
      RETURN_IF_ERROR(
          Transpose(ops, dtype, b_col, batch * n * f.nrhs, batch, n, f.nrhs, n, buffer_of(0)));
      break;
    case v1::LINALG_OP_CHOLESKY: {
      ASSIGN_OR_RETURN(BufferPtr factor, ops.Allocate(d, total * size));
      RETURN_IF_ERROR(Transpose(ops, dtype, a_col, total, batch, n, n, n, factor));
      RETURN_IF_ERROR(KeepTriangle(ops, dtype, d, factor, batch, n, n, p.upper, buffer_of(0)));
      break;
    }
    case v1::LINALG_OP_QR: {
      RETURN_IF_ERROR(Transpose(ops, dtype, q_col, batch * m * q, batch, m, q, m, buffer_of(0)));
      ASSIGN_OR_RETURN(BufferPtr r_full, ops.Allocate(d, batch * q * n * size));
      RETURN_IF_ERROR(Transpose(ops, dtype, a_col, total, batch, q, n, m, r_full));
      RETURN_IF_ERROR(
          KeepTriangle(ops, dtype, d, r_full, batch, q, n, /*upper=*/true, buffer_of(1)));
      break;
    }
    case v1::LINALG_OP_EIGH:
      if (p.compute_uv) {
        RETURN_IF_ERROR(Transpose(ops, dtype, a_col, total, batch, n, n, n, buffer_of(1)));
      }
      break;
    case v1::LINALG_OP_SVD:
      if (p.compute_uv) {
        RETURN_IF_ERROR(Transpose(ops, dtype, u_col, batch * m * q, batch, m, q, m, buffer_of(0)));
        RETURN_IF_ERROR(Transpose(ops, dtype, vh_col, batch * v_rows * n, batch, v_rows, n, v_rows,
                                  buffer_of(2)));
      }
      break;
    default:
      break;
  }
  return results;
}

}  // namespace distarray
