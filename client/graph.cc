#include "distarray/graph.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace distarray::graph {
namespace {

using Block = google::protobuf::RepeatedPtrField<v1::Statement>;

bool ReadsOperand(const v1::Operand& operand, const std::string& name) {
  return operand.kind_case() == v1::Operand::kVariable && operand.variable() == name;
}

bool BlockReads(const Block& block, int from, const std::string& name);

// Whether a statement reads variable `name` (nested bodies included).
bool Reads(const v1::Statement& s, const std::string& name) {
  switch (s.op_case()) {
    case v1::Statement::kElementwise:
      for (const v1::Operand& o : s.elementwise().operands()) {
        if (ReadsOperand(o, name)) return true;
      }
      return false;
    case v1::Statement::kReduce:
      return ReadsOperand(s.reduce().operand(), name);
    case v1::Statement::kMatmul:
      return ReadsOperand(s.matmul().a(), name) || ReadsOperand(s.matmul().b(), name) ||
             ReadsOperand(s.matmul().sparse_a().indptr(), name) ||
             ReadsOperand(s.matmul().sparse_a().indices(), name) ||
             ReadsOperand(s.matmul().sparse_a().data(), name);
    case v1::Statement::kReshard:
      return s.reshard().source() == name;
    case v1::Statement::kChangeMode:
      return s.change_mode().source() == name;
    case v1::Statement::kCopy:
      return s.copy() == name;
    case v1::Statement::kLinalg:
      return ReadsOperand(s.linalg().spec().a(), name) || ReadsOperand(s.linalg().spec().b(), name);
    case v1::Statement::kManipulate: {
      const v1::ManipulationSpec& m = s.manipulate();
      for (const v1::Operand& o : m.concat().sources()) {
        if (ReadsOperand(o, name)) return true;
      }
      return ReadsOperand(m.get_item().source(), name) ||
             ReadsOperand(m.set_item().target(), name) ||
             ReadsOperand(m.set_item().value(), name) ||
             ReadsOperand(m.permute_dims().source(), name) ||
             ReadsOperand(m.reshape().source(), name) ||
             ReadsOperand(m.broadcast_to().source(), name) ||
             ReadsOperand(m.sort().source(), name) ||
             ReadsOperand(m.search_sorted().sorted(), name) ||
             ReadsOperand(m.search_sorted().values(), name) ||
             ReadsOperand(m.scan().source(), name);
    }
    case v1::Statement::kCreate:
      return false;
    case v1::Statement::kWhileLoop:
      return s.while_loop().condition() == name || BlockReads(s.while_loop().body(), 0, name);
    case v1::Statement::kIfElse:
      return s.if_else().condition() == name || BlockReads(s.if_else().then_body(), 0, name) ||
             BlockReads(s.if_else().else_body(), 0, name);
    case v1::Statement::OP_NOT_SET:
      return false;
  }
  return false;
}

bool BlockReads(const Block& block, int from, const std::string& name) {
  for (int i = from; i < block.size(); ++i) {
    if (Reads(block[i], name)) return true;
  }
  return false;
}

// Whether a statement from `from` on assigns variable `name` (nested bodies included).
bool BlockAssigns(const Block& block, int from, const std::string& name) {
  for (int i = from; i < block.size(); ++i) {
    const v1::Statement& s = block[i];
    if (s.target() == name) return true;
    for (const std::string& target : s.linalg().targets()) {
      if (target == name) return true;
    }
    if (s.has_while_loop() && BlockAssigns(s.while_loop().body(), 0, name)) return true;
    if (s.has_if_else() && (BlockAssigns(s.if_else().then_body(), 0, name) ||
                            BlockAssigns(s.if_else().else_body(), 0, name))) {
      return true;
    }
  }
  return false;
}

ProgramBuilder& BuilderOf(std::initializer_list<const VarOperand*> operands) {
  for (const VarOperand* o : operands) {
    if (o->var() != nullptr) return o->var()->builder();
  }
  // Only scalars: there is no program to record into. A programming error, like indexing out
  // of range; say so instead of crashing later.
  std::fprintf(stderr, "distarray::graph: an op needs at least one Var operand\n");
  std::abort();
}

Var Binary(v1::ElementwiseOp op, const VarOperand& a, const VarOperand& b) {
  return BuilderOf({&a, &b}).Ufunc(op, {a, b});
}

}  // namespace

