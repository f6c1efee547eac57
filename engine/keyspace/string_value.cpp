#include "engine/keyspace/string_value.hpp"

#include "engine/util/strconv.hpp"

namespace keyshift::engine {

std::string_view string_of(const Entry* e, IntBuffer& buf) {
  switch (e->kind()) {
    case Entry::Kind::integer:
      return std::string_view(buf.data, format_i64(e->integer(), buf.data));
    case Entry::Kind::inline_bytes:
      return e->inline_bytes();
    case Entry::Kind::object:
    case Entry::Kind::blob:  // never a string's: only collections keep bare blocks
      break;
  }
  return static_cast<const HeapString*>(e->object())->data();
}

Entry::ValueSpec make_int_spec(int64_t value) {
  Entry::ValueSpec spec;
  spec.kind = Entry::Kind::integer;
  spec.integer = value;
  spec.type = ObjType::string;
  spec.encoding = ObjEncoding::int_;
  return spec;
}

Entry::ValueSpec make_raw_string_spec(std::string_view value) {
  Entry::ValueSpec spec;
  spec.type = ObjType::string;
  spec.encoding = ObjEncoding::raw;
  if (value.size() > k_inline_string_max) {
    spec.kind = Entry::Kind::object;
    spec.object = new HeapString(value);
  } else {
    spec.kind = Entry::Kind::inline_bytes;
    spec.bytes = value;
  }
  return spec;
}

Entry::ValueSpec make_raw_string_spec(std::string&& value) {
  if (value.size() <= k_inline_string_max) {
    return make_raw_string_spec(std::string_view(value));
  }
  Entry::ValueSpec spec;
  spec.type = ObjType::string;
  spec.encoding = ObjEncoding::raw;
  spec.kind = Entry::Kind::object;
  spec.object = new HeapString(std::move(value));
  return spec;
}

Entry::ValueSpec make_string_spec(std::string_view value) {
  int64_t n = 0;
  if (value.size() <= 20 && parse_i64(value, n)) {
    return make_int_spec(n);
  }
  Entry::ValueSpec spec = make_raw_string_spec(value);
  spec.encoding = value.size() <= k_embstr_max ? ObjEncoding::embstr : ObjEncoding::raw;
  return spec;
}

}  // namespace keyshift::engine
