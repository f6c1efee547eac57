// HyperLogLog commands: PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST. An HLL is an ordinary
// string value in Valkey's byte format (engine/ds/hyperloglog.hpp), so every string and
// persistence path carries it as is.
#include "engine/commands/context.hpp"
#include "engine/commands/families.hpp"
#include "engine/commands/string_edit.hpp"
#include "engine/ds/hyperloglog.hpp"
#include "engine/keyspace/string_value.hpp"
#include "engine/server/config_file.hpp"
#include "engine/server/config_table.hpp"

#include <cmath>
#include <memory>
#include <string>

namespace keyshift::engine {
namespace {

constexpr std::string_view k_not_hll = "WRONGTYPE Key is not a valid HyperLogLog string value.";
constexpr std::string_view k_corrupt_hll = "INVALIDOBJ Corrupted HLL object detected";
constexpr std::string_view k_pfdebug_no_key = "ERR The specified key does not exist";
constexpr std::string_view k_pfdebug_not_sparse = "ERR HLL encoding is not sparse";

/// hll-sparse-max-bytes from the configuration (a kept setting: only these commands read it).
size_t sparse_max_bytes(CmdContext& ctx) {
  // The directive table is constant: its entry is looked up once, not by name per PFADD.
  static const DirectiveSpec* const spec = find_directive("hll-sparse-max-bytes");
  if (spec == nullptr) {
    return hll::k_default_sparse_max_bytes;
  }
  std::optional<uint64_t> v = parse_memory(directive_value(*spec, ctx.engine().config()));
  return v ? static_cast<size_t>(*v) : hll::k_default_sparse_max_bytes;
}

/// Outcome of reading a key as an HLL.
enum class HllRead { missing, found, replied };

/// Reads the HLL at `key` into `out`, replying Valkey's error when the key holds something
/// else. `for_write` looks the key up as a write does (no hit/miss counting).
HllRead read_hll(CmdContext& ctx, std::string_view key, bool for_write, std::string& out) {
  Entry* e = for_write ? ctx.db().lookup(key) : ctx.db().lookup_read(key);
  if (e == nullptr) {
    return HllRead::missing;
  }
  if (e->type() != ObjType::string) {
    ctx.reply().error(errors::k_wrong_type);
    return HllRead::replied;
  }
  IntBuffer buf;
  out.assign(string_of(e, buf));
  if (!hll::looks_valid(out)) {
    ctx.reply().error(k_not_hll);
    return HllRead::replied;
  }
  return HllRead::found;
}

/// Stores an HLL back in place: the key keeps its TTL, as Valkey edits the value in place.
void store_hll(CmdContext& ctx, std::string_view key, const std::string& bytes) {
  ctx.db().set(key, make_raw_string_spec(bytes), -1, true);
}

void cmd_pfadd(CmdContext& ctx) {
  std::string_view key = ctx.arg(1);
  Db& db = ctx.db();
  Entry* e = db.lookup(key);
  size_t max_bytes = sparse_max_bytes(ctx);
  int64_t updated = 0;
  bool corrupt = false;
  // Adds the elements to `s`; Valkey edits in place, so what changed before a corrupt spot
  // stays.
  auto add_all = [&](std::string& s) {
    for (size_t i = 2; i < ctx.argc(); ++i) {
      int changed = hll::add(s, ctx.arg(i), max_bytes);
      if (changed < 0) {
        corrupt = true;
        return;
      }
      updated += changed;
    }
    if (updated > 0) {
      hll::invalidate_cache(s);
    }
  };
  if (e == nullptr) {
    std::string s = hll::create();
    ++updated;
    add_all(s);
    db.set(key, make_raw_string_spec(std::move(s)), -1, true);
  } else {
    if (e->type() != ObjType::string) {
      ctx.reply().error(errors::k_wrong_type);
      return;
    }
    IntBuffer buf;
    if (!hll::looks_valid(string_of(e, buf))) {
      ctx.reply().error(k_not_hll);
      return;
    }
    // A dense HLL is 12 KB: edited where it lives (string_edit), not copied twice per PFADD.
    edit_string(db, e, key, ctx.engine().memory(), add_all);
  }
  if (corrupt) {
    ctx.reply().error(k_corrupt_hll);
    return;
  }
  if (updated > 0) {
    ctx.engine().signal_modified_key(ctx.session().db, key);
    ctx.engine().notify_keyspace_event(k_notify_string, "pfadd", key, ctx.session().db);
  }
  ctx.reply().integer(updated > 0 ? 1 : 0);
}

void cmd_pfcount(CmdContext& ctx) {
  std::string s;
  if (ctx.argc() > 2) {
    // Several keys: their union, never cached.
    auto max = std::make_unique<hll::Registers>();
    max->fill(0);
    for (size_t i = 1; i < ctx.argc(); ++i) {
      HllRead r = read_hll(ctx, ctx.arg(i), false, s);
      if (r == HllRead::replied) {
        return;
      }
      if (r == HllRead::found && !hll::merge_into(*max, s)) {
        ctx.reply().error(k_corrupt_hll);
        return;
      }
    }
    ctx.reply().integer(static_cast<int64_t>(hll::estimate(*max)));
    return;
  }
  // One key: read where it lives (a cached count costs no copy of the 12 KB value); a new
  // count is written into the value's cache bytes in place.
  std::string_view key = ctx.arg(1);
  Entry* e = ctx.db().lookup_read(key);
  if (e == nullptr) {
    ctx.reply().integer(0);
    return;
  }
  if (e->type() != ObjType::string) {
    ctx.reply().error(errors::k_wrong_type);
    return;
  }
  IntBuffer buf;
  std::string_view value = string_of(e, buf);
  if (!hll::looks_valid(value)) {
    ctx.reply().error(k_not_hll);
    return;
  }
  std::optional<uint64_t> card = hll::cached_cardinality(value);
  if (!card) {
    card = hll::estimate(value);
    if (!card) {
      ctx.reply().error(k_corrupt_hll);
      return;
    }
    edit_string(ctx.db(), e, key, ctx.engine().memory(),
                [&](std::string& hll_bytes) { hll::set_cached_cardinality(hll_bytes, *card); });
    ctx.engine().signal_modified_key(ctx.session().db, key);
  }
  ctx.reply().integer(static_cast<int64_t>(*card));
}

void cmd_pfmerge(CmdContext& ctx) {
  auto max = std::make_unique<hll::Registers>();
  max->fill(0);
  bool use_dense = false;
  std::string s;
  for (size_t i = 1; i < ctx.argc(); ++i) {
    HllRead r = read_hll(ctx, ctx.arg(i), false, s);
    if (r == HllRead::replied) {
      return;
    }
    if (r == HllRead::missing) {
      continue;
    }
    use_dense = use_dense || hll::encoding(s) == hll::k_dense;
    if (!hll::merge_into(*max, s)) {
      ctx.reply().error(k_corrupt_hll);
      return;
    }
  }
  std::string_view dest = ctx.arg(1);
  HllRead r = read_hll(ctx, dest, true, s);
  if (r == HllRead::replied) {
    return;
  }
  if (r == HllRead::missing) {
    s = hll::create();
  }
  if (use_dense && !hll::to_dense(s)) {
    if (r == HllRead::missing) {
      store_hll(ctx, dest, s);
    }
    ctx.reply().error(k_corrupt_hll);
    return;
  }
  size_t max_bytes = sparse_max_bytes(ctx);
  for (size_t j = 0; j < hll::k_registers; ++j) {
    if ((*max)[j] != 0) {
      hll::set_register(s, j, (*max)[j], max_bytes);
    }
  }
  hll::invalidate_cache(s);
  store_hll(ctx, dest, s);
  ctx.engine().signal_modified_key(ctx.session().db, dest);
  ctx.engine().notify_keyspace_event(k_notify_string, "pfadd", dest, ctx.session().db);
  ctx.reply().ok();
}

void cmd_pfdebug(CmdContext& ctx) {
  std::string_view sub = ctx.arg(1);
  std::string_view key = ctx.arg(2);
  std::string s;
  HllRead r = read_hll(ctx, key, true, s);
  if (r == HllRead::replied) {
    return;
  }
  if (r == HllRead::missing) {
    ctx.reply().error(k_pfdebug_no_key);
    return;
  }
  bool sparse = hll::encoding(s) == hll::k_sparse;
  if (iequals(sub, "GETREG") || iequals(sub, "TODENSE")) {
    if (sparse) {
      if (!hll::to_dense(s)) {
        ctx.reply().error(k_corrupt_hll);
        return;
      }
      // The conversion stays, as in Valkey (no change signal: the count is the same).
      store_hll(ctx, key, s);
    }
    if (iequals(sub, "TODENSE")) {
      ctx.reply().integer(sparse ? 1 : 0);
      return;
    }
    ctx.reply().array(hll::k_registers);
    for (size_t j = 0; j < hll::k_registers; ++j) {
      ctx.reply().integer(hll::dense_register(s, j));
    }
  } else if (iequals(sub, "DECODE")) {
    if (!sparse) {
      ctx.reply().error(k_pfdebug_not_sparse);
      return;
    }
    ctx.reply().bulk(hll::decode_sparse(s));
  } else if (iequals(sub, "ENCODING")) {
    ctx.reply().simple(sparse ? "sparse" : "dense");
  } else {
    ctx.reply().error("ERR Unknown PFDEBUG subcommand '" + std::string(sub) + "'");
  }
}

/// PFSELFTEST: dense register packing round trips, then sparse and dense HLLs fed the same
/// ten million elements agree with each other and stay within the expected error.
void cmd_pfselftest(CmdContext& ctx) {
  std::mt19937_64& rng = ctx.engine().rng();
  std::string dense(hll::k_dense_size, '\0');
  dense.replace(0, 4, "HYLL");
  auto bytes = std::make_unique<hll::Registers>();
  for (int cycle = 0; cycle < 1000; ++cycle) {
    for (size_t i = 0; i < hll::k_registers; ++i) {
      (*bytes)[i] = static_cast<uint8_t>(rng() & 63);
    }
    std::string d(hll::k_dense_size, '\0');
    d.replace(0, 5, std::string("HYLL\0", 5));
    for (size_t i = 0; i < hll::k_registers; ++i) {
      hll::set_register(d, i, (*bytes)[i], 0);
    }
    for (size_t i = 0; i < hll::k_registers; ++i) {
      uint8_t v = hll::dense_register(d, i);
      if (v != (*bytes)[i]) {
        ctx.reply().error("TESTFAILED Register " + std::to_string(i) + " should be " +
                          std::to_string((*bytes)[i]) + " but is " + std::to_string(v));
        return;
      }
    }
  }
  size_t max_bytes = sparse_max_bytes(ctx);
  std::string sparse = hll::create();
  double relerr = 1.04 / std::sqrt(static_cast<double>(hll::k_registers));
  uint64_t checkpoint = 1;
  uint64_t seed = rng();
  for (uint64_t j = 1; j <= 10000000; ++j) {
    uint64_t ele = j ^ seed;
    std::string_view view(reinterpret_cast<const char*>(&ele), sizeof(ele));
    hll::add(dense, view, max_bytes);
    hll::add(sparse, view, max_bytes);
    if (j != checkpoint) {
      continue;
    }
    if (j < max_bytes / 2 && hll::encoding(sparse) != hll::k_sparse) {
      ctx.reply().error("TESTFAILED sparse encoding not used");
      return;
    }
    std::optional<uint64_t> a = hll::estimate(dense);
    std::optional<uint64_t> b = hll::estimate(sparse);
    if (a != b) {
      ctx.reply().error("TESTFAILED dense/sparse disagree");
      return;
    }
    int64_t abserr = static_cast<int64_t>(checkpoint) - static_cast<int64_t>(a.value_or(0));
    auto maxerr = static_cast<int64_t>(std::ceil(relerr * 6 * static_cast<double>(checkpoint)));
    if (j == 10) {
      maxerr = 1;
    }
    if (std::llabs(abserr) > maxerr) {
      ctx.reply().error("TESTFAILED Too big error. card:" + std::to_string(checkpoint) +
                        " abserr:" + std::to_string(std::llabs(abserr)));
      return;
    }
    checkpoint *= 10;
  }
  ctx.reply().ok();
}

constexpr CommandSpec k_hyperloglog_commands[] = {
    {"pfadd", -2, k_cmd_write | k_cmd_denyoom | k_cmd_fast, 1, 1, 1, cmd_pfadd,
     "@write @hyperloglog @fast"},
    {"pfcount", -2, k_cmd_readonly | k_cmd_may_replicate, 1, -1, 1, cmd_pfcount,
     "@read @hyperloglog @slow"},
    {"pfmerge", -2, k_cmd_write | k_cmd_denyoom, 1, -1, 1, cmd_pfmerge,
     "@write @hyperloglog @slow"},
    {"pfdebug", 3, k_cmd_write | k_cmd_denyoom | k_cmd_admin, 2, 2, 1, cmd_pfdebug,
     "@write @hyperloglog @admin @slow @dangerous"},
    {"pfselftest", 1, k_cmd_admin, 0, 0, 0, cmd_pfselftest, "@hyperloglog @admin @slow @dangerous"},
};

}  // namespace

void register_hyperloglog_family(CommandRegistry& registry) {
  registry.add(k_hyperloglog_commands);
}

}  // namespace keyshift::engine
