// Geo commands: points are sorted-set members whose score is their 52-bit geohash
// (engine/ds/geohash.hpp). GEOADD turns its triples into a ZADD; the searches scan the
// covering cell and its neighbours as score ranges, as Valkey 8 does, so COUNT ANY stops
// at the same members.
#include "engine/commands/context.hpp"
#include "engine/commands/families.hpp"
#include "engine/ds/geohash.hpp"
#include "engine/keyspace/zset_value.hpp"
#include "engine/util/strconv.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keyshift::engine {
namespace {

// --- Argument helpers -------------------------------------------------------------------

/// Option words compare as C strings (Valkey's strcasecmp).
bool is_keyword(std::string_view arg, std::string_view keyword) {
  return iequals(arg.substr(0, arg.find('\0')), keyword);
}

/// Reads "longitude latitude" at `idx`; replies the error and returns false when either is
/// not a number or the pair is outside the encodable range.
bool parse_lon_lat(CmdContext& ctx, size_t idx, double& lon, double& lat) {
  if (!parse_string2d(ctx.arg(idx), lon) || !parse_string2d(ctx.arg(idx + 1), lat)) {
    ctx.reply().error(errors::k_not_float);
    return false;
  }
  if (lon < geo::k_lon_min || lon > geo::k_lon_max || lat < geo::k_lat_min ||
      lat > geo::k_lat_max) {
    char pair[700];
    std::snprintf(pair, sizeof(pair), "%f,%f", lon, lat);
    ctx.reply().error(std::string(errors::k_geo_bad_pair_prefix) + pair);
    return false;
  }
  return true;
}

/// Metres per unit, or a negative value (error replied) for an unknown unit.
double parse_unit(CmdContext& ctx, std::string_view unit) {
  if (is_keyword(unit, "m")) {
    return 1;
  }
  if (is_keyword(unit, "km")) {
    return 1000;
  }
  if (is_keyword(unit, "ft")) {
    return 0.3048;
  }
  if (is_keyword(unit, "mi")) {
    return 1609.34;
  }
  ctx.reply().error(errors::k_geo_bad_unit);
  return -1;
}

/// "radius unit" at `idx` into the shape; false with the error replied.
bool parse_radius(CmdContext& ctx, size_t idx, geo::Shape& shape) {
  double r = 0;
  if (!parse_string2d(ctx.arg(idx), r)) {
    ctx.reply().error(errors::k_geo_need_radius);
    return false;
  }
  if (r < 0) {
    ctx.reply().error(errors::k_geo_negative_radius);
    return false;
  }
  shape.radius = r;
  double unit = parse_unit(ctx, ctx.arg(idx + 1));
  if (unit < 0) {
    return false;
  }
  shape.to_meters = unit;
  return true;
}

/// "width height unit" at `idx` into the shape; false with the error replied.
bool parse_box(CmdContext& ctx, size_t idx, geo::Shape& shape) {
  double w = 0;
  double h = 0;
  if (!parse_string2d(ctx.arg(idx), w)) {
    ctx.reply().error(errors::k_geo_need_width);
    return false;
  }
  if (!parse_string2d(ctx.arg(idx + 1), h)) {
    ctx.reply().error(errors::k_geo_need_height);
    return false;
  }
  if (h < 0 || w < 0) {
    ctx.reply().error(errors::k_geo_negative_box);
    return false;
  }
  shape.width = w;
  shape.height = h;
  double unit = parse_unit(ctx, ctx.arg(idx + 2));
  if (unit < 0) {
    return false;
  }
  shape.to_meters = unit;
  return true;
}

/// The sorted set at `key` for reading: nullptr when missing; `wrong` set (error replied)
/// for another type.
Entry* lookup_zset(CmdContext& ctx, std::string_view key, bool& wrong) {
  Entry* e = ctx.db().lookup_read(key);
  wrong = e != nullptr && e->type() != ObjType::zset;
  if (wrong) {
    ctx.reply().error(errors::k_wrong_type);
  }
  return e;
}

/// The position of `member` of the sorted set in `e`; false when absent or undecodable.
bool member_position(const Entry* e, std::string_view member, std::array<double, 2>& lon_lat) {
  ZSetRef z(e);
  double score = 0;
  return z->score(member, score) && geo::decode_score(score, lon_lat);
}

// --- Reply helpers ----------------------------------------------------------------------

/// A distance with four decimals (Valkey's fixed-point formatting of distances).
void reply_distance(ReplyBuilder& rb, double d) {
  if (d == 0) {
    rb.bulk("0.0000");
    return;
  }
  long long scaled = std::llrint(d * 10000.0);
  bool negative = scaled < 0;
  unsigned long long v = negative ? 0ULL - static_cast<unsigned long long>(scaled)
                                  : static_cast<unsigned long long>(scaled);
  char buf[48];
  int n =
      std::snprintf(buf, sizeof(buf), "%s%llu.%04llu", negative ? "-" : "", v / 10000, v % 10000);
  rb.bulk(std::string_view(buf, static_cast<size_t>(n)));
}

/// A coordinate as Valkey's human long-double text (bulk in RESP2, double in RESP3).
void reply_coordinate(ReplyBuilder& rb, double v) {
  std::string text;
  format_long_double_human(static_cast<long double>(v), text);
  if (rb.resp() >= 3) {
    rb.raw(",");
    rb.raw(text);
    rb.raw("\r\n");
    return;
  }
  rb.bulk(text);
}

int db_id(CmdContext& ctx) {
  return ctx.session().db;
}

// --- GEOADD -----------------------------------------------------------------------------

void cmd_geoadd(CmdContext& ctx) {
  size_t first = 2;
  bool nx = false;
  bool xx = false;
  for (; first < ctx.argc(); ++first) {
    std::string_view opt = ctx.arg(first);
    if (is_keyword(opt, "nx")) {
      nx = true;
    } else if (is_keyword(opt, "xx")) {
      xx = true;
    } else if (!is_keyword(opt, "ch")) {
      break;  // CH is ZADD's to handle
    }
  }
  if ((ctx.argc() - first) % 3 != 0 || (nx && xx)) {
    ctx.reply().error(errors::k_syntax);
    return;
  }
  size_t elements = (ctx.argc() - first) / 3;
  std::vector<std::string> scores(elements);
  for (size_t i = 0; i < elements; ++i) {
    double lon = 0;
    double lat = 0;
    if (!parse_lon_lat(ctx, first + 3 * i, lon, lat)) {
      return;
    }
    geo::HashBits hash;
    geo::encode(lon, lat, geo::k_step_max, hash);
    scores[i] = i64_to_string(static_cast<int64_t>(geo::align_52(hash)));
  }
  // The rest is ZADD key [options] score member ...: run it as ZADD itself.
  std::vector<std::string_view> args;
  args.reserve(first + 2 * elements);
  args.emplace_back("zadd");
  for (size_t i = 1; i < first; ++i) {
    args.push_back(ctx.arg(i));
  }
  for (size_t i = 0; i < elements; ++i) {
    args.emplace_back(scores[i]);
    args.push_back(ctx.arg(first + 3 * i + 2));
  }
  Command* zadd = ctx.engine().registry().find_original("zadd");
  CmdContext zadd_ctx(ctx.engine(), ctx.session(), *zadd, args);
  // ZADD replies through GEOADD's builder, so that its errors count as GEOADD's failed call
  // (and only GEOADD's: Valkey runs zaddCommand as a function, not as a command).
  zadd_ctx.reply() = ctx.reply();
  zadd->spec.handler(zadd_ctx);
  ctx.reply() = zadd_ctx.reply();
}

// --- GEODIST / GEOHASH / GEOPOS ---------------------------------------------------------

void cmd_geodist(CmdContext& ctx) {
  double to_meters = 1;
  if (ctx.argc() == 5) {
    to_meters = parse_unit(ctx, ctx.arg(4));
    if (to_meters < 0) {
      return;
    }
  } else if (ctx.argc() > 5) {
    ctx.reply().error(errors::k_syntax);
    return;
  }
  bool wrong = false;
  Entry* e = lookup_zset(ctx, ctx.arg(1), wrong);
  if (wrong) {
    return;
  }
  std::array<double, 2> a{};
  std::array<double, 2> b{};
  if (e == nullptr || !member_position(e, ctx.arg(2), a) || !member_position(e, ctx.arg(3), b)) {
    ctx.reply().null();
    return;
  }
  reply_distance(ctx.reply(), geo::distance(a[0], a[1], b[0], b[1]) / to_meters);
}

void cmd_geohash(CmdContext& ctx) {
  static constexpr std::string_view k_alphabet = "0123456789bcdefghjkmnpqrstuvwxyz";
  bool wrong = false;
  Entry* e = lookup_zset(ctx, ctx.arg(1), wrong);
  if (wrong) {
    return;
  }
  ReplyBuilder& rb = ctx.reply();
  rb.array(ctx.argc() - 2);
  for (size_t i = 2; i < ctx.argc(); ++i) {
    std::array<double, 2> pos{};
    if (e == nullptr || !member_position(e, ctx.arg(i), pos)) {
      rb.null();
      continue;
    }
    // Stored scores use latitudes within +-85.05; the standard geohash text uses +-90, so
    // the point is encoded again over the standard ranges.
    geo::HashBits hash;
    geo::encode(geo::Range{-180, 180}, geo::Range{-90, 90}, pos[0], pos[1], geo::k_step_max, hash);
    char text[11];
    for (int c = 0; c < 10; ++c) {
      text[c] = k_alphabet[(hash.bits >> (52 - (c + 1) * 5)) & 0x1f];
    }
    text[10] = k_alphabet[0];  // 52 bits fill ten characters; the eleventh is always '0'
    rb.bulk(std::string_view(text, sizeof(text)));
  }
}

void cmd_geopos(CmdContext& ctx) {
  bool wrong = false;
  Entry* e = lookup_zset(ctx, ctx.arg(1), wrong);
  if (wrong) {
    return;
  }
  ReplyBuilder& rb = ctx.reply();
  rb.array(ctx.argc() - 2);
  for (size_t i = 2; i < ctx.argc(); ++i) {
    std::array<double, 2> pos{};
    if (e == nullptr || !member_position(e, ctx.arg(i), pos)) {
      rb.null_array();
      continue;
    }
    rb.array(2);
    reply_coordinate(rb, pos[0]);
    reply_coordinate(rb, pos[1]);
  }
}

// --- Searches ---------------------------------------------------------------------------

/// One match of a search.
struct GeoPoint {
  std::string member;
  double score;
  double lon;
  double lat;
  double dist;  // metres until the reply converts it
};

/// Members of `z` whose score lies in the cell `hash` and inside `shape`, appended to
/// `out`; stops adding once `limit` (0: none) matches were collected.
void members_in_cell(const ZSetValue& z, const geo::HashBits& hash, const geo::Shape& shape,
                     size_t limit, std::vector<GeoPoint>& out) {
  geo::HashBits next = hash;
  ++next.bits;
  ZScoreRange range;
  range.min = static_cast<double>(geo::align_52(hash));
  range.max = static_cast<double>(geo::align_52(next));
  range.maxex = true;
  z.range_by_score(range, 0, -1, false, [&](std::string_view member, double score) {
    if (limit != 0 && out.size() >= limit) {
      return;
    }
    std::array<double, 2> pos{};
    double dist = 0;
    if (!geo::decode_score(score, pos) || !geo::within(shape, pos[0], pos[1], dist)) {
      return;
    }
    out.push_back(GeoPoint{std::string(member), score, pos[0], pos[1], dist});
  });
}

/// The covering cell, then its neighbours in Valkey's order, skipping empty ones and one
/// equal to the cell scanned just before it (huge radii make neighbours coincide).
std::vector<GeoPoint> search(const ZSetValue& z, const geo::Shape& shape, size_t limit) {
  geo::SearchAreas areas = geo::search_areas(shape);
  const geo::HashBits cells[9] = {
      areas.hash,
      areas.around.north,
      areas.around.south,
      areas.around.east,
      areas.around.west,
      areas.around.north_east,
      areas.around.north_west,
      areas.around.south_east,
      areas.around.south_west,
  };
  std::vector<GeoPoint> out;
  std::optional<size_t> last;
  for (size_t i = 0; i < 9; ++i) {
    if (cells[i].is_zero()) {
      continue;
    }
    if (last && *last != 0 && cells[i] == cells[*last]) {
      continue;
    }
    if (limit != 0 && out.size() >= limit) {
      break;
    }
    members_in_cell(z, cells[i], shape, limit, out);
    last = i;
  }
  return out;
}

enum GeoVariant : unsigned {
  k_by_coords = 1u << 0,  // GEORADIUS: center from arguments
  k_by_member = 1u << 1,  // GEORADIUSBYMEMBER: center from a member
  k_no_store = 1u << 2,   // the _RO forms
  k_search = 1u << 3,     // GEOSEARCH syntax
  k_search_store = 1u << 4,
};

/// Deletes `key` after a store with no result (sending del when it existed).
void delete_store_key(CmdContext& ctx, std::string_view key) {
  if (ctx.db().remove(key)) {
    ctx.engine().signal_modified_key(db_id(ctx), key);
    ctx.engine().notify_keyspace_event(k_notify_generic, "del", key, db_id(ctx));
  }
}

void georadius_generic(CmdContext& ctx, size_t src_idx, unsigned variant) {
  std::optional<std::string_view> store_key;
  bool store_dist = false;
  bool wrong = false;
  Entry* e = lookup_zset(ctx, ctx.arg(src_idx), wrong);
  if (wrong) {
    return;
  }
  geo::Shape shape;
  size_t base = 0;
  if ((variant & k_by_coords) != 0) {
    base = 6;
    if (!parse_lon_lat(ctx, 2, shape.lon, shape.lat) || !parse_radius(ctx, 4, shape)) {
      return;
    }
  } else if ((variant & k_by_member) != 0) {
    base = 5;
    // Without a source key the arguments are still read, to pick the reply's kind.
    if (e != nullptr) {
      std::array<double, 2> pos{};
      if (!member_position(e, ctx.arg(2), pos)) {
        ctx.reply().error(errors::k_geo_bad_member);
        return;
      }
      shape.lon = pos[0];
      shape.lat = pos[1];
      if (!parse_radius(ctx, 3, shape)) {
        return;
      }
    }
  } else {
    base = 2;
    if ((variant & k_search_store) != 0) {
      base = 3;
      store_key = ctx.arg(1);
    }
  }

  const bool search_syntax = (variant & k_search) != 0;
  const bool may_store = (variant & k_no_store) == 0 && !search_syntax;
  bool with_dist = false;
  bool with_hash = false;
  bool with_coord = false;
  bool from_member = false;
  bool from_lonlat = false;
  bool by_radius = false;
  bool by_box = false;
  bool any = false;
  int sort = 0;  // 0 none, 1 ascending, -1 descending
  int64_t count = 0;
  const size_t remaining = ctx.argc() > base ? ctx.argc() - base : 0;
  for (size_t i = 0; i < remaining; ++i) {
    std::string_view arg = ctx.arg(base + i);
    if (is_keyword(arg, "withdist")) {
      with_dist = true;
    } else if (is_keyword(arg, "withhash")) {
      with_hash = true;
    } else if (is_keyword(arg, "withcoord")) {
      with_coord = true;
    } else if (is_keyword(arg, "any")) {
      any = true;
    } else if (is_keyword(arg, "asc")) {
      sort = 1;
    } else if (is_keyword(arg, "desc")) {
      sort = -1;
    } else if (is_keyword(arg, "count") && i + 1 < remaining) {
      if (!parse_i64(ctx.arg(base + i + 1), count)) {
        ctx.reply().error(errors::k_not_integer);
        return;
      }
      if (count <= 0) {
        ctx.reply().error(errors::k_geo_count_positive);
        return;
      }
      ++i;
    } else if (is_keyword(arg, "store") && i + 1 < remaining && may_store) {
      store_key = ctx.arg(base + i + 1);
      store_dist = false;
      ++i;
    } else if (is_keyword(arg, "storedist") && i + 1 < remaining && may_store) {
      store_key = ctx.arg(base + i + 1);
      store_dist = true;
      ++i;
    } else if (is_keyword(arg, "storedist") && (variant & k_search_store) != 0) {
      store_dist = true;
    } else if (is_keyword(arg, "frommember") && i + 1 < remaining && search_syntax &&
               !from_lonlat) {
      if (e != nullptr) {
        std::array<double, 2> pos{};
        if (!member_position(e, ctx.arg(base + i + 1), pos)) {
          ctx.reply().error(errors::k_geo_bad_member);
          return;
        }
        shape.lon = pos[0];
        shape.lat = pos[1];
      }
      from_member = true;
      ++i;
    } else if (is_keyword(arg, "fromlonlat") && i + 2 < remaining && search_syntax &&
               !from_member) {
      if (!parse_lon_lat(ctx, base + i + 1, shape.lon, shape.lat)) {
        return;
      }
      from_lonlat = true;
      i += 2;
    } else if (is_keyword(arg, "byradius") && i + 2 < remaining && search_syntax && !by_box) {
      if (!parse_radius(ctx, base + i + 1, shape)) {
        return;
      }
      shape.kind = geo::Shape::Kind::circle;
      by_radius = true;
      i += 2;
    } else if (is_keyword(arg, "bybox") && i + 3 < remaining && search_syntax && !by_radius) {
      if (!parse_box(ctx, base + i + 1, shape)) {
        return;
      }
      shape.kind = geo::Shape::Kind::box;
      by_box = true;
      i += 3;
    } else {
      ctx.reply().error(errors::k_syntax);
      return;
    }
  }

  if (store_key && (with_dist || with_hash || with_coord)) {
    ctx.reply().error((variant & k_search_store) != 0 ? errors::k_geosearchstore_with_options
                                                      : errors::k_geo_store_with_options);
    return;
  }
  if (search_syntax && !(from_member || from_lonlat)) {
    ctx.reply().error(std::string(errors::k_geo_need_from_prefix) + std::string(ctx.arg(0)));
    return;
  }
  if (search_syntax && !(by_radius || by_box)) {
    ctx.reply().error(std::string(errors::k_geo_need_by_prefix) + std::string(ctx.arg(0)));
    return;
  }
  if (any && count == 0) {
    ctx.reply().error(errors::k_geo_any_needs_count);
    return;
  }
  if (e == nullptr) {
    if (store_key) {
      delete_store_key(ctx, *store_key);
      ctx.reply().integer(0);
    } else {
      ctx.reply().array(0);
    }
    return;
  }
  // COUNT alone means the nearest ones.
  if (count != 0 && sort == 0 && !any) {
    sort = 1;
  }

  std::vector<GeoPoint> points;
  {
    ZSetRef z(e);
    points = search(*z, shape, any ? static_cast<size_t>(count) : 0);
  }
  if (points.empty() && !store_key) {
    ctx.reply().array(0);
    return;
  }
  size_t returned = points.size();
  if (count != 0 && static_cast<uint64_t>(count) < returned) {
    returned = static_cast<size_t>(count);
  }
  if (sort != 0) {
    std::stable_sort(points.begin(), points.end(), [sort](const GeoPoint& a, const GeoPoint& b) {
      return sort > 0 ? a.dist < b.dist : a.dist > b.dist;
    });
  }

  if (!store_key) {
    ReplyBuilder& rb = ctx.reply();
    size_t options = static_cast<size_t>(with_dist) + static_cast<size_t>(with_hash) +
                     static_cast<size_t>(with_coord);
    rb.array(returned);
    for (size_t i = 0; i < returned; ++i) {
      const GeoPoint& p = points[i];
      if (options != 0) {
        rb.array(options + 1);
      }
      rb.bulk(p.member);
      if (with_dist) {
        reply_distance(rb, p.dist / shape.to_meters);
      }
      if (with_hash) {
        rb.integer(static_cast<int64_t>(p.score));
      }
      if (with_coord) {
        rb.array(2);
        reply_coordinate(rb, p.lon);
        reply_coordinate(rb, p.lat);
      }
    }
    return;
  }

  if (returned == 0) {
    delete_store_key(ctx, *store_key);
    ctx.reply().integer(0);
    return;
  }
  // Built as a skiplist and moved to a listpack when it fits, as Valkey stores results.
  const EngineConfig& config = ctx.engine().config();
  ZSetLimits limits{config.zset_max_listpack_entries, config.zset_max_listpack_value};
  auto result = std::make_unique<ZSetValue>(ctx.engine().rng()());
  result->convert_to_skiplist();
  size_t max_len = 0;
  size_t total_len = 0;
  for (size_t i = 0; i < returned; ++i) {
    const GeoPoint& p = points[i];
    double score = store_dist ? p.dist / shape.to_meters : p.score;
    double ignored = 0;
    result->add(score, p.member, 0, ignored, limits);
    max_len = std::max(max_len, p.member.size());
    total_len += p.member.size();
  }
  result->convert_to_listpack_if_fits(max_len, total_len, limits);
  int db = db_id(ctx);
  ctx.db().set(*store_key, value_spec(result.release(), ObjType::zset), -1, false);
  ctx.engine().signal_modified_key(db, *store_key);
  ctx.engine().notify_keyspace_event(
      k_notify_zset, search_syntax ? "geosearchstore" : "georadiusstore", *store_key, db);
  ctx.engine().signal_key_as_ready(db, *store_key);
  ctx.reply().integer(static_cast<int64_t>(returned));
}

void cmd_georadius(CmdContext& ctx) {
  georadius_generic(ctx, 1, k_by_coords);
}
void cmd_georadius_ro(CmdContext& ctx) {
  georadius_generic(ctx, 1, k_by_coords | k_no_store);
}
void cmd_georadiusbymember(CmdContext& ctx) {
  georadius_generic(ctx, 1, k_by_member);
}
void cmd_georadiusbymember_ro(CmdContext& ctx) {
  georadius_generic(ctx, 1, k_by_member | k_no_store);
}
void cmd_geosearch(CmdContext& ctx) {
  georadius_generic(ctx, 1, k_search);
}
void cmd_geosearchstore(CmdContext& ctx) {
  georadius_generic(ctx, 2, k_search | k_search_store);
}

// The STORE/STOREDIST keys of GEORADIUS and GEORADIUSBYMEMBER, and GEOSEARCHSTORE's
// destination, come from the key specs of COMMAND DOCS (command_docs.inc).
constexpr CommandSpec k_geo_commands[] = {
    {"geoadd", -5, k_cmd_write | k_cmd_denyoom, 1, 1, 1, cmd_geoadd, "@write @geo @slow"},
    {"geodist", -4, k_cmd_readonly, 1, 1, 1, cmd_geodist, "@read @geo @slow"},
    {"geohash", -2, k_cmd_readonly, 1, 1, 1, cmd_geohash, "@read @geo @slow"},
    {"geopos", -2, k_cmd_readonly, 1, 1, 1, cmd_geopos, "@read @geo @slow"},
    {"georadius", -6, k_cmd_write | k_cmd_denyoom | k_cmd_movablekeys, 1, 1, 1, cmd_georadius,
     "@write @geo @slow"},
    {"georadius_ro", -6, k_cmd_readonly, 1, 1, 1, cmd_georadius_ro, "@read @geo @slow"},
    {"georadiusbymember", -5, k_cmd_write | k_cmd_denyoom | k_cmd_movablekeys, 1, 1, 1,
     cmd_georadiusbymember, "@write @geo @slow"},
    {"georadiusbymember_ro", -5, k_cmd_readonly, 1, 1, 1, cmd_georadiusbymember_ro,
     "@read @geo @slow"},
    {"geosearch", -7, k_cmd_readonly, 1, 1, 1, cmd_geosearch, "@read @geo @slow"},
    {"geosearchstore", -8, k_cmd_write | k_cmd_denyoom, 1, 2, 1, cmd_geosearchstore,
     "@write @geo @slow"},
};

}  // namespace

void register_geo_family(CommandRegistry& registry) {
  registry.add(k_geo_commands);
}

}  // namespace keyshift::engine