std::string ProgramBuilder::Fresh(const std::string& hint) {
  return absl::StrCat("_", hint, next_id_++);
}

Var ProgramBuilder::Emit(v1::Statement statement, const std::string& hint) {
  statement.set_target(Fresh(hint));
  Var var(this, statement.target());
  *blocks_.back()->Add() = std::move(statement);
  return var;
}

Var ProgramBuilder::Input(const std::string& name) {
  program_.add_inputs(name);
  return Var(this, name);
}

void ProgramBuilder::Output(const std::string& name, const Var& var) {
  AssignTo(name, var);
  program_.add_outputs(name);
}

void ProgramBuilder::ValueOutput(const std::string& name, const Var& var) {
  AssignTo(name, var);
  program_.add_value_outputs(name);
}

Var ProgramBuilder::Ufunc(v1::ElementwiseOp op, std::initializer_list<VarOperand> operands) {
  v1::Statement s;
  for (const VarOperand& o : operands) *s.mutable_elementwise()->add_operands() = o.proto();
  s.mutable_elementwise()->set_op(op);
  return Emit(std::move(s), "t");
}

Var ProgramBuilder::AsType(const Var& a, v1::DType dtype) {
  v1::Statement s;
  s.mutable_elementwise()->set_op(v1::ELEMENTWISE_OP_ASTYPE);
  s.mutable_elementwise()->add_operands()->set_variable(a.name());
  s.mutable_elementwise()->set_dtype(dtype);
  return Emit(std::move(s), "t");
}

Var ProgramBuilder::Reduce(const Var& a, v1::ReduceOp op, std::vector<int32_t> axes, bool keepdims,
                           bool combine) {
  v1::Statement s;
  v1::ReduceOpSpec* spec = s.mutable_reduce();
  spec->set_op(op);
  spec->mutable_operand()->set_variable(a.name());
  for (int32_t axis : axes) spec->add_axes(axis);
  spec->set_keepdims(keepdims);
  spec->set_combine(combine);
  return Emit(std::move(s), "r");
}

Var ProgramBuilder::Matmul(const Var& a, const Var& b, bool allow_tf32) {
  v1::Statement s;
  s.mutable_matmul()->mutable_a()->set_variable(a.name());
  s.mutable_matmul()->mutable_b()->set_variable(b.name());
  s.mutable_matmul()->set_allow_tf32(allow_tf32);
  return Emit(std::move(s), "m");
}

Var ProgramBuilder::SymmetricMatmul(const Var& a, const Var& b) {
  v1::Statement s;
  s.mutable_matmul()->mutable_a()->set_variable(a.name());
  s.mutable_matmul()->mutable_b()->set_variable(b.name());
  s.mutable_matmul()->set_a_symmetric(true);
  return Emit(std::move(s), "m");
}

Var ProgramBuilder::SparseMatmul(const Var& indptr, const Var& indices, const Var& data,
                                 const v1::CsrMatrix& shape_and_blocks, const Var& b) {
  v1::Statement s;
  v1::CsrMatrix* a = s.mutable_matmul()->mutable_sparse_a();
  *a->mutable_shape() = shape_and_blocks.shape();
  *a->mutable_blocks() = shape_and_blocks.blocks();
  a->mutable_indptr()->set_variable(indptr.name());
  a->mutable_indices()->set_variable(indices.name());
  a->mutable_data()->set_variable(data.name());
  s.mutable_matmul()->mutable_b()->set_variable(b.name());
  return Emit(std::move(s), "m");
}

Var ProgramBuilder::Reshard(const Var& a, const v1::IndexMap& index_map,
                            std::optional<v1::Mode> mode) {
  v1::Statement s;
  s.mutable_reshard()->set_source(a.name());
  *s.mutable_reshard()->mutable_index_map() = index_map;
  if (mode) s.mutable_reshard()->set_mode(*mode);
  return Emit(std::move(s), "s");
}

Var ProgramBuilder::ChangeMode(const Var& a, v1::Mode mode) {
  v1::Statement s;
  s.mutable_change_mode()->set_source(a.name());
  s.mutable_change_mode()->set_mode(mode);
  return Emit(std::move(s), "s");
}

Var ProgramBuilder::GetItem(const Var& a, const std::vector<Index>& key) {
  v1::Statement s;
  v1::GetItemSpec* spec = s.mutable_manipulate()->mutable_get_item();
  spec->mutable_source()->set_variable(a.name());
  *spec->mutable_key() = MakeIndexKey(key);
  return Emit(std::move(s), "x");
}

