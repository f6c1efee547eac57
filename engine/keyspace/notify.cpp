#include "engine/keyspace/notify.hpp"

#include <algorithm>
#include <iterator>

namespace keyshift::engine {
namespace {

struct EventClass {
  char letter;
  int bit;
};

// Keyspace event classes in the order Valkey prints them, with Valkey's bit values (as in
// NotifyClass); the first eleven are the type classes.
constexpr EventClass k_event_classes[] = {
    {'g', k_notify_generic},  {'$', k_notify_string},   {'l', k_notify_list},
    {'s', k_notify_set},      {'h', k_notify_hash},     {'z', k_notify_zset},
    {'x', k_notify_expired},  {'e', k_notify_evicted},  {'t', k_notify_stream},
    {'d', k_notify_module},   {'n', k_notify_new},      {'K', k_notify_keyspace},
    {'E', k_notify_keyevent}, {'m', k_notify_key_miss},
};
constexpr size_t k_event_type_classes = 11;

}  // namespace

std::optional<int> notify_flags_from_letters(std::string_view letters) {
  int flags = 0;
  for (char c : letters) {
    auto it = std::find_if(std::begin(k_event_classes), std::end(k_event_classes),
                           [c](const EventClass& e) { return e.letter == c; });
    if (c == 'A') {
      flags |= k_notify_all;
    } else if (it != std::end(k_event_classes)) {
      flags |= it->bit;
    } else {
      return std::nullopt;
    }
  }
  return flags;
}

std::string notify_letters(int flags) {
  std::string out;
  bool all = (flags & k_notify_all) == k_notify_all;
  if (all) {
    out += 'A';
  }
  for (size_t i = 0; i < std::size(k_event_classes); ++i) {
    const EventClass& e = k_event_classes[i];
    if ((flags & e.bit) != 0 && !(all && i < k_event_type_classes)) {
      out += e.letter;
    }
  }
  return out;
}

}  // namespace keyshift::engine
