#include "engine/persistence/rdb_load.hpp"

#include "engine/ds/quicklist.hpp"
#include "engine/engine.hpp"
#include "engine/keyspace/hash_value.hpp"
#include "engine/keyspace/list_value.hpp"
#include "engine/keyspace/set_value.hpp"
#include "engine/keyspace/stream_value.hpp"
#include "engine/keyspace/string_value.hpp"
#include "engine/keyspace/zset_value.hpp"
#include "engine/persistence/rdb_format.hpp"

#include <algorithm>
#include <memory>
#include <utility>

namespace keyshift::engine {

namespace {

Entry::ValueSpec object_spec(HeapObject* object, ObjType type, ObjEncoding encoding) {
  Entry::ValueSpec spec;
  spec.kind = Entry::Kind::object;
  spec.object = object;
  spec.type = type;
  spec.encoding = encoding;
  return spec;
}

/// Lists are rebuilt as Valkey's rdbLoadObject builds them: a quicklist file value keeps its
/// stored nodes (then becomes a listpack if it is one small node); a ziplist value (type 10)
/// is pushed into a quicklist and stays one; a linked list (type 1) is pushed and converted.
Entry::ValueSpec build_list(Engine& engine, const RdbValue& value) {
  const EngineConfig& c = engine.config();
  ListLimits limits{c.list_max_listpack_size, c.list_compress_depth};
  std::unique_ptr<ListValue> list;
  if (!value.list_nodes.empty()) {
    auto ql = std::make_unique<Quicklist>(limits.fill, limits.compress_depth);
    size_t i = 0;
    for (const RdbListNode& node : value.list_nodes) {
      if (node.plain) {
        ql->append_plain(value.items[i++]);
        continue;
      }
      Listpack lp;
      for (uint32_t k = 0; k < node.count; ++k) {
        lp.append(value.items[i++]);
      }
      ql->append_listpack(std::move(lp));
    }
    list = std::make_unique<ListValue>(std::move(ql));
    list->convert_auto(limits);
  } else if (value.rdb_type == static_cast<uint8_t>(rdb::Type::list_ziplist)) {
    auto ql = std::make_unique<Quicklist>(limits.fill, limits.compress_depth);
    for (const std::string& v : value.items) {
      ql->push_tail(v);
    }
    list = std::make_unique<ListValue>(std::move(ql));
  } else {
    list = std::make_unique<ListValue>();
    for (const std::string& v : value.items) {
      list->prepare_growth(limits, v.size(), 1);
      list->push(ListSide::tail, v);
    }
    list->convert_auto(limits);
  }
  ObjEncoding enc = list->encoding();
  return object_spec(list.release(), ObjType::list, enc);
}

Entry::ValueSpec build_set(Engine& engine, const std::vector<std::string>& members) {
  SetLimits limits = SetLimits::from(engine.config());
  SetValue* s = SetValue::create(members.front(), members.size(), limits, engine.rng()());
  std::unique_ptr<SetValue> owned(s);
  for (const std::string& m : members) {
    s->add(m, limits);
  }
  s->shrink_to_fit();
  // A small set is kept as its bare intset/listpack block (see Entry::Kind::blob).
  return value_spec(owned.release(), ObjType::set);
}

Entry::ValueSpec build_zset(Engine& engine, const std::vector<std::pair<std::string, double>>& m) {
  const EngineConfig& c = engine.config();
  ZSetLimits limits{c.zset_max_listpack_entries, c.zset_max_listpack_value};
  size_t max_len = 0;
  for (const auto& [member, score] : m) {
    max_len = std::max(max_len, member.size());
  }
  auto z = ZSetValue::create(m.size(), max_len, limits, engine.rng()());
  for (const auto& [member, score] : m) {
    double unused = 0;
    z->add(score, member, 0, unused, limits);
  }
  // A small sorted set is kept as its bare listpack block (see Entry::Kind::blob).
  return value_spec(z.release(), ObjType::zset);
}

Entry::ValueSpec build_hash(Engine& engine, const std::vector<RdbHashField>& fields,
                            int64_t now_ms) {
  const EngineConfig& c = engine.config();
  HashLimits limits{c.hash_max_listpack_entries, c.hash_max_listpack_value};
  auto h = std::make_unique<HashValue>(engine.rng()());
  bool any_ttl = false;
  for (const RdbHashField& f : fields) {
    any_ttl = any_ttl || f.expire_ms >= 0;
  }
  if (any_ttl) {
    h->enable_field_expiry();
  }
  for (const RdbHashField& f : fields) {
    if (f.expire_ms >= 0 && f.expire_ms <= now_ms) {
      continue;  // expired while on disk
    }
    h->set(f.field, f.value, limits, false);
    if (f.expire_ms >= 0) {
      h->set_expire(f.field, f.expire_ms, HashExpireCond::none, now_ms);
    }
  }
  // A small hash is kept as its bare listpack block (see Entry::Kind::blob).
  return value_spec(h.release(), ObjType::hash);
}

StreamId stream_id(const RdbStreamId& id) {
  return {id.ms, id.seq};
}

/// Streams are rebuilt entry by entry under this engine's node limits (the file's node
/// boundaries are not kept), then take the file's metadata; files before type 19 lack some
/// of it and get Valkey's defaults (rdbLoadObject).
Expected<Entry::ValueSpec, std::string> build_stream(Engine& engine, const RdbValue& value) {
  const RdbStream& in = value.stream;
  const EngineConfig& c = engine.config();
  StreamLimits limits{c.stream_node_max_bytes, c.stream_node_max_entries};
  auto s = std::make_unique<StreamValue>();
  std::vector<std::string_view> fv;
  StreamId prev;
  bool first = true;
  for (const RdbStreamNode& node : in.nodes) {
    Listpack lp;
    if (!Listpack::adopt(node.listpack, lp)) {
      return Unexpected{std::string("invalid stream node listpack")};
    }
    s->load_node(stream_id(node.master), std::move(lp));
  }
  if (!in.entries.empty()) {
    prev = stream_id(in.entries.back().id);
  }
  // Values built elsewhere (not read from a file) carry entries only.
  for (const RdbStreamEntry& e : in.entries) {
    if (!in.nodes.empty()) {
      break;
    }
    StreamId id = stream_id(e.id);
    if (!first && id <= prev) {
      return Unexpected{"stream entry " + id.text() + " is not greater than " + prev.text()};
    }
    first = false;
    prev = id;
    fv.clear();
    for (const auto& [f, v] : e.fields) {
      fv.push_back(f);
      fv.push_back(v);
    }
    s->append(id, fv, limits);
  }
  StreamId last = stream_id(in.last_id);
  if (!in.entries.empty() && last < prev) {
    return Unexpected{"stream last ID " + last.text() + " is below its last entry " + prev.text()};
  }
  s->set_last_id(last);
  if (in.has_v2_metadata) {
    s->set_first_id(stream_id(in.first_id));
    s->set_max_deleted_id(stream_id(in.max_deleted_id));
    s->set_entries_added(in.entries_added);
  } else {
    s->set_max_deleted_id({});
    s->set_entries_added(s->length());
    StreamId f;
    s->edge_id(true, f);
    s->set_first_id(f);
  }
  for (const RdbStreamGroup& g : in.groups) {
    StreamId last_delivered = stream_id(g.last_delivered);
    int64_t entries_read = g.entries_read;
    if (value.rdb_type < static_cast<uint8_t>(rdb::Type::stream_listpacks_2)) {
      entries_read = s->estimate_distance(last_delivered);
    }
    StreamGroup* cg = s->create_group(g.name, last_delivered, entries_read);
    if (cg == nullptr) {
      return Unexpected{"duplicate consumer group '" + g.name + "'"};
    }
    for (const RdbStreamNack& n : g.pending) {
      StreamId id = stream_id(n.id);
      if (cg->pel.count(id) != 0) {
        return Unexpected{"duplicate pending entry " + id.text() + " in group '" + g.name + "'"};
      }
      s->add_pending(*cg, id, nullptr, n.delivery_time_ms, n.delivery_count);
    }
    for (const RdbStreamConsumer& rc : g.consumers) {
      StreamConsumer* consumer = s->create_consumer(*cg, rc.name, rc.seen_time_ms);
      if (consumer == nullptr) {
        return Unexpected{"duplicate consumer '" + rc.name + "' in group '" + g.name + "'"};
      }
      // Type 21 stores the active time (-1: never active); older types have none, and
      // Valkey takes the seen time for it.
      bool has_active = value.rdb_type >= static_cast<uint8_t>(rdb::Type::stream_listpacks_3);
      consumer->active_time_ms = has_active ? rc.active_time_ms : rc.seen_time_ms;
      for (const RdbStreamId& rid : rc.pending) {
        StreamId id = stream_id(rid);
        auto it = cg->pel.find(id);
        if (it == cg->pel.end() || it->second.consumer != nullptr) {
          return Unexpected{"consumer '" + rc.name + "' owns pending entry " + id.text() +
                            " that the group's PEL does not hold free"};
        }
        s->transfer_pending(*cg, id, it->second, consumer);
      }
    }
    for (const auto& [id, nack] : cg->pel) {
      if (nack.consumer == nullptr) {
        return Unexpected{"pending entry " + id.text() + " of group '" + g.name +
                          "' has no consumer"};
      }
    }
  }
  return object_spec(s.release(), ObjType::stream, ObjEncoding::stream);
}

}  // namespace

Expected<Entry::ValueSpec, std::string> build_engine_value(Engine& engine, RdbValue&& value,
                                                           int64_t now_ms) {
  switch (value.kind) {
    case RdbKind::string:
      return make_string_spec(value.str);
    case RdbKind::list:
      if (value.items.empty())
        return Unexpected{std::string("empty list")};
      return build_list(engine, value);
    case RdbKind::set:
      if (value.items.empty())
        return Unexpected{std::string("empty set")};
      return build_set(engine, value.items);
    case RdbKind::zset:
      if (value.zset.empty())
        return Unexpected{std::string("empty sorted set")};
      return build_zset(engine, value.zset);
    case RdbKind::hash: {
      if (value.hash.empty())
        return Unexpected{std::string("empty hash")};
      Entry::ValueSpec spec = build_hash(engine, value.hash, now_ms);
      if (spec.kind == Entry::Kind::blob ? spec.blob == nullptr
                                         : static_cast<HashValue*>(spec.object)->empty()) {
        delete spec.object;
        return Unexpected{std::string("every field of the hash has expired")};
      }
      return spec;
    }
    case RdbKind::stream:
      return build_stream(engine, value);
    case RdbKind::module:
      return Unexpected{"module type '" + value.module_name + "' is not supported"};
  }
  return Unexpected{std::string("unknown value kind")};
}

namespace {

class EngineLoader : public RdbVisitor {
 public:
  EngineLoader(Engine& engine, const RdbLoadOptions& options, RdbLoadStats& stats)
      : m_engine(engine), m_options(options), m_stats(stats), m_now_ms(engine.clock().now_ms()) {}

