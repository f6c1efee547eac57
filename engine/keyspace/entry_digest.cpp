#include "engine/keyspace/entry_digest.hpp"

#include "engine/keyspace/hash_value.hpp"
#include "engine/keyspace/list_value.hpp"
#include "engine/keyspace/set_value.hpp"
#include "engine/keyspace/stream_value.hpp"
#include "engine/keyspace/string_value.hpp"
#include "engine/keyspace/zset_value.hpp"

namespace keyshift::engine {

Digest value_digest(const Entry* e, const Digest& seed) {
  bool has_expire = e->has_expire();
  switch (e->type()) {
    case ObjType::string: {
      if (e->kind() == Entry::Kind::integer) {
        return digest_string(e->integer(), has_expire, seed);
      }
      IntBuffer buf;
      return digest_string(string_of(e, buf), has_expire, seed);
    }
    case ObjType::set:
      return digest_set(*SetRef(e), has_expire, seed);
    case ObjType::list:
      return digest_list(*static_cast<const ListValue*>(e->object()), has_expire, seed);
    case ObjType::hash:
      return digest_hash(*HashRef(e), has_expire, seed);
    case ObjType::zset:
      return digest_zset(*ZSetRef(e), has_expire, seed);
    case ObjType::stream:
      return digest_stream(*static_cast<const StreamValue*>(e->object()), has_expire, seed);
    default:
      // Module values have no digest here; they digest as their seed, as Valkey's do.
      return seed;
  }
}

}  // namespace keyshift::engine
