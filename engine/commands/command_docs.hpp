#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace keyshift::engine {

// Valkey 8.0.1's command metadata (COMMAND INFO / DOCS / GETKEYS), generated from its
// commands.def by tools/gen_command_docs.py into command_docs.inc. Strings that Valkey
// leaves NULL are nullptr here, because COMMAND DOCS omits those fields entirely.

/// Command flags as Valkey names them (CMD_*), including those keyshift has no bit for.
enum ValkeyCommandFlag : uint32_t {
  k_vf_write = 1u << 0,
  k_vf_readonly = 1u << 1,
  k_vf_denyoom = 1u << 2,
  k_vf_module = 1u << 3,
  k_vf_admin = 1u << 4,
  k_vf_pubsub = 1u << 5,
  k_vf_noscript = 1u << 6,
  k_vf_blocking = 1u << 7,
  k_vf_loading = 1u << 8,
  k_vf_stale = 1u << 9,
  k_vf_skip_monitor = 1u << 10,
  k_vf_skip_slowlog = 1u << 11,
  k_vf_asking = 1u << 12,
  k_vf_fast = 1u << 13,
  k_vf_no_auth = 1u << 14,
  k_vf_may_replicate = 1u << 15,
  k_vf_sentinel = 1u << 16,
  k_vf_only_sentinel = 1u << 17,
  k_vf_no_mandatory_keys = 1u << 18,
  k_vf_protected = 1u << 19,
  k_vf_no_async_loading = 1u << 20,
  k_vf_no_multi = 1u << 21,
  k_vf_movablekeys = 1u << 22,
  k_vf_allow_busy = 1u << 23,
  k_vf_touches_arbitrary_keys = 1u << 24,
};

/// ACL categories, in the order Valkey lists them (ACL CAT, COMMAND INFO).
enum AclCategory : uint32_t {
  k_acl_keyspace = 1u << 0,
  k_acl_read = 1u << 1,
  k_acl_write = 1u << 2,
  k_acl_set = 1u << 3,
  k_acl_sortedset = 1u << 4,
  k_acl_list = 1u << 5,
  k_acl_hash = 1u << 6,
  k_acl_string = 1u << 7,
  k_acl_bitmap = 1u << 8,
  k_acl_hyperloglog = 1u << 9,
  k_acl_geo = 1u << 10,
  k_acl_stream = 1u << 11,
  k_acl_pubsub = 1u << 12,
  k_acl_admin = 1u << 13,
  k_acl_fast = 1u << 14,
  k_acl_slow = 1u << 15,
  k_acl_blocking = 1u << 16,
  k_acl_dangerous = 1u << 17,
  k_acl_connection = 1u << 18,
  k_acl_transaction = 1u << 19,
  k_acl_scripting = 1u << 20,
};

/// Category names without the '@', indexed by bit position of AclCategory.
inline constexpr std::string_view k_acl_category_names[] = {
    "keyspace", "read",   "write",       "set",       "sortedset",  "list",        "hash",
    "string",   "bitmap", "hyperloglog", "geo",       "stream",     "pubsub",      "admin",
    "fast",     "slow",   "blocking",    "dangerous", "connection", "transaction", "scripting",
};

/// Key-spec flags (CMD_KEY_*), in the order COMMAND INFO prints them.
enum KeySpecFlag : uint32_t {
  k_key_ro = 1u << 0,
  k_key_rw = 1u << 1,
  k_key_ow = 1u << 2,
  k_key_rm = 1u << 3,
  k_key_access = 1u << 4,
  k_key_update = 1u << 5,
  k_key_insert = 1u << 6,
  k_key_delete_ = 1u << 7,
  k_key_not_key = 1u << 8,
  k_key_incomplete = 1u << 9,
  k_key_variable_flags = 1u << 10,
};

/// Names of KeySpecFlag bits, indexed by bit position.
inline constexpr std::string_view k_key_spec_flag_names[] = {
    "RO",     "RW",     "OW",      "RM",         "access",         "update",
    "insert", "delete", "not_key", "incomplete", "variable_flags",
};

/// Documentation flags (CMD_DOC_*).
enum DocFlag : uint32_t { k_doc_deprecated = 1u << 0, k_doc_syscmd = 1u << 1 };

/// Argument flags (CMD_ARG_*).
enum ArgFlag : uint32_t {
  k_arg_optional = 1u << 0,
  k_arg_multiple = 1u << 1,
  k_arg_multiple_token = 1u << 2,
};

/// Argument types, named as COMMAND DOCS prints them.
enum class ArgType : uint8_t {
  string,
  integer,
  double_,
  key,
  pattern,
  unix_time,
  pure_token,
  oneof,
  block,
};

/// How a key spec finds its first key.
enum class BeginSearch : uint8_t { unknown, index, keyword };
/// How a key spec finds the keys after the first.
enum class FindKeys : uint8_t { unknown, range, keynum };

/// One entry of a command's history.
struct HistoryDoc {
  const char* since;
  const char* changes;
};

/// One key spec. For `range`: a = lastkey, b = keystep, c = limit; for `keynum`:
/// a = keynumidx, b = firstkey, c = keystep.
struct KeySpecDoc {
  const char* notes;
  uint32_t flags;
  BeginSearch begin_search;
  int index;
  const char* keyword;
  int startfrom;
  FindKeys find_keys;
  int a;
  int b;
  int c;
};

/// One argument; block and oneof arguments own `sub_count` arguments from `sub_begin`.
struct ArgDoc {
  const char* name;
  ArgType type;
  const char* display_text;
  int key_spec_index;
  const char* token;
  const char* summary;
  const char* since;
  const char* deprecated_since;
  uint32_t flags;
  uint32_t sub_begin;
  uint32_t sub_count;
};

/// Everything Valkey 8.0.1 knows about one command or subcommand.
struct CommandDoc {
  const char* name;  // full name: "get", "config|get"
  const char* summary;
  const char* complexity;
  const char* since;
  const char* group;
  uint32_t doc_flags;
  const char* replaced_by;
  const char* deprecated_since;
  uint32_t history_begin;
  uint32_t history_count;
  uint32_t tips_begin;
  uint32_t tips_count;
  uint32_t key_specs_begin;
  uint32_t key_specs_count;
  uint32_t args_begin;
  uint32_t args_count;
  int arity;
  uint32_t flags;  // ValkeyCommandFlag bits, movablekeys derived from the key specs
  uint32_t acl;    // AclCategory bits, implicit categories included
  int first_key;   // Valkey's legacy range (COMMAND INFO positions 4-6)
  int last_key;
  int step;

  std::span<const HistoryDoc> history() const;
  std::span<const char* const> tips() const;
  std::span<const KeySpecDoc> key_specs() const;
  std::span<const ArgDoc> args() const;
};

/// The documentation of the command with full name `name` (lower case, "x|y" for
/// subcommands), or nullptr when Valkey 8.0.1 has no such command.
const CommandDoc* find_command_doc(std::string_view name);
/// Every documented command and subcommand, sorted by full name.
std::span<const CommandDoc> all_command_docs();
/// The subarguments of a block or oneof argument.
std::span<const ArgDoc> sub_args(const ArgDoc& arg);
/// COMMAND DOCS' name for an argument type ("pure-token", "unix-time", ...).
std::string_view arg_type_name(ArgType type);
/// The AclCategory bit named `name` (without '@', any case), or 0.
uint32_t acl_category_by_name(std::string_view name);

}  // namespace keyshift::engine
