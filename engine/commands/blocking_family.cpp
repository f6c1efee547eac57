// Blocking list commands: BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP. Each serves a ready key
// exactly as its non-blocking sibling (list_ops.hpp) and otherwise blocks through
// engine/blocking.hpp, which runs the command again once a key it waits for holds a list.
#include "engine/blocking.hpp"
#include "engine/commands/context.hpp"
#include "engine/commands/families.hpp"
#include "engine/commands/list_ops.hpp"
#include "engine/keyspace/list_value.hpp"
#include "engine/util/strconv.hpp"

#include <cstdint>
#include <span>
#include <string_view>

namespace keyshift::engine {
namespace {

/// Valkey's getRangeLongFromObjectOrReply with a message: `error` for a non-number too.
bool parse_range(CmdContext& ctx, std::string_view arg, int64_t min, std::string_view error,
                 int64_t& out) {
  if (!parse_i64(arg, out) || out < min) {
    ctx.reply().error(error);
    return false;
  }
  return true;
}

bool reply_list_status(CmdContext& ctx, OpStatus s) {
  if (s == OpStatus::ok) {
    return false;
  }
  ctx.reply().error(s == OpStatus::wrong_type ? errors::k_wrong_type : errors::k_syntax);
  return true;
}

/// BLPOP/BRPOP (`count` -1: one element, replied as [key, element]) and BLMPOP (`count`
/// elements, replied as [key, [elements...]]): the first non-empty list among `keys` in
/// argument order is popped; with none the client blocks.
void blocking_pop(CmdContext& ctx, std::span<const std::string_view> keys, ListSide side,
                  std::string_view timeout, int64_t count) {
  int64_t deadline = 0;
  if (!parse_block_timeout(ctx, timeout, deadline)) {
    return;
  }
  Engine& engine = ctx.engine();
  Db& db = ctx.db();
  for (std::string_view key : keys) {
    Entry* e = db.lookup(key);
    if (e == nullptr) {
      continue;
    }
    if (e->type() != ObjType::list) {
      ctx.reply().error(errors::k_wrong_type);
      return;
    }
    if (static_cast<const ListValue*>(e->object())->empty()) {
      continue;
    }
    auto r = list_pop(engine, db, key, side, count < 0 ? 1 : static_cast<size_t>(count));
    if (reply_list_status(ctx, r.status())) {
      return;
    }
    ReplyBuilder& rb = ctx.reply();
    rb.array(2);
    rb.bulk(key);
    if (count < 0) {
      rb.bulk(r->front());
      return;
    }
    rb.array(r->size());
    for (const std::string& v : *r) {
      rb.bulk(v);
    }
    return;
  }
  // Inside MULTI/EXEC the wait is over at once, as a timeout.
  if (!may_block(ctx)) {
    ctx.reply().null_array();
    return;
  }
  block_for_keys(ctx, keys, BlockType::list, deadline);
}

void cmd_blpop(CmdContext& ctx) {
  blocking_pop(ctx, ctx.args().subspan(1, ctx.argc() - 2), ListSide::head, ctx.arg(ctx.argc() - 1),
               -1);
}

void cmd_brpop(CmdContext& ctx) {
  blocking_pop(ctx, ctx.args().subspan(1, ctx.argc() - 2), ListSide::tail, ctx.arg(ctx.argc() - 1),
               -1);
}

/// BLMOVE/BRPOPLPUSH: LMOVE when the source holds a list, otherwise block on the source.
void blocking_move(CmdContext& ctx, ListSide from, ListSide to, std::string_view timeout) {
  int64_t deadline = 0;
  if (!parse_block_timeout(ctx, timeout, deadline)) {
    return;
  }
  std::string_view src = ctx.arg(1);
  Entry* e = ctx.db().lookup(src);
  if (e != nullptr && e->type() != ObjType::list) {
    ctx.reply().error(errors::k_wrong_type);
    return;
  }
  if (e == nullptr) {
    if (!may_block(ctx)) {
      ctx.reply().null();
      return;
    }
    std::string_view keys[] = {src};
    block_for_keys(ctx, keys, BlockType::list, deadline);
    return;
  }
  auto r = list_move(ctx.engine(), ctx.db(), src, ctx.arg(2), from, to);
  if (reply_list_status(ctx, r.status())) {
    return;
  }
  if (!*r) {
    ctx.reply().null();
    return;
  }
  ctx.reply().bulk(**r);
}

void cmd_blmove(CmdContext& ctx) {
  ListSide from = ListSide::head;
  ListSide to = ListSide::head;
  if (!parse_list_side(ctx.arg(3), from) || !parse_list_side(ctx.arg(4), to)) {
    ctx.reply().error(errors::k_syntax);
    return;
  }
  blocking_move(ctx, from, to, ctx.arg(5));
}

void cmd_brpoplpush(CmdContext& ctx) {
  blocking_move(ctx, ListSide::tail, ListSide::head, ctx.arg(3));
}

/// BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]; the timeout is checked
/// after the other arguments, as Valkey does.
void cmd_blmpop(CmdContext& ctx) {
  int64_t numkeys = 0;
  if (!parse_range(ctx, ctx.arg(2), 1, errors::k_lmpop_numkeys, numkeys)) {
    return;
  }
  if (numkeys > static_cast<int64_t>(ctx.argc()) - 4) {
    ctx.reply().error(errors::k_syntax);
    return;
  }
  size_t side_idx = 3 + static_cast<size_t>(numkeys);
  ListSide side = ListSide::head;
  if (!parse_list_side(ctx.arg(side_idx), side)) {
    ctx.reply().error(errors::k_syntax);
    return;
  }
  int64_t count = -1;
  for (size_t j = side_idx + 1; j < ctx.argc(); ++j) {
    if (count == -1 && iequals(ctx.arg(j), "count") && j + 1 < ctx.argc()) {
      if (!parse_range(ctx, ctx.arg(++j), 1, errors::k_lmpop_count, count)) {
        return;
      }
    } else {
      ctx.reply().error(errors::k_syntax);
      return;
    }
  }
  blocking_pop(ctx, ctx.args().subspan(3, static_cast<size_t>(numkeys)), side, ctx.arg(1),
               count == -1 ? 1 : count);
}

constexpr uint32_t k_blocking_write = k_cmd_write | k_cmd_blocking;

constexpr CommandSpec k_blocking_commands[] = {
    {"blpop", -3, k_blocking_write, 1, -2, 1, cmd_blpop, "@write @list @slow @blocking"},
    {"brpop", -3, k_blocking_write, 1, -2, 1, cmd_brpop, "@write @list @slow @blocking"},
    {"blmove", 6, k_blocking_write | k_cmd_denyoom, 1, 2, 1, cmd_blmove,
     "@write @list @slow @blocking"},
    {"brpoplpush", 4, k_blocking_write | k_cmd_denyoom, 1, 2, 1, cmd_brpoplpush,
     "@write @list @slow @blocking"},
    {"blmpop", -5, k_blocking_write | k_cmd_movablekeys, 0, 0, 0, cmd_blmpop,
     "@write @list @slow @blocking"},
};

}  // namespace

void register_blocking_family(CommandRegistry& registry) {
  registry.add(k_blocking_commands);
}

}  // namespace keyshift::engine
