#include "server/graph/program_check.h"

#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/names.h"
#include "common/status_macros.h"
#include "common/strided_box.h"
#include "server/ops/linalg.h"

namespace distarray {
namespace {

class StructureChecker {
 public:
  StructureChecker(const ProgramLimits& limits, const ProgramCheckBounds& bounds)
      : limits_(limits), bounds_(bounds) {}

  absl::Status CheckBlock(const google::protobuf::RepeatedPtrField<v1::Statement>& block,
                          const std::string& field, int depth) {
    if (depth > limits_.max_depth) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": loops and branches nest at most ", limits_.max_depth, " deep"));
    }
    for (int i = 0; i < block.size(); ++i) {
      if (++statements_ > limits_.max_statements) {
        return absl::InvalidArgumentError(absl::StrCat(field, ": a program has at most ",
                                                       limits_.max_statements,
                                                       " statements, counted over every body"));
      }
      RETURN_IF_ERROR(CheckStatement(block[i], absl::StrCat(field, "[", i, "]"), depth));
    }
    return absl::OkStatus();
  }

 private:
  absl::Status CheckStatement(const v1::Statement& s, const std::string& field, int depth) {
    const bool control =
        s.op_case() == v1::Statement::kWhileLoop || s.op_case() == v1::Statement::kIfElse;
    if (control && !s.target().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".target: while_loop and if_else assign nothing; leave it empty"));
    }
    if (s.op_case() == v1::Statement::kLinalg && !s.target().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".target: linalg assigns its results to linalg.targets; leave target empty"));
    }
    if (!control && s.op_case() != v1::Statement::kLinalg &&
        s.op_case() != v1::Statement::OP_NOT_SET) {
      RETURN_IF_ERROR(ValidateVariableName(s.target(), field + ".target"));
    }
    switch (s.op_case()) {
      case v1::Statement::OP_NOT_SET:
        return absl::InvalidArgumentError(absl::StrCat(
            field,
            ": a statement needs an op (elementwise, reduce, matmul, reshard, change_mode, "
            "copy, manipulate, linalg, create, while_loop or if_else)"));
      case v1::Statement::kElementwise:
        if (!s.elementwise().out().empty()) {
          return absl::InvalidArgumentError(absl::StrCat(
              field, ".elementwise.out: not used in programs; the result is assigned to target"));
        }
        for (int i = 0; i < s.elementwise().operands_size(); ++i) {
          RETURN_IF_ERROR(CheckOperand(s.elementwise().operands(i),
                                       absl::StrCat(field, ".elementwise.operands[", i, "]")));
        }
        return absl::OkStatus();
      case v1::Statement::kReduce:
        return CheckOperand(s.reduce().operand(), field + ".reduce.operand");
      case v1::Statement::kMatmul:
        if (s.matmul().has_sparse_a()) {
          const v1::CsrMatrix& a = s.matmul().sparse_a();
          RETURN_IF_ERROR(CheckOperand(a.indptr(), field + ".matmul.sparse_a.indptr"));
          RETURN_IF_ERROR(CheckOperand(a.indices(), field + ".matmul.sparse_a.indices"));
          RETURN_IF_ERROR(CheckOperand(a.data(), field + ".matmul.sparse_a.data"));
          RETURN_IF_ERROR(CheckIndexMap(a.blocks(), field + ".matmul.sparse_a.blocks"));
        } else {
          RETURN_IF_ERROR(CheckOperand(s.matmul().a(), field + ".matmul.a"));
        }
        return CheckOperand(s.matmul().b(), field + ".matmul.b");
      case v1::Statement::kReshard:
        RETURN_IF_ERROR(ValidateVariableName(s.reshard().source(), field + ".reshard.source"));
        if (!s.reshard().has_index_map()) return absl::OkStatus();
        return CheckIndexMap(s.reshard().index_map(), field + ".reshard.index_map");
      case v1::Statement::kChangeMode:
        return ValidateVariableName(s.change_mode().source(), field + ".change_mode.source");
      case v1::Statement::kCopy:
        return ValidateVariableName(s.copy(), field + ".copy");
      case v1::Statement::kManipulate:
        return CheckManipulation(s.manipulate(), field + ".manipulate");
      case v1::Statement::kLinalg:
        return CheckLinalg(s.linalg(), field + ".linalg");
      case v1::Statement::kCreate:
        return CheckIndexMap(s.create().index_map(), field + ".create.index_map");
      case v1::Statement::kWhileLoop: {
        const v1::WhileLoop& loop = s.while_loop();
        RETURN_IF_ERROR(ValidateVariableName(loop.condition(), field + ".while_loop.condition"));
        if (loop.max_iterations() < 1 || loop.max_iterations() > limits_.max_loop_iterations) {
          return absl::InvalidArgumentError(
              absl::StrCat(field, ".while_loop.max_iterations: required, 1 to ",
                           limits_.max_loop_iterations, "; got ", loop.max_iterations()));
        }
        return CheckBlock(loop.body(), field + ".while_loop.body", depth + 1);
      }
      case v1::Statement::kIfElse: {
        const v1::IfElse& branch = s.if_else();
        RETURN_IF_ERROR(ValidateVariableName(branch.condition(), field + ".if_else.condition"));
        RETURN_IF_ERROR(CheckBlock(branch.then_body(), field + ".if_else.then_body", depth + 1));
        return CheckBlock(branch.else_body(), field + ".if_else.else_body", depth + 1);
      }
    }
    return absl::OkStatus();
  }

  // What NormalizeIndexMap checks that needs no shape: the shape comes with each run's arguments.
  absl::Status CheckIndexMap(const v1::IndexMap& map, const std::string& field) const {
    if (map.chunks_size() > bounds_.max_chunks) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".chunks: ", map.chunks_size(),
                                                     " chunks exceed the limit of ",
                                                     bounds_.max_chunks));
    }
    for (int c = 0; c < map.chunks_size(); ++c) {
      const v1::Chunk& chunk = map.chunks(c);
      if (chunk.device() < 0 || chunk.device() >= bounds_.num_devices) {
        return absl::InvalidArgumentError(absl::StrCat(field, ".chunks[", c, "].device: device ",
                                                       chunk.device(), " does not exist (",
                                                       bounds_.num_devices, " devices)"));
      }
      if (chunk.slices_size() > kMaxRank) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, ".chunks[", c, "].slices: ", chunk.slices_size(),
                         " slices; an array has at most ", kMaxRank, " dimensions"));
      }
      if (chunk.slices_size() != map.chunks(0).slices_size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            field, ".chunks[", c, "].slices: has ", chunk.slices_size(), " slices, chunks[0] has ",
            map.chunks(0).slices_size(), "; every chunk has one per dimension"));
      }
      for (int d = 0; d < chunk.slices_size(); ++d) {
        if (chunk.slices(d).has_step() && chunk.slices(d).step() == 0) {
          return absl::InvalidArgumentError(
              absl::StrCat(field, ".chunks[", c, "].slices[", d, "]: step must not be zero"));
        }
      }
    }
    return absl::OkStatus();
  }

  // An index array held in the daemon decides the plan by its values, which a program's check
  // does not read: programs index with listed positions (IndexList) only.
  static absl::Status CheckKey(const v1::IndexKey& key, const std::string& field) {
    for (int i = 0; i < key.items_size(); ++i) {
      if (!key.items(i).has_array()) continue;
      return absl::UnimplementedError(absl::StrCat(
          field, ".items[", i,
          "].array: an index array held in the daemon is served by Manipulate, not inside "
          "programs (its values decide the plan); index with a listed IndexList there"));
    }
    return absl::OkStatus();
  }

  // Every array operand names a variable; the op's planner checks the rest per run.
  static absl::Status CheckManipulation(const v1::ManipulationSpec& spec,
                                        const std::string& field) {
    switch (spec.op_case()) {
      case v1::ManipulationSpec::kGetItem:
        RETURN_IF_ERROR(CheckKey(spec.get_item().key(), field + ".get_item.key"));
        return CheckOperand(spec.get_item().source(), field + ".get_item.source");
      case v1::ManipulationSpec::kSetItem:
        RETURN_IF_ERROR(CheckKey(spec.set_item().key(), field + ".set_item.key"));
        RETURN_IF_ERROR(CheckOperand(spec.set_item().target(), field + ".set_item.target"));
        return CheckOperand(spec.set_item().value(), field + ".set_item.value");
      case v1::ManipulationSpec::kPermuteDims:
        return CheckOperand(spec.permute_dims().source(), field + ".permute_dims.source");
      case v1::ManipulationSpec::kReshape:
        return CheckOperand(spec.reshape().source(), field + ".reshape.source");
      case v1::ManipulationSpec::kConcat:
        for (int i = 0; i < spec.concat().sources_size(); ++i) {
          RETURN_IF_ERROR(CheckOperand(spec.concat().sources(i),
                                       absl::StrCat(field, ".concat.sources[", i, "]")));
        }
        return absl::OkStatus();
      case v1::ManipulationSpec::kBroadcastTo:
        return CheckOperand(spec.broadcast_to().source(), field + ".broadcast_to.source");
      case v1::ManipulationSpec::kSort:
        return CheckOperand(spec.sort().source(), field + ".sort.source");
      case v1::ManipulationSpec::kSearchSorted:
        RETURN_IF_ERROR(
            CheckOperand(spec.search_sorted().sorted(), field + ".search_sorted.sorted"));
        return CheckOperand(spec.search_sorted().values(), field + ".search_sorted.values");
      case v1::ManipulationSpec::kScan:
        return CheckOperand(spec.scan().source(), field + ".scan.source");
      case v1::ManipulationSpec::OP_NOT_SET:
        break;
    }
    return absl::InvalidArgumentError(
        absl::StrCat(field,
                     ": give an op (get_item, set_item, permute_dims, reshape, concat, "
                     "broadcast_to, sort, search_sorted or scan)"));
  }

  // The op exists, its operands name variables, and there is one distinct target per result;
  // shapes and dtypes are the planner's, per run.
  static absl::Status CheckLinalg(const v1::LinalgStatement& linalg, const std::string& field) {
    const v1::LinalgOpSpec& spec = linalg.spec();
    const int count = LinalgResultCount(spec.op(), spec.compute_uv());
    if (count == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".spec.op: unknown linalg op ", static_cast<int>(spec.op())));
    }
    RETURN_IF_ERROR(CheckOperand(spec.a(), field + ".spec.a"));
    if (spec.has_b()) RETURN_IF_ERROR(CheckOperand(spec.b(), field + ".spec.b"));
    if (linalg.targets_size() != count) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".targets: linalg ", v1::LinalgOp_Name(spec.op()),
                       spec.compute_uv() ? " with compute_uv" : "", " has ", count,
                       " result(s); give one variable per result, got ", linalg.targets_size()));
    }
    for (int i = 0; i < count; ++i) {
      const std::string target_field = absl::StrCat(field, ".targets[", i, "]");
      RETURN_IF_ERROR(ValidateVariableName(linalg.targets(i), target_field));
      for (int j = 0; j < i; ++j) {
        if (linalg.targets(j) == linalg.targets(i)) {
          return absl::InvalidArgumentError(absl::StrCat(target_field, ": ",
                                                         QuoteClientString(linalg.targets(i)),
                                                         " is also targets[", j, "]"));
        }
      }
    }
    return absl::OkStatus();
  }

  static absl::Status CheckOperand(const v1::Operand& operand, const std::string& field) {
    switch (operand.kind_case()) {
      case v1::Operand::kVariable:
        return ValidateVariableName(operand.variable(), field + ".variable");
      case v1::Operand::kHandle:
        return absl::InvalidArgumentError(absl::StrCat(
            field,
            ".handle: a program names variables (Operand.variable); bind arrays to its "
            "inputs with RunGraphRequest.arguments"));
      default:
        return absl::OkStatus();  // scalars; an unset operand is reported by the op's planner
    }
  }

  const ProgramLimits& limits_;
  const ProgramCheckBounds& bounds_;
  int statements_ = 0;
};

}  // namespace

