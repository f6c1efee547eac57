#include "engine/commands/command_docs.hpp"

#include "engine/util/strings.hpp"

#include <algorithm>

namespace keyshift::engine {
namespace {

#include "engine/commands/command_docs.inc"

}  // namespace

std::span<const HistoryDoc> CommandDoc::history() const {
  return {k_history_docs + history_begin, history_count};
}

std::span<const char* const> CommandDoc::tips() const {
  return {k_tip_docs + tips_begin, tips_count};
}

std::span<const KeySpecDoc> CommandDoc::key_specs() const {
  return {k_key_spec_docs + key_specs_begin, key_specs_count};
}

std::span<const ArgDoc> CommandDoc::args() const {
  return {k_arg_docs + args_begin, args_count};
}

std::span<const ArgDoc> sub_args(const ArgDoc& arg) {
  return {k_arg_docs + arg.sub_begin, arg.sub_count};
}

const CommandDoc* find_command_doc(std::string_view name) {
  const CommandDoc* begin = std::begin(k_command_docs);
  const CommandDoc* end = std::end(k_command_docs);
  const CommandDoc* it = std::lower_bound(
      begin, end, name, [](const CommandDoc& d, std::string_view n) { return d.name < n; });
  return it != end && it->name == name ? it : nullptr;
}

std::span<const CommandDoc> all_command_docs() {
  return k_command_docs;
}

std::string_view arg_type_name(ArgType type) {
  switch (type) {
    case ArgType::string:
      return "string";
    case ArgType::integer:
      return "integer";
    case ArgType::double_:
      return "double";
    case ArgType::key:
      return "key";
    case ArgType::pattern:
      return "pattern";
    case ArgType::unix_time:
      return "unix-time";
    case ArgType::pure_token:
      return "pure-token";
    case ArgType::oneof:
      return "oneof";
    case ArgType::block:
      return "block";
  }
  return "string";
}

uint32_t acl_category_by_name(std::string_view name) {
  for (size_t i = 0; i < std::size(k_acl_category_names); ++i) {
    std::string_view cat = k_acl_category_names[i];
    if (iequals(cat, name)) {
      return 1u << i;
    }
  }
  return 0;
}

}  // namespace keyshift::engine