Var ProgramBuilder::SetItem(const Var& target, const std::vector<Index>& key,
                            const VarOperand& value) {
  // The statement assigns a fresh variable, so `target` keeps its value (Vars are values);
  // AssignTo renames it to the target's own name where that costs no copy (a loop's variable).
  v1::Statement s;
  v1::SetItemSpec* spec = s.mutable_manipulate()->mutable_set_item();
  spec->mutable_target()->set_variable(target.name());
  *spec->mutable_key() = MakeIndexKey(key);
  *spec->mutable_value() = value.proto();
  return Emit(std::move(s), "x");
}

Var ProgramBuilder::PermuteDims(const Var& a, const std::vector<int32_t>& axes) {
  v1::Statement s;
  v1::PermuteDimsSpec* spec = s.mutable_manipulate()->mutable_permute_dims();
  spec->mutable_source()->set_variable(a.name());
  for (int32_t axis : axes) spec->add_axes(axis);
  return Emit(std::move(s), "x");
}

Var ProgramBuilder::Reshape(const Var& a, const std::vector<int64_t>& shape) {
  v1::Statement s;
  v1::ReshapeSpec* spec = s.mutable_manipulate()->mutable_reshape();
  spec->mutable_source()->set_variable(a.name());
  for (int64_t d : shape) spec->mutable_shape()->add_dims(d);
  return Emit(std::move(s), "x");
}

Var ProgramBuilder::BroadcastTo(const Var& a, const std::vector<int64_t>& shape) {
  v1::Statement s;
  v1::BroadcastToSpec* spec = s.mutable_manipulate()->mutable_broadcast_to();
  spec->mutable_source()->set_variable(a.name());
  for (int64_t d : shape) spec->mutable_shape()->add_dims(d);
  return Emit(std::move(s), "x");
}

Var ProgramBuilder::Sort(const Var& a, int32_t axis, bool descending, bool indices) {
  v1::Statement s;
  v1::SortSpec* spec = s.mutable_manipulate()->mutable_sort();
  spec->mutable_source()->set_variable(a.name());
  spec->set_axis(axis);
  spec->set_descending(descending);
  spec->set_indices(indices);
  return Emit(std::move(s), "x");
}

Var ProgramBuilder::Create(const std::vector<int64_t>& shape, v1::DType dtype,
                           const v1::IndexMap& index_map, const v1::Fill& fill) {
  v1::Statement s;
  v1::CreateStatement* create = s.mutable_create();
  for (int64_t d : shape) create->mutable_shape()->add_dims(d);
  create->set_dtype(dtype);
  *create->mutable_index_map() = index_map;
  *create->mutable_fill() = fill;
  return Emit(std::move(s), "new");
}

Var ProgramBuilder::Scan(const Var& a, int32_t axis, bool product) {
  v1::Statement s;
  v1::ScanSpec* spec = s.mutable_manipulate()->mutable_scan();
  spec->mutable_source()->set_variable(a.name());
  spec->set_axis(axis);
  spec->set_product(product);
  return Emit(std::move(s), "x");
}

Var ProgramBuilder::SearchSorted(const Var& sorted, const Var& values, bool right) {
  v1::Statement s;
  v1::SearchSortedSpec* spec = s.mutable_manipulate()->mutable_search_sorted();
  spec->mutable_sorted()->set_variable(sorted.name());
  spec->mutable_values()->set_variable(values.name());
  spec->set_right(right);
  return Emit(std::move(s), "x");
}

Var ProgramBuilder::Concat(const Vars& vars, int32_t axis, bool stack) {
  v1::Statement s;
  v1::ConcatSpec* spec = s.mutable_manipulate()->mutable_concat();
  for (const Var& v : vars) spec->add_sources()->set_variable(v.name());
  spec->set_axis(axis);
  spec->set_stack(stack);
  return Emit(std::move(s), "x");
}