absl::Status ValidateVariableName(absl::string_view name, absl::string_view field) {
  if (name.empty() || name.size() > static_cast<size_t>(kMaxVariableBytes)) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": a variable name has 1 to ",
                                                   kMaxVariableBytes, " bytes, got ", name.size()));
  }
  const bool first_ok = absl::ascii_isalpha(name[0]) || name[0] == '_';
  for (const char c : name) {
    if (!first_ok || !(absl::ascii_isalnum(c) || c == '_' || c == '.')) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": variable ", QuoteClientString(name),
                                                     " is not of [A-Za-z_][A-Za-z0-9_.]*"));
    }
  }
  return absl::OkStatus();
}

int64_t ProgramMemoryBytes(const v1::Program& program) {
  // SpaceUsedLong walks the parsed message by reflection: every nested message, string and
  // repeated field's capacity. A 15.5 MB program of index maps takes about 200 MiB parsed.
  return static_cast<int64_t>(program.SpaceUsedLong()) + kStoredProgramOverheadBytes;
}

absl::Status CheckProgramStructure(const v1::Program& program, const ProgramLimits& limits,
                                   const ProgramCheckBounds& bounds, absl::string_view field) {
  const std::string prefix(field);
  // First: every later check walks the program, and a program this large is refused anyway.
  if (const int64_t bytes = ProgramMemoryBytes(program); bytes > limits.max_program_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        prefix, ": the program takes ", bytes, " bytes of the daemon's memory, more than the ",
        limits.max_program_bytes, " one program may take (--max_program_bytes)"));
  }
  // The lists count against the same bound as statements: each costs work in every check.
  for (const auto& [count, name] :
       {std::pair{program.inputs_size(), "inputs"}, std::pair{program.outputs_size(), "outputs"},
        std::pair{program.value_outputs_size(), "value_outputs"}}) {
    if (count > limits.max_statements) {
      return absl::InvalidArgumentError(
          absl::StrCat(prefix, ".", name, ": at most ", limits.max_statements, ", got ", count));
    }
  }
  absl::flat_hash_set<std::string> inputs;
  for (int i = 0; i < program.inputs_size(); ++i) {
    const std::string input_field = absl::StrCat(prefix, ".inputs[", i, "]");
    RETURN_IF_ERROR(ValidateVariableName(program.inputs(i), input_field));
    if (!inputs.insert(program.inputs(i)).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          input_field, ": input ", QuoteClientString(program.inputs(i)), " is listed twice"));
    }
  }
  if (program.outputs_size() + program.value_outputs_size() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        prefix, ".outputs: a program returns at least one variable (outputs or value_outputs)"));
  }
  absl::flat_hash_set<std::string> returned;
  for (const auto& [list, name] : {std::pair{&program.outputs(), "outputs"},
                                   std::pair{&program.value_outputs(), "value_outputs"}}) {
    for (int i = 0; i < list->size(); ++i) {
      const std::string output_field = absl::StrCat(prefix, ".", name, "[", i, "]");
      RETURN_IF_ERROR(ValidateVariableName((*list)[i], output_field));
      if (!returned.insert((*list)[i]).second) {
        return absl::InvalidArgumentError(
            absl::StrCat(output_field, ": ", QuoteClientString((*list)[i]), " is returned twice"));
      }
    }
  }
  StructureChecker checker(limits, bounds);
  return checker.CheckBlock(program.statements(), prefix + ".statements", 0);
}

}  // namespace distarray