  void on_function(std::string_view code) override { m_stats.functions.emplace_back(code); }

  bool on_key(RdbKey& k) override {
    if (k.db >= static_cast<uint64_t>(m_engine.db_count())) {
      return fail(k, "database " + std::to_string(k.db) + " is out of range (databases " +
                         std::to_string(m_engine.db_count()) + ")");
    }
    if (k.expire_ms >= 0 && k.expire_ms <= m_now_ms) {
      ++m_stats.expired_skipped;
      return true;
    }
    Db& db = m_engine.db(static_cast<int>(k.db));
    if (db.exists(k.key)) {
      if (!m_options.replace_existing) {
        return fail(k, "duplicate key '" + k.key + "'");
      }
      db.remove(k.key);
    }
    bool unsupported = k.value.kind == RdbKind::module;
    if (unsupported && m_options.skip_unsupported) {
      ++m_stats.skipped_unsupported;
      return true;
    }
    bool is_hash = k.value.kind == RdbKind::hash;
    auto spec = build_engine_value(m_engine, std::move(k.value), m_now_ms);
    if (!spec) {
      if (spec.error().rfind("empty", 0) == 0) {
        ++m_stats.empty_skipped;
        return true;
      }
      if (is_hash) {
        ++m_stats.expired_skipped;
        return true;
      }
      return fail(k, spec.error());
    }
    Entry* e = db.add(k.key, *spec, k.expire_ms);
    if (k.freq >= 0) {
      e->set_lru(lfu_field(static_cast<uint8_t>(k.freq), m_now_ms));
    }
    ++m_stats.keys_loaded;
    return true;
  }

  const std::optional<RdbError>& error() const { return m_error; }

 private:
  bool fail(const RdbKey& k, std::string message) {
    m_error = RdbError{k.offset, "key '" + k.key + "': " + std::move(message)};
    return false;
  }

  Engine& m_engine;
  const RdbLoadOptions& m_options;
  RdbLoadStats& m_stats;
  int64_t m_now_ms;
  std::optional<RdbError> m_error;
};

}  // namespace

Expected<RdbLoadStats, RdbError> load_rdb(Engine& engine, std::string_view file,
                                          const RdbLoadOptions& options) {
  RdbLoadStats stats;
  EngineLoader loader(engine, options, stats);
  RdbReadOptions read = options.read;
  read.skip_modules = read.skip_modules || options.skip_unsupported;
  auto summary = read_rdb(file, loader, read);
  if (!summary) {
    return Unexpected{summary.error()};
  }
  if (loader.error()) {
    return Unexpected{*loader.error()};
  }
  stats.summary = *summary;
  return stats;
}

}  // namespace keyshift::engine