Vars ProgramBuilder::Linalg(v1::LinalgOp op, const Var& a, const Var* b,
                            const LinalgOptions& options) {
  v1::Statement s;
  v1::LinalgStatement* linalg = s.mutable_linalg();
  v1::LinalgOpSpec* spec = linalg->mutable_spec();
  spec->set_op(op);
  spec->mutable_a()->set_variable(a.name());
  if (b != nullptr) spec->mutable_b()->set_variable(b->name());
  spec->set_upper(options.upper);
  spec->set_full_matrices(options.full_matrices);
  spec->set_compute_uv(options.compute_uv);
  int results = 1;
  switch (op) {
    case v1::LINALG_OP_QR:
    case v1::LINALG_OP_SLOGDET:
      results = 2;
      break;
    case v1::LINALG_OP_EIGH:
      results = options.compute_uv ? 2 : 1;
      break;
    case v1::LINALG_OP_SVD:
      results = options.compute_uv ? 3 : 1;
      break;
    default:
      break;
  }
  Vars out;
  for (int r = 0; r < results; ++r) {
    out.push_back(Var(this, Fresh("la")));
    linalg->add_targets(out.back().name());
  }
  *blocks_.back()->Add() = std::move(s);
  return out;
}

void ProgramBuilder::AssignTo(const std::string& target, const Var& value) {
  if (value.name() == target) return;
  Block& block = *blocks_.back();
  for (int i = block.size() - 1; i >= 0; --i) {
    if (block[i].target() != value.name()) continue;
    // The statement that made `value` in this block: give its result the target's name when
    // nothing after it reads or assigns `value` by its old name (a loop after it that assigns
    // the name carries it: renamed, the loop's variable would become local to its body), and
    // nothing after it reads the target's current value.
    if (value.name()[0] == '_' && !BlockReads(block, i + 1, value.name()) &&
        !BlockAssigns(block, i + 1, value.name()) && !BlockReads(block, i + 1, target)) {
      block[i].set_target(target);
      return;
    }
    break;
  }
  v1::Statement copy;
  copy.set_target(target);
  copy.set_copy(value.name());
  *block.Add() = std::move(copy);
}

void ProgramBuilder::AssignAll(const Vars& targets, const Vars& values) {
  // Simultaneous assignment: a value that is itself one of the targets (body returning
  // {v[1], v[0]}) is copied aside first, so no assignment reads another's new value.
  Vars staged = values;
  for (size_t i = 0; i < staged.size(); ++i) {
    Var& value = staged[i];
    for (size_t j = 0; j < targets.size(); ++j) {
      if (j != i && value.name() == targets[j].name()) {
        value = CopiesOf({value}, "t").front();
        break;
      }
    }
  }
  for (size_t i = 0; i < targets.size() && i < staged.size(); ++i) {
    AssignTo(targets[i].name(), staged[i]);
  }
}

Vars ProgramBuilder::CopiesOf(const Vars& vars, const std::string& hint) {
  Vars copies;
  for (const Var& v : vars) {
    v1::Statement s;
    s.set_copy(v.name());
    copies.push_back(Emit(std::move(s), hint));
  }
  return copies;
}

Vars ProgramBuilder::WhileLoop(const CondFn& cond, const BodyFn& body, const Vars& carried,
                               int64_t max_iterations) {
  // The loop updates its own variables, so the Vars passed in keep their values.
  const Vars loop_vars = CopiesOf(carried, "loop");
  const std::string condition = Fresh("cond");
  AssignTo(condition, cond(loop_vars));

  v1::Statement s;
  v1::WhileLoop* loop = s.mutable_while_loop();
  loop->set_condition(condition);
  loop->set_max_iterations(max_iterations);
  blocks_.push_back(loop->mutable_body());
  AssignAll(loop_vars, body(loop_vars));
  AssignTo(condition, cond(loop_vars));
  blocks_.pop_back();
  *blocks_.back()->Add() = std::move(s);
  return loop_vars;
}

Vars ProgramBuilder::Cond(const Var& pred, const BodyFn& then_fn, const BodyFn& else_fn,
                          const Vars& operands) {
  const Vars results = CopiesOf(operands, "if");
  v1::Statement s;
  v1::IfElse* branch = s.mutable_if_else();
  branch->set_condition(pred.name());
  for (auto [fn, block] : {std::pair{&then_fn, branch->mutable_then_body()},
                           std::pair{&else_fn, branch->mutable_else_body()}}) {
    blocks_.push_back(block);
    AssignAll(results, (*fn)(results));
    blocks_.pop_back();
  }
  *blocks_.back()->Add() = std::move(s);
  return results;
}

