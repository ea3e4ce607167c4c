#include "server/graph/variable_mentions.h"

#include <vector>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace distarray {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

void CollectStrings(const Message& message, absl::flat_hash_set<std::string>& out) {
  const Reflection& reflection = *message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection.ListFields(message, &fields);  // the fields set (repeated: non-empty)
  for (const FieldDescriptor* field : fields) {
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
      if (field->is_repeated()) {
        for (int i = 0; i < reflection.FieldSize(message, field); ++i) {
          out.insert(reflection.GetRepeatedString(message, field, i));
        }
      } else {
        out.insert(reflection.GetString(message, field));
      }
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (field->is_repeated()) {
        for (int i = 0; i < reflection.FieldSize(message, field); ++i) {
          CollectStrings(reflection.GetRepeatedMessage(message, field, i), out);
        }
      } else {
        CollectStrings(reflection.GetMessage(message, field), out);
      }
    }
  }
}

}  // namespace

absl::flat_hash_set<std::string> VariablesMentioned(
    const google::protobuf::RepeatedPtrField<v1::Statement>& block, int from) {
  absl::flat_hash_set<std::string> out;
  for (int i = from; i < block.size(); ++i) CollectStrings(block[i], out);
  return out;
}

}  // namespace distarray
