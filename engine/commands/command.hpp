#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace keyshift::engine {

class CmdContext;

/// Command flags, named as Valkey's command table flags.
enum CommandFlag : uint32_t {
  k_cmd_write = 1u << 0,
  k_cmd_readonly = 1u << 1,
  k_cmd_denyoom = 1u << 2,
  k_cmd_admin = 1u << 3,
  k_cmd_pubsub = 1u << 4,
  k_cmd_noscript = 1u << 5,
  k_cmd_blocking = 1u << 6,
  k_cmd_loading = 1u << 7,
  k_cmd_stale = 1u << 8,
  k_cmd_skip_monitor = 1u << 9,
  k_cmd_skip_slowlog = 1u << 10,
  k_cmd_fast = 1u << 11,
  k_cmd_no_auth = 1u << 12,
  k_cmd_may_replicate = 1u << 13,
  k_cmd_no_multi = 1u << 14,
  k_cmd_movablekeys = 1u << 15,
  k_cmd_allow_busy = 1u << 16,
  k_cmd_protected = 1u << 17,
  k_cmd_no_mandatory_keys = 1u << 18,
};

/// A command handler: parses `ctx.args()` and writes the reply.
using CommandHandler = void (*)(CmdContext& ctx);

/// One row of a family's registration table.
struct CommandSpec {
  std::string_view name;  // lowercase; "container|sub" for a subcommand
  int arity;              // +N exactly N arguments, -N at least N (the name counts)
  uint32_t flags;
  int first_key;  // 0 when the command takes no key
  int last_key;   // -1: the last argument
  int step;
  CommandHandler handler;                // nullptr for a container (CONFIG, CLIENT, ...)
  std::string_view acl_categories = "";  // e.g. "@string @write @slow"
};

/// Flag names as COMMAND INFO prints them, in Valkey's order.
struct FlagName {
  CommandFlag flag;
  std::string_view name;
};
inline constexpr FlagName k_flag_names[] = {
    {k_cmd_write, "write"},
    {k_cmd_readonly, "readonly"},
    {k_cmd_denyoom, "denyoom"},
    {k_cmd_admin, "admin"},
    {k_cmd_pubsub, "pubsub"},
    {k_cmd_noscript, "noscript"},
    {k_cmd_blocking, "blocking"},
    {k_cmd_loading, "loading"},
    {k_cmd_stale, "stale"},
    {k_cmd_skip_monitor, "skip_monitor"},
    {k_cmd_skip_slowlog, "skip_slowlog"},
    {k_cmd_fast, "fast"},
    {k_cmd_no_auth, "no_auth"},
    {k_cmd_may_replicate, "may_replicate"},
    {k_cmd_no_multi, "no_multi"},
    {k_cmd_movablekeys, "movablekeys"},
    {k_cmd_allow_busy, "allow_busy"},
    {k_cmd_no_mandatory_keys, "no_mandatory_keys"},
};

}  // namespace keyshift::engine
