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
#include "engine/scripting/script_engine.hpp"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <utility>

namespace keyshift::engine {

namespace {

/// What building a value reads: the engine's settings and a random source for table seeds.
/// A load builds values off the engine's thread, so it passes its own generator.
struct BuildContext {
  const EngineConfig& config;
  std::mt19937_64& rng;
};

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
/// Listpack nodes read as blocks (keep_blocks) are adopted as they are.
Entry::ValueSpec build_list(const BuildContext& ctx, RdbValue& value) {
  const EngineConfig& c = ctx.config;
  ListLimits limits{c.list_max_listpack_size, c.list_compress_depth};
  std::unique_ptr<ListValue> list;
  if (!value.list_nodes.empty()) {
    auto ql = std::make_unique<Quicklist>(limits.fill, limits.compress_depth);
    size_t i = 0;
    size_t block = 0;
    bool blocks = !value.packed.empty();
    for (const RdbListNode& node : value.list_nodes) {
      if (node.plain) {
        ql->append_plain(value.items[i++]);
        continue;
      }
      if (blocks) {
        ql->append_listpack(std::move(value.packed[block++]));
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

Entry::ValueSpec build_set(const BuildContext& ctx, RdbValue& value) {
  SetLimits limits = SetLimits::from(ctx.config);
  std::unique_ptr<SetValue> owned;
  if (!value.intset.empty()) {
    // As Valkey's RDB_TYPE_SET_INTSET: kept unless it holds more than set-max-intset-entries.
    owned.reset(SetValue::adopt(std::move(value.intset), ctx.rng()));
    if (owned->size() > static_cast<size_t>(ctx.config.set_max_intset_entries)) {
      owned->convert(ObjEncoding::hashtable);
    }
  } else if (!value.packed.empty() && !value.packed.front().empty()) {
    // As RDB_TYPE_SET_LISTPACK: kept unless it holds more than set-max-listpack-entries.
    owned.reset(SetValue::adopt(std::move(value.packed.front()), ctx.rng()));
    if (owned->size() > static_cast<size_t>(ctx.config.set_max_listpack_entries)) {
      owned->convert(ObjEncoding::hashtable);
    }
  } else {
    const std::vector<std::string>& members = value.items;
    owned.reset(SetValue::create(members.front(), members.size(), limits, ctx.rng()));
    for (const std::string& m : members) {
      owned->add(m, limits);
    }
  }
  owned->shrink_to_fit();
  // A small set is kept as its bare intset/listpack block (see Entry::Kind::blob).
  return value_spec(owned.release(), ObjType::set);
}

Entry::ValueSpec build_zset(const BuildContext& ctx, const RdbValue& value) {
  const std::vector<std::pair<std::string, double>>& m = value.zset;
  const EngineConfig& c = ctx.config;
  ZSetLimits limits{c.zset_max_listpack_entries, c.zset_max_listpack_value};
  size_t max_len = 0;
  for (const auto& [member, score] : m) {
    max_len = std::max(max_len, member.size());
  }
  auto z = ZSetValue::create(m.size(), max_len, limits, ctx.rng());
  // Members are added lowest score last, the order Valkey saves skiplists in, so each
  // lands at the head of the listpack or skiplist without a walk. A listpack file value is
  // stored in ascending order, so it is walked backwards.
  bool ascending = value.rdb_type == static_cast<uint8_t>(rdb::Type::zset_listpack) ||
                   value.rdb_type == static_cast<uint8_t>(rdb::Type::zset_ziplist);
  for (size_t i = 0; i < m.size(); ++i) {
    const auto& [member, score] = m[ascending ? m.size() - 1 - i : i];
    double unused = 0;
    z->add(score, member, 0, unused, limits);
  }
  // A small sorted set is kept as its bare listpack block (see Entry::Kind::blob).
  return value_spec(z.release(), ObjType::zset);
}

/// A listpack kept as the entry's bare block (see Entry::Kind::blob).
Entry::ValueSpec listpack_block_spec(Listpack&& lp, ObjType type) {
  Entry::ValueSpec spec;
  spec.kind = Entry::Kind::blob;
  spec.type = type;
  spec.encoding = ObjEncoding::listpack;
  spec.blob = lp.release();
  return spec;
}

/// A sorted-set listpack read as a block (type 17 with keep_blocks): as Valkey's
/// RDB_TYPE_ZSET_LISTPACK, kept as it is unless it holds more than zset-max-listpack-entries
/// members, which then go into a skiplist.
Entry::ValueSpec build_zset_block(const BuildContext& ctx, Listpack&& lp) {
  const EngineConfig& c = ctx.config;
  if (lp.size() / 2 <= static_cast<size_t>(c.zset_max_listpack_entries)) {
    return listpack_block_spec(std::move(lp), ObjType::zset);
  }
  ZSetLimits limits{c.zset_max_listpack_entries, c.zset_max_listpack_value};
  auto z = ZSetValue::create(lp.size() / 2, 0, limits, ctx.rng());
  std::vector<std::pair<std::string, double>> members;
  members.reserve(lp.size() / 2);
  for (Listpack::Pos p = lp.first(); p != Listpack::k_none; p = lp.next(lp.next(p))) {
    members.emplace_back(lp.get(p).to_string(), ZSetValue::lp_score(lp.get(lp.next(p))));
  }
  // Highest score first, so that each member lands at the skiplist's head without a walk.
  for (auto it = members.rbegin(); it != members.rend(); ++it) {
    double unused = 0;
    z->add(it->second, it->first, 0, unused, limits);
  }
  return value_spec(z.release(), ObjType::zset);
}

/// A hash listpack read as a block (type 16 with keep_blocks): as Valkey's
/// RDB_TYPE_HASH_LISTPACK, kept as it is unless it holds more than hash-max-listpack-entries
/// fields, which are then inserted one by one.
Entry::ValueSpec build_hash_block(const BuildContext& ctx, Listpack&& lp) {
  const EngineConfig& c = ctx.config;
  if (lp.size() / 2 <= static_cast<size_t>(c.hash_max_listpack_entries)) {
    return listpack_block_spec(std::move(lp), ObjType::hash);
  }
  HashLimits limits{c.hash_max_listpack_entries, c.hash_max_listpack_value};
  auto h = std::make_unique<HashValue>(ctx.rng());
  std::vector<std::string> texts;
  texts.reserve(lp.size());
  for (Listpack::Pos p = lp.first(); p != Listpack::k_none; p = lp.next(p)) {
    texts.push_back(lp.get(p).to_string());
  }
  std::vector<std::string_view> args(texts.begin(), texts.end());
  h->convert_for_write(args, limits);  // too many fields: a table from the start
  for (size_t i = 0; i + 1 < texts.size(); i += 2) {
    h->set(texts[i], texts[i + 1], limits, false);
  }
  return value_spec(h.release(), ObjType::hash);
}

Entry::ValueSpec build_hash(const BuildContext& ctx, const std::vector<RdbHashField>& fields,
                            int64_t now_ms) {
  const EngineConfig& c = ctx.config;
  HashLimits limits{c.hash_max_listpack_entries, c.hash_max_listpack_value};
  auto h = std::make_unique<HashValue>(ctx.rng());
  bool any_ttl = false;
  for (const RdbHashField& f : fields) {
    any_ttl = any_ttl || f.expire_ms >= 0;
  }
  if (any_ttl) {
    h->enable_field_expiry();
  }
  if (fields.size() > c.hash_max_listpack_entries) {
    // As Valkey's rdbLoadObject: a hash with more fields than a listpack may hold is a
    // table from the start, rather than a listpack searched for every field first.
    std::vector<std::string_view> args;
    args.reserve(2 * fields.size());
    for (const RdbHashField& f : fields) {
      args.push_back(f.field);
      args.push_back(f.value);
    }
    h->convert_for_write(args, limits);
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
Expected<Entry::ValueSpec, std::string> build_stream(const BuildContext& ctx,
                                                     const RdbValue& value) {
  const RdbStream& in = value.stream;
  const EngineConfig& c = ctx.config;
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

Expected<Entry::ValueSpec, std::string> build_value(const BuildContext& ctx, RdbValue&& value,
                                                    int64_t now_ms) {
  switch (value.kind) {
    case RdbKind::string:
      return make_string_spec(value.str);
    case RdbKind::list:
      if (value.items.empty() && value.packed.empty()) {
        return Unexpected{std::string("empty list")};
      }
      return build_list(ctx, value);
    case RdbKind::set:
      if (value.items.empty() && (value.packed.empty() || value.packed.front().empty()) &&
          value.intset.empty()) {
        return Unexpected{std::string("empty set")};
      }
      return build_set(ctx, value);
    case RdbKind::zset:
      if (!value.packed.empty()) {
        if (value.packed.front().empty()) {
          return Unexpected{std::string("empty sorted set")};
        }
        return build_zset_block(ctx, std::move(value.packed.front()));
      }
      if (value.zset.empty()) {
        return Unexpected{std::string("empty sorted set")};
      }
      return build_zset(ctx, value);
    case RdbKind::hash: {
      if (!value.packed.empty()) {
        if (value.packed.front().empty()) {
          return Unexpected{std::string("empty hash")};
        }
        return build_hash_block(ctx, std::move(value.packed.front()));
      }
      if (value.hash.empty()) {
        return Unexpected{std::string("empty hash")};
      }
      Entry::ValueSpec spec = build_hash(ctx, value.hash, now_ms);
      if (spec.kind == Entry::Kind::blob ? spec.blob == nullptr
                                         : static_cast<HashValue*>(spec.object)->empty()) {
        delete spec.object;
        return Unexpected{std::string("every field of the hash has expired")};
      }
      return spec;
    }
    case RdbKind::stream:
      return build_stream(ctx, value);
    case RdbKind::module:
      return Unexpected{"module type '" + value.module_name + "' is not supported"};
    case RdbKind::path_hash:
      return Unexpected{std::string("a Path Hash (Valkey 9.2's type 23) has no keyshift type")};
  }
  return Unexpected{std::string("unknown value kind")};
}

/// Frees a built value that never made it into a key (a load that stopped).
void discard(const Entry::ValueSpec& spec) {
  if (spec.kind == Entry::Kind::object) {
    delete spec.object;
  } else if (spec.kind == Entry::Kind::blob) {
    MemoryCounter::raw_deallocate(spec.blob);
  }
}

}  // namespace

Expected<Entry::ValueSpec, std::string> build_engine_value(Engine& engine, RdbValue&& value,
                                                           int64_t now_ms) {
  BuildContext ctx{engine.config(), engine.rng()};
  return build_value(ctx, std::move(value), now_ms);
}

namespace {

/// What becomes of one key read from the file. `build`: its value is still to be built
/// (left to the inserting thread while it would otherwise wait).
/// `decode`: the reader stepped over its value, which is still to be read from the file
/// and built.
enum class KeyAction : uint8_t {
  add,
  build,
  decode,
  expired,
  expired_hash,
  empty,
  unsupported,
  error
};

/// One key read and built, waiting to be inserted.
struct LoadedKey {
  uint64_t db = 0;
  uint64_t offset = 0;
  std::string key;
  std::string str;  // a string value: the spec's bytes view into it
  Entry::ValueSpec spec;
  std::unique_ptr<RdbValue> value;  // KeyAction::build
  uint64_t value_offset = 0;        // KeyAction::decode: where and what the value is
  uint64_t value_bytes = 0;
  uint8_t value_type = 0;
  bool check_only = false;  // KeyAction::expired with a deferred value: read, then dropped
  int64_t expire_ms = -1;
  int freq = -1;
  KeyAction action = KeyAction::add;
  std::string error;  // KeyAction::error
};

/// Keys handed from the reading thread to the inserting one in file order. Items never move
/// once in a batch (its storage is reserved up front), so string specs can view `str`.
struct LoadBatch {
  std::vector<LoadedKey> keys;
  /// RESIZEDB hints (database, keys) read before the batch's last key.
  std::vector<std::pair<uint64_t, uint64_t>> resize_hints;
};

constexpr size_t k_batch_keys = 512;
/// Batches in flight between the threads: bounds the memory a fast reader can run ahead by.
constexpr size_t k_queue_batches = 16;
/// Below this many waiting batches the inserting thread is about to run dry, so the reader
/// leaves the next batch's values for it to build. Waiting for an empty queue left it idle
/// too often: measured on a 200,000-key file, 4 loads faster than 1 by about 10%.
constexpr size_t k_low_water_batches = 4;
/// Files from this size on are read and built on a second thread while the engine's thread
/// inserts; smaller ones are not worth a thread.
constexpr size_t k_pipeline_min_bytes = size_t{1} << 20;

/// Frees what the keys of `batch` from `from` on own and empties it.
void discard_batch(LoadBatch& batch, size_t from = 0);

/// A bounded queue of batches between one producer and one consumer.
class BatchQueue {
 public:
  /// Blocks while full; false once the consumer gave up (the batch is handed back).
  bool push(LoadBatch& batch) {
    std::unique_lock lock(m_mu);
    m_not_full.wait(lock, [&] { return m_queue.size() < k_queue_batches || m_abandoned; });
    if (m_abandoned) {
      return false;
    }
    m_queue.push_back(std::move(batch));
    m_not_empty.notify_one();
    return true;
  }
  /// Batches waiting to be taken.
  size_t size() {
    std::lock_guard lock(m_mu);
    return m_queue.size();
  }
  /// The producer is done.
  void close() {
    std::lock_guard lock(m_mu);
    m_closed = true;
    m_not_empty.notify_one();
  }
  /// The next batch; false when closed and drained.
  bool pop(LoadBatch& out) {
    std::unique_lock lock(m_mu);
    m_not_empty.wait(lock, [&] { return !m_queue.empty() || m_closed; });
    if (m_queue.empty()) {
      return false;
    }
    out = std::move(m_queue.front());
    m_queue.pop_front();
    m_not_full.notify_one();
    return true;
  }
  /// An emptied batch handed back by the consumer, so its storage is used again.
  void recycle(LoadBatch&& batch) {
    std::lock_guard lock(m_mu);
    if (m_free.size() < k_queue_batches) {
      m_free.push_back(std::move(batch));
    }
  }
  /// Replaces `batch` (just pushed, so empty) by a recycled one when there is one, emptied
  /// here: on the producer's thread, which allocated what it holds.
  void reuse(LoadBatch& batch) {
    {
      std::lock_guard lock(m_mu);
      if (m_free.empty()) {
        return;
      }
      batch = std::move(m_free.back());
      m_free.pop_back();
    }
    discard_batch(batch);
  }
  /// The consumer stops taking batches: the producer's pushes fail from now on and what
  /// is queued is handed back for freeing.
  std::deque<LoadBatch> abandon() {
    std::lock_guard lock(m_mu);
    m_abandoned = true;
    m_not_full.notify_one();
    return std::exchange(m_queue, {});
  }

 private:
  std::mutex m_mu;
  std::condition_variable m_not_full;
  std::condition_variable m_not_empty;
  std::deque<LoadBatch> m_queue;
  std::vector<LoadBatch> m_free;
  bool m_closed = false;
  bool m_abandoned = false;
};

/// Builds the engine value of `out` from `value` and settles its action.
void build_key(const BuildContext& ctx, RdbValue& value, LoadedKey& out, int64_t now_ms) {
  out.action = KeyAction::add;
  bool is_hash = value.kind == RdbKind::hash;
  if (value.kind == RdbKind::string) {
    out.str = std::move(value.str);
    out.spec = make_string_spec(out.str);
    return;
  }
  auto spec = build_value(ctx, std::move(value), now_ms);
  if (spec) {
    out.spec = *spec;
    return;
  }
  if (spec.error().rfind("empty", 0) == 0) {
    out.action = KeyAction::empty;
  } else if (is_hash) {
    out.action = KeyAction::expired_hash;
  } else {
    out.action = KeyAction::error;
    out.error = std::move(spec.error());
  }
}

void discard_batch(LoadBatch& batch, size_t from) {
  for (size_t i = from; i < batch.keys.size(); ++i) {
    if (batch.keys[i].action == KeyAction::add) {
      discard(batch.keys[i].spec);
    }
  }
  batch.keys.clear();
}

/// Reads keys and builds their values (the part of a load that needs no keyspace), handing
/// them on in batches through `emit`, which returns false to stop the read. When `idle`
/// says the inserting side is running out of work, a batch's values are left for it to build.
class KeyBuilder : public RdbVisitor {
 public:
  using Emit = std::function<bool(LoadBatch&)>;
  using Idle = std::function<bool()>;

  KeyBuilder(const EngineConfig& config, uint64_t seed, int64_t now_ms,
             const RdbLoadOptions& options, Emit emit, Idle idle = {})
      : m_config(config),
        m_rng(seed),
        m_now_ms(now_ms),
        m_options(options),
        m_emit(std::move(emit)),
        m_idle(std::move(idle)) {
    m_batch.keys.reserve(k_batch_keys);
  }
  ~KeyBuilder() override { discard_batch(m_batch); }
  KeyBuilder(const KeyBuilder&) = delete;
  KeyBuilder& operator=(const KeyBuilder&) = delete;

  void on_function(std::string_view code) override { m_functions.emplace_back(code); }

  void on_select_db(uint64_t db) override { m_db = db; }

  void on_resize_db(uint64_t keys, uint64_t) override {
    m_batch.resize_hints.emplace_back(m_db, keys);
  }

  bool defer_value(uint8_t) override {
    decide_for_batch();
    return m_leave_to_inserter;
  }

  bool on_key(RdbKey& k) override {
    decide_for_batch();
    LoadedKey& out = m_batch.keys.emplace_back();
    out.db = k.db;
    out.offset = k.offset;
    out.key = std::move(k.key);
    out.expire_ms = k.expire_ms;
    out.freq = k.freq;
    if (k.deferred) {
      out.value_offset = k.value_offset;
      out.value_bytes = k.value_bytes;
      out.value_type = k.value.rdb_type;
    }
    if (k.expire_ms >= 0 && k.expire_ms <= m_now_ms) {
      out.action = KeyAction::expired;
      // A deferred value is still read, only to be checked: as in an immediate read, a
      // corrupt value fails the load even when its key has expired.
      out.check_only = k.deferred;
    } else if ((k.value.kind == RdbKind::module || k.value.kind == RdbKind::path_hash) &&
               m_options.skip_unsupported) {
      out.action = KeyAction::unsupported;
    } else if (k.deferred) {
      out.action = KeyAction::decode;
    } else if (m_leave_to_inserter && k.value.kind != RdbKind::string) {
      out.action = KeyAction::build;
      out.value = std::make_unique<RdbValue>(std::move(k.value));
    } else {
      build_key(BuildContext{m_config, m_rng}, k.value, out, m_now_ms);
    }
    if (m_batch.keys.size() == k_batch_keys) {
      return flush();
    }
    return true;
  }

  /// Hands on the last, partial batch.
  bool flush() {
    m_decided = false;
    if (m_batch.keys.empty() && m_batch.resize_hints.empty()) {
      return true;
    }
    bool go_on = m_emit(m_batch);
    discard_batch(m_batch);  // empty unless the consumer refused it
    m_batch.keys.reserve(k_batch_keys);
    return go_on;
  }

  std::vector<std::string>& functions() { return m_functions; }

 private:
  /// At a batch's first key: whether its values are left to the inserting thread (read and
  /// built there) because it is about to run out of work.
  void decide_for_batch() {
    if (m_batch.keys.empty() && !m_decided) {
      m_leave_to_inserter = m_idle && m_idle();
      m_decided = true;
    }
  }

  const EngineConfig& m_config;
  std::mt19937_64 m_rng;
  int64_t m_now_ms;
  const RdbLoadOptions& m_options;
  Emit m_emit;
  Idle m_idle;
  bool m_leave_to_inserter = false;
  bool m_decided = false;
  uint64_t m_db = 0;
  LoadBatch m_batch;
  std::vector<std::string> m_functions;
};

/// Inserts built keys into the engine's databases in file order (the engine's thread).
class KeyInserter {
 public:
  KeyInserter(Engine& engine, std::string_view file, const RdbReadOptions& read,
              const RdbLoadOptions& options, RdbLoadStats& stats, int64_t now_ms, uint64_t max_hint)
      : m_engine(engine),
        m_file(file),
        m_read(read),
        m_options(options),
        m_stats(stats),
        m_now_ms(now_ms),
        m_max_hint(max_hint) {}

  /// Inserts the batch's keys; false at the first key that cannot be loaded (error()), the
  /// keys after it are freed. The batch keeps its keys' names and strings: whoever reuses it
  /// frees them, so that the reading thread frees what it allocated.
  bool insert(LoadBatch& batch) {
    for (auto [db, keys] : batch.resize_hints) {
      // A hint sizes the table, so it is believed only as far as the file could hold keys.
      if (db < static_cast<uint64_t>(m_engine.db_count())) {
        m_engine.db(static_cast<int>(db)).reserve(std::min(keys, m_max_hint));
      }
    }
    batch.resize_hints.clear();
    for (size_t i = 0; i < batch.keys.size(); ++i) {
      if (!insert_one(batch.keys[i])) {
        discard_batch(batch, i);
        return false;
      }
    }
    return true;
  }

  const std::optional<RdbError>& error() const { return m_error; }

 private:
  bool insert_one(LoadedKey& k) {
    if (k.db >= static_cast<uint64_t>(m_engine.db_count())) {
      return fail(k, "database " + std::to_string(k.db) + " is out of range (databases " +
                         std::to_string(m_engine.db_count()) + ")");
    }
    bool decoded_here = k.action == KeyAction::decode;
    if (decoded_here || k.check_only) {
      auto value = decode_rdb_value(k.value_type, m_file.substr(k.value_offset, k.value_bytes),
                                    m_read, k.value_offset);
      if (!value) {
        m_error = std::move(value.error());  // as the reader would have reported it
        return false;
      }
      if (decoded_here) {
        build_key(BuildContext{m_engine.config(), m_engine.rng()}, *value, k, m_now_ms);
      }
    }
    if (k.action == KeyAction::expired) {
      ++m_stats.expired_skipped;
      return true;
    }
    if (k.action == KeyAction::build) {
      // The decoded value stays in the batch: the reading thread, which allocated it, frees
      // it when it reuses the batch (cross-thread frees keep the allocator from reusing
      // that memory soon, so the reader would touch fresh pages instead).
      build_key(BuildContext{m_engine.config(), m_engine.rng()}, *k.value, k, m_now_ms);
    }
    Db& db = m_engine.db(static_cast<int>(k.db));
    if (db.exists(k.key)) {
      if (!m_options.replace_existing) {
        return fail(k, "duplicate key '" + k.key + "'");
      }
      db.remove(k.key);
    }
    switch (k.action) {
      case KeyAction::unsupported:
        ++m_stats.skipped_unsupported;
        return true;
      case KeyAction::empty:
        ++m_stats.empty_skipped;
        return true;
      case KeyAction::expired:
      case KeyAction::expired_hash:
        ++m_stats.expired_skipped;
        return true;
      case KeyAction::error:
        return fail(k, std::move(k.error));
      case KeyAction::add:
      case KeyAction::build:
      case KeyAction::decode:
        break;
    }
    k.action = KeyAction::expired;  // the entry owns the value from here on
    Entry* e = db.add(k.key, k.spec, k.expire_ms);
    if (k.freq >= 0) {
      e->set_lru(lfu_field(static_cast<uint8_t>(k.freq), m_now_ms));
    }
    ++m_stats.keys_loaded;
    if (decoded_here) {
      std::string().swap(k.str);  // allocated on this thread: freed here, not by the reader
    }
    return true;
  }

  bool fail(LoadedKey& k, std::string message) {
    m_error = RdbError{k.offset, "key '" + k.key + "': " + std::move(message)};
    return false;
  }

  Engine& m_engine;
  std::string_view m_file;
  const RdbReadOptions& m_read;
  const RdbLoadOptions& m_options;
  RdbLoadStats& m_stats;
  int64_t m_now_ms;
  uint64_t m_max_hint;
  std::optional<RdbError> m_error;
};

}  // namespace

Expected<RdbLoadStats, RdbError> load_rdb(Engine& engine, std::string_view file,
                                          const RdbLoadOptions& options) {
  RdbLoadStats stats;
  int64_t now_ms = engine.clock().now_ms();
  // A key takes at least 3 bytes of the file (type, key length, value).
  RdbReadOptions read = options.read;
  read.skip_modules = read.skip_modules || options.skip_unsupported;
  read.keep_blocks = read.materialize;
  KeyInserter inserter(engine, file, read, options, stats, now_ms, file.size() / 3);
  // The engine's settings are only read while the builder runs; its generator is not
  // shared: the builder seeds its own.
  uint64_t seed = engine.rng()();

  Expected<RdbSummary, RdbError> summary = RdbSummary{};
  std::vector<std::string> functions;
  if (file.size() < k_pipeline_min_bytes) {
    KeyBuilder builder(engine.config(), seed, now_ms, options,
                       [&](LoadBatch& batch) { return inserter.insert(batch); });
    summary = read_rdb(file, builder, read);
    builder.flush();  // keys read before an error are loaded, as they always were
    functions = std::move(builder.functions());
  } else {
    // Two cores: this thread inserts while a second one reads, validates and builds.
    BatchQueue queue;
    KeyBuilder builder(
        engine.config(), seed, now_ms, options,
        [&](LoadBatch& batch) {
          bool pushed = queue.push(batch);
          if (pushed) {
            queue.reuse(batch);
          }
          return pushed;
        },
        [&] {
          switch (options.share) {
            case RdbLoadOptions::Share::always:
              return true;
            case RdbLoadOptions::Share::never:
              return false;
            case RdbLoadOptions::Share::when_idle:
              break;
          }
          return queue.size() < k_low_water_batches;
        });
    std::thread reader([&] {
      summary = read_rdb(file, builder, read);
      builder.flush();
      queue.close();
    });
    LoadBatch batch;
    while (queue.pop(batch)) {
      if (!inserter.insert(batch)) {
        for (LoadBatch& rest : queue.abandon()) {
          discard_batch(rest);
        }
        break;
      }
      queue.recycle(std::move(batch));
    }
    reader.join();
    functions = std::move(builder.functions());
  }
  if (inserter.error()) {
    return Unexpected{*inserter.error()};
  }
  if (!summary) {
    return Unexpected{summary.error()};
  }
  // The libraries join the engine's (replacing same-named ones, as DEBUG RELOAD reloads
  // what it saved); a library that does not load fails the load, as in Valkey.
  for (size_t i = 0; i < functions.size(); ++i) {
    std::string error;
    if (!engine.scripting().load_library(functions[i], true, error)) {
      return Unexpected{
          RdbError{0, "function library " + std::to_string(i + 1) + " does not load: " + error}};
    }
  }
  stats.summary = *summary;
  stats.functions = std::move(functions);
  return stats;
}

}  // namespace keyshift::engine