Var operator+(const VarOperand& a, const VarOperand& b) {
  return Binary(v1::ELEMENTWISE_OP_ADD, a, b);
}
Var operator-(const VarOperand& a, const VarOperand& b) {
  return Binary(v1::ELEMENTWISE_OP_SUBTRACT, a, b);
}
Var operator*(const VarOperand& a, const VarOperand& b) {
  return Binary(v1::ELEMENTWISE_OP_MULTIPLY, a, b);
}
Var operator/(const VarOperand& a, const VarOperand& b) {
  return Binary(v1::ELEMENTWISE_OP_DIVIDE, a, b);
}
Var operator<(const VarOperand& a, const VarOperand& b) {
  return Binary(v1::ELEMENTWISE_OP_LESS, a, b);
}
Var operator<=(const VarOperand& a, const VarOperand& b) {
  return Binary(v1::ELEMENTWISE_OP_LESS_EQUAL, a, b);
}
Var operator>(const VarOperand& a, const VarOperand& b) {
  return Binary(v1::ELEMENTWISE_OP_GREATER, a, b);
}
Var operator>=(const VarOperand& a, const VarOperand& b) {
  return Binary(v1::ELEMENTWISE_OP_GREATER_EQUAL, a, b);
}
Var operator==(const VarOperand& a, const VarOperand& b) {
  return Binary(v1::ELEMENTWISE_OP_EQUAL, a, b);
}
Var operator!=(const VarOperand& a, const VarOperand& b) {
  return Binary(v1::ELEMENTWISE_OP_NOT_EQUAL, a, b);
}
Var Where(const VarOperand& condition, const VarOperand& x, const VarOperand& y) {
  return BuilderOf({&condition, &x, &y}).Ufunc(v1::ELEMENTWISE_OP_WHERE, {condition, x, y});
}
Var Sqrt(const Var& a) { return a.builder().Ufunc(v1::ELEMENTWISE_OP_SQRT, {a}); }
Var All(const Var& a) { return a.builder().Reduce(a, v1::REDUCE_OP_ALL); }
Var Any(const Var& a) { return a.builder().Reduce(a, v1::REDUCE_OP_ANY); }
Var Sum(const Var& a, std::vector<int32_t> axes) {
  return a.builder().Reduce(a, v1::REDUCE_OP_SUM, std::move(axes));
}
Var Max(const Var& a, std::vector<int32_t> axes) {
  return a.builder().Reduce(a, v1::REDUCE_OP_MAX, std::move(axes));
}
Var Matmul(const Var& a, const Var& b) { return a.builder().Matmul(a, b); }
Var GetItem(const Var& a, const std::vector<Index>& key) { return a.builder().GetItem(a, key); }
Var SetItem(const Var& target, const std::vector<Index>& key, const VarOperand& value) {
  return target.builder().SetItem(target, key, value);
}
Var PermuteDims(const Var& a, const std::vector<int32_t>& axes) {
  return a.builder().PermuteDims(a, axes);
}
Var Reshape(const Var& a, const std::vector<int64_t>& shape) {
  return a.builder().Reshape(a, shape);
}
Var BroadcastTo(const Var& a, const std::vector<int64_t>& shape) {
  return a.builder().BroadcastTo(a, shape);
}
Var Sort(const Var& a, int32_t axis, bool descending) {
  return a.builder().Sort(a, axis, descending);
}
Var Argsort(const Var& a, int32_t axis, bool descending) {
  return a.builder().Sort(a, axis, descending, /*indices=*/true);
}
Var SearchSorted(const Var& sorted, const Var& values, bool right) {
  return sorted.builder().SearchSorted(sorted, values, right);
}
Var CumulativeSum(const Var& a, int32_t axis) { return a.builder().Scan(a, axis, false); }
Var CumulativeProd(const Var& a, int32_t axis) { return a.builder().Scan(a, axis, true); }

namespace {
ProgramBuilder& BuilderOfVars(const Vars& vars) {
  if (vars.empty()) {
    // As BuilderOf: no Var, no program to record into; a programming error.
    std::fprintf(stderr, "distarray::graph: Concat and Stack need at least one Var\n");
    std::abort();
  }
  return vars.front().builder();
}
}  // namespace

Var Concat(const Vars& vars, int32_t axis) {
  return BuilderOfVars(vars).Concat(vars, axis, /*stack=*/false);
}
Var Stack(const Vars& vars, int32_t axis) {
  return BuilderOfVars(vars).Concat(vars, axis, /*stack=*/true);
}

}  // namespace distarray::graph
