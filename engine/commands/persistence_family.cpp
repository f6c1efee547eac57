// Persistence: SAVE, BGSAVE, LASTSAVE, DUMP, RESTORE (RDB snapshots and payloads).
#include "engine/commands/context.hpp"
#include "engine/commands/families.hpp"
#include "engine/engine.hpp"
#include "engine/keyspace/db.hpp"
#include "engine/persistence/aof.hpp"
#include "engine/persistence/rdb_load.hpp"
#include "engine/persistence/rdb_reader.hpp"
#include "engine/persistence/rdb_writer.hpp"
#include "engine/persistence/snapshots.hpp"
#include "engine/util/strconv.hpp"

#include <string>

namespace keyshift::engine {
namespace {

void cmd_save(CmdContext& ctx) {
  auto saved = ctx.engine().snapshots().save(ctx.engine());
  if (!saved) {
    ctx.reply().error(saved.error() == "Background save already in progress"
                          ? std::string(errors::k_bgsave_in_progress)
                          : "ERR " + saved.error());
    return;
  }
  ctx.reply().ok();
}

void cmd_bgsave(CmdContext& ctx) {
  bool schedule = false;
  if (ctx.argc() > 1) {
    if (ctx.argc() == 2 && iequals(ctx.arg(1), "schedule")) {
      schedule = true;
    } else {
      ctx.reply().error(errors::k_syntax);
      return;
    }
  }
  Snapshots& snaps = ctx.engine().snapshots();
  if (ctx.engine().aof().rewrite_in_progress()) {
    // keyshift keeps no queue of saves behind a rewrite, so SCHEDULE is refused as well.
    ctx.reply().error(errors::k_bgsave_aof_child);
    return;
  }
  if (snaps.bgsave_in_progress()) {
    if (schedule) {
      // Valkey would start another once this one ends; one snapshot in flight is enough
      // for keyshift (no AOF rewrite competes), so it is reported as already under way.
      ctx.reply().simple("Background saving scheduled");
      return;
    }
    ctx.reply().error(errors::k_bgsave_in_progress);
    return;
  }
  auto started = snaps.start_background(ctx.engine());
  if (!started) {
    ctx.reply().error("ERR " + started.error());
    return;
  }
  ctx.reply().simple("Background saving started");
}

void cmd_bgrewriteaof(CmdContext& ctx) {
  auto started = ctx.engine().aof().rewrite_background();
  if (!started) {
    ctx.reply().error(started.error());
    return;
  }
  ctx.reply().simple(*started ? "Background append only file rewriting scheduled"
                              : "Background append only file rewriting started");
}

void cmd_lastsave(CmdContext& ctx) {
  ctx.reply().integer(ctx.engine().snapshots().last_save_s());
}

void cmd_dump(CmdContext& ctx) {
  Entry* e = ctx.db().lookup_read(ctx.arg(1));
  if (e == nullptr) {
    ctx.reply().null();
    return;
  }
  auto payload = dump_payload(*e, RdbWriteOptions{});
  if (!payload) {
    // A hash with field TTLs has no Valkey 8 payload; RDB 12 is Redis 7.4's.
    RdbWriteOptions v12;
    v12.version = 12;
    payload = dump_payload(*e, v12);
  }
  if (!payload) {
    ctx.reply().error("ERR " + payload.error());
    return;
  }
  ctx.reply().bulk(*payload);
}

void cmd_restore(CmdContext& ctx) {
  bool replace = false;
  bool absttl = false;
  int64_t idle = -1;
  int64_t freq = -1;
  for (size_t j = 4; j < ctx.argc(); ++j) {
    size_t additional = ctx.argc() - j - 1;
    std::string_view opt = ctx.arg(j);
    if (iequals(opt, "replace")) {
      replace = true;
    } else if (iequals(opt, "absttl")) {
      absttl = true;
    } else if (iequals(opt, "idletime") && additional >= 1 && freq == -1) {
      if (!parse_i64(ctx.arg(++j), idle)) {
        ctx.reply().error(errors::k_not_integer);
        return;
      }
      if (idle < 0) {
        ctx.reply().error(errors::k_restore_idletime);
        return;
      }
    } else if (iequals(opt, "freq") && additional >= 1 && idle == -1) {
      if (!parse_i64(ctx.arg(++j), freq)) {
        ctx.reply().error(errors::k_not_integer);
        return;
      }
      if (freq < 0 || freq > 255) {
        ctx.reply().error(errors::k_restore_freq);
        return;
      }
    } else {
      ctx.reply().error(errors::k_syntax);
      return;
    }
  }
  std::string_view key = ctx.arg(1);
  Db& db = ctx.db();
  if (!replace && db.lookup(key) != nullptr) {
    ctx.reply().error(errors::k_busykey);
    return;
  }
  int64_t ttl = 0;
  if (!parse_i64(ctx.arg(2), ttl)) {
    ctx.reply().error(errors::k_not_integer);
    return;
  }
  if (ttl < 0) {
    ctx.reply().error(errors::k_restore_ttl_negative);
    return;
  }
  auto checked = check_dump_payload(ctx.arg(3));
  if (!checked) {
    ctx.reply().error(errors::k_restore_bad_payload);
    return;
  }
  auto value = decode_dump_value(checked->type, checked->version, checked->body);
  if (!value) {
    ctx.reply().error(errors::k_restore_bad_format);
    return;
  }
  int64_t now = ctx.now_ms();
  auto spec = build_engine_value(ctx.engine(), std::move(*value), now);
  if (!spec) {
    ctx.reply().error(errors::k_restore_bad_format);
    return;
  }
  int id = ctx.session().db;
  bool deleted = replace && db.remove(key);
  if (ttl != 0 && !absttl) {
    ttl += now;
  }
  if (ttl != 0 && ttl <= now) {
    delete spec->object;
    if (deleted) {
      ctx.engine().signal_modified_key(id, key);
      ctx.engine().notify_keyspace_event(k_notify_generic, "del", key, id);
    }
    ctx.reply().ok();
    return;
  }
  Entry* e = db.add(key, *spec, ttl != 0 ? ttl : -1);
  // As Valkey's objectSetLRUOrLFU: FREQ counts under an LFU policy, IDLETIME otherwise.
  if (is_lfu(ctx.engine().config().maxmemory_policy)) {
    if (freq >= 0) {
      e->set_lru(lfu_field(static_cast<uint8_t>(freq), now));
    }
  } else if (idle >= 0) {
    e->set_lru(lru_clock(now - idle * 1000));
  }
  ctx.engine().signal_modified_key(id, key);
  ctx.engine().notify_keyspace_event(k_notify_generic, "restore", key, id);
  if (e->type() == ObjType::list || e->type() == ObjType::zset) {
    ctx.engine().signal_key_as_ready(id, key);
  }
  ctx.reply().ok();
}

constexpr uint32_t k_admin_flags = k_cmd_admin | k_cmd_noscript;

constexpr CommandSpec k_persistence_commands[] = {
    {"save", 1, k_admin_flags | k_cmd_no_multi, 0, 0, 0, cmd_save, "@admin @slow @dangerous"},
    {"bgsave", -1, k_admin_flags, 0, 0, 0, cmd_bgsave, "@admin @slow @dangerous"},
    {"bgrewriteaof", 1, k_admin_flags, 0, 0, 0, cmd_bgrewriteaof, "@admin @slow @dangerous"},
    {"lastsave", 1, k_cmd_loading | k_cmd_stale | k_cmd_fast, 0, 0, 0, cmd_lastsave,
     "@admin @fast @dangerous"},
    {"dump", 2, k_cmd_readonly, 1, 1, 1, cmd_dump, "@keyspace @read @slow"},
    {"restore", -4, k_cmd_write | k_cmd_denyoom, 1, 1, 1, cmd_restore,
     "@keyspace @write @slow @dangerous"},
    // MIGRATE's own RESTORE between cluster nodes; the same command on a standalone server.
    {"restore-asking", -4, k_cmd_write | k_cmd_denyoom, 1, 1, 1, cmd_restore,
     "@keyspace @write @slow @dangerous"},
};

}  // namespace

void register_persistence_family(CommandRegistry& registry) {
  registry.add(k_persistence_commands);
}

}  // namespace keyshift::engine
