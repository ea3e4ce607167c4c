#include "server/graph/variable_mentions.h"

#include <vector>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace distarray {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// Records `index` as the last mention of every string in `message`.
void CollectStrings(const Message& message, int index, absl::flat_hash_map<std::string, int>& out) {
  const Reflection& reflection = *message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection.ListFields(message, &fields);  // the fields set (repeated: non-empty)
  for (const FieldDescriptor* field : fields) {
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
      if (field->is_repeated()) {
        for (int i = 0; i < reflection.FieldSize(message, field); ++i) {
          out[reflection.GetRepeatedString(message, field, i)] = index;
        }
      } else {
        out[reflection.GetString(message, field)] = index;
      }
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (field->is_repeated()) {
        for (int i = 0; i < reflection.FieldSize(message, field); ++i) {
          CollectStrings(reflection.GetRepeatedMessage(message, field, i), index, out);
        }
      } else {
        CollectStrings(reflection.GetMessage(message, field), index, out);
      }
    }
  }
}

}  // namespace

absl::flat_hash_map<std::string, int> LastMentions(
    const google::protobuf::RepeatedPtrField<v1::Statement>& block) {
  absl::flat_hash_map<std::string, int> out;
  for (int i = 0; i < block.size(); ++i) CollectStrings(block[i], i, out);
  return out;
}

}  // namespace distarray
