// Pub/sub: (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PUBLISH, SPUBLISH and PUBSUB. Which commands a
// subscribed RESP2 client may run is checked in dispatch.
#include "engine/commands/context.hpp"
#include "engine/commands/families.hpp"
#include "engine/pubsub.hpp"

#include <optional>
#include <string>
#include <vector>

namespace keyshift::engine {
namespace {

/// The reply words and the count each kind of (un)subscription reports.
struct KindInfo {
  PubSubKind kind;
  std::string_view subscribe_word;
  std::string_view unsubscribe_word;
};

constexpr KindInfo k_channel_info{PubSubKind::channel, "subscribe", "unsubscribe"};
constexpr KindInfo k_pattern_info{PubSubKind::pattern, "psubscribe", "punsubscribe"};
constexpr KindInfo k_shard_info{PubSubKind::shard, "ssubscribe", "sunsubscribe"};

/// Subscriptions a (un)subscribe confirmation counts: shard channels count apart from the
/// rest.
int64_t confirmation_count(const Session& s, PubSubKind kind) {
  return kind == PubSubKind::shard ? static_cast<int64_t>(s.shard_channels.size())
                                   : static_cast<int64_t>(s.subscription_count());
}

/// A (un)subscribe confirmation: a push in RESP3, an array in RESP2; `name` null when an
/// unsubscribe-all found nothing.
void confirm(CmdContext& ctx, std::string_view word, const std::string_view* name,
             PubSubKind kind) {
  ReplyBuilder& r = ctx.reply();
  Session& s = ctx.session();
  size_t mark = s.out.size();
  r.push(3);
  r.bulk(word);
  if (name != nullptr) {
    r.bulk(*name);
  } else {
    r.null();
  }
  r.integer(confirmation_count(s, kind));
  if (s.replies_silenced() && s.out.size() >= mark) {
    s.kept_pushes.append(s.out, mark, std::string::npos);
    s.out.resize(mark);
  }
}

/// Leaves pub/sub mode once nothing is subscribed any more.
void update_pubsub_flag(Session& s) {
  if (s.channels.empty() && s.patterns.empty() && s.shard_channels.empty()) {
    s.clear(k_session_pubsub);
  }
}

void subscribe_generic(CmdContext& ctx, const KindInfo& info) {
  PubSub& ps = ctx.engine().pubsub();
  for (size_t i = 1; i < ctx.argc(); ++i) {
    std::string_view name = ctx.arg(i);
    ps.subscribe(ctx.session(), info.kind, name);
    confirm(ctx, info.subscribe_word, &name, info.kind);
  }
  ctx.session().set(k_session_pubsub);
}

void unsubscribe_generic(CmdContext& ctx, const KindInfo& info) {
  PubSub& ps = ctx.engine().pubsub();
  Session& s = ctx.session();
  if (ctx.argc() == 1) {
    auto& mine = info.kind == PubSubKind::pattern ? s.patterns
                 : info.kind == PubSubKind::shard ? s.shard_channels
                                                  : s.channels;
    std::vector<std::string> names(mine.begin(), mine.end());
    for (const std::string& n : names) {
      ps.unsubscribe(s, info.kind, n);
      std::string_view name = n;
      confirm(ctx, info.unsubscribe_word, &name, info.kind);
    }
    if (names.empty()) {
      confirm(ctx, info.unsubscribe_word, nullptr, info.kind);
    }
  } else {
    for (size_t i = 1; i < ctx.argc(); ++i) {
      std::string_view name = ctx.arg(i);
      ps.unsubscribe(s, info.kind, name);
      confirm(ctx, info.unsubscribe_word, &name, info.kind);
    }
  }
  update_pubsub_flag(s);
}

void cmd_subscribe(CmdContext& ctx) {
  subscribe_generic(ctx, k_channel_info);
}

void cmd_psubscribe(CmdContext& ctx) {
  subscribe_generic(ctx, k_pattern_info);
}

void cmd_ssubscribe(CmdContext& ctx) {
  // Unlike SUBSCRIBE, refused inside EXEC too (Valkey's deny-blocking rule for SSUBSCRIBE).
  if (ctx.session().has(k_session_deny_blocking)) {
    ctx.reply().error(errors::k_ssubscribe_deny_blocking);
    return;
  }
  subscribe_generic(ctx, k_shard_info);
}

void cmd_unsubscribe(CmdContext& ctx) {
  unsubscribe_generic(ctx, k_channel_info);
}

void cmd_punsubscribe(CmdContext& ctx) {
  unsubscribe_generic(ctx, k_pattern_info);
}

void cmd_sunsubscribe(CmdContext& ctx) {
  unsubscribe_generic(ctx, k_shard_info);
}

void cmd_publish(CmdContext& ctx) {
  ctx.reply().integer(ctx.engine().pubsub().publish(ctx.arg(1), ctx.arg(2), false));
}

void cmd_spublish(CmdContext& ctx) {
  ctx.reply().integer(ctx.engine().pubsub().publish(ctx.arg(1), ctx.arg(2), true));
}

void channels_generic(CmdContext& ctx, bool shard) {
  if (ctx.argc() > 3) {
    ctx.reply().error("ERR unknown subcommand or wrong number of arguments for '" +
                      std::string(ctx.arg(1).substr(0, 128)) + "'. Try PUBSUB HELP.");
    return;
  }
  std::optional<std::string_view> pattern;
  if (ctx.argc() == 3) {
    pattern = ctx.arg(2);
  }
  std::vector<std::string> names = ctx.engine().pubsub().active_channels(pattern, shard);
  ctx.reply().array(names.size());
  for (const std::string& n : names) {
    ctx.reply().bulk(n);
  }
}

void numsub_generic(CmdContext& ctx, bool shard) {
  ctx.reply().array((ctx.argc() - 2) * 2);
  for (size_t i = 2; i < ctx.argc(); ++i) {
    ctx.reply().bulk(ctx.arg(i));
    ctx.reply().integer(static_cast<int64_t>(ctx.engine().pubsub().subscribers(ctx.arg(i), shard)));
  }
}

void cmd_pubsub_channels(CmdContext& ctx) {
  channels_generic(ctx, false);
}

void cmd_pubsub_shardchannels(CmdContext& ctx) {
  channels_generic(ctx, true);
}

void cmd_pubsub_numsub(CmdContext& ctx) {
  numsub_generic(ctx, false);
}

void cmd_pubsub_shardnumsub(CmdContext& ctx) {
  numsub_generic(ctx, true);
}

void cmd_pubsub_numpat(CmdContext& ctx) {
  ctx.reply().integer(static_cast<int64_t>(ctx.engine().pubsub().pattern_count()));
}

void cmd_pubsub_help(CmdContext& ctx) {
  reply_help(
      ctx,
      {
          "CHANNELS [<pattern>]",
          "    Return the currently active channels matching a <pattern> (default: '*').",
          "NUMPAT",
          "    Return number of subscriptions to patterns.",
          "NUMSUB [<channel> ...]",
          "    Return the number of subscribers for the specified channels, excluding",
          "    pattern subscriptions(default: no channels).",
          "SHARDCHANNELS [<pattern>]",
          "    Return the currently active shard level channels matching a <pattern> (default: "
          "'*').",
          "SHARDNUMSUB [<shardchannel> ...]",
          "    Return the number of subscribers for the specified shard level channel(s)",
      });
}

constexpr uint32_t k_ps = k_cmd_pubsub | k_cmd_loading | k_cmd_stale;

constexpr CommandSpec k_pubsub_commands[] = {
    {"subscribe", -2, k_ps | k_cmd_noscript, 0, 0, 0, cmd_subscribe, "@pubsub @slow"},
    {"unsubscribe", -1, k_ps | k_cmd_noscript, 0, 0, 0, cmd_unsubscribe, "@pubsub @slow"},
    {"psubscribe", -2, k_ps | k_cmd_noscript, 0, 0, 0, cmd_psubscribe, "@pubsub @slow"},
    {"punsubscribe", -1, k_ps | k_cmd_noscript, 0, 0, 0, cmd_punsubscribe, "@pubsub @slow"},
    {"publish", 3, k_ps | k_cmd_fast | k_cmd_may_replicate, 0, 0, 0, cmd_publish, "@pubsub @fast"},
    {"ssubscribe", -2, k_ps | k_cmd_noscript, 1, -1, 1, cmd_ssubscribe, "@pubsub @slow"},
    {"sunsubscribe", -1, k_ps | k_cmd_noscript, 1, -1, 1, cmd_sunsubscribe, "@pubsub @slow"},
    {"spublish", 3, k_ps | k_cmd_fast | k_cmd_may_replicate, 1, 1, 1, cmd_spublish,
     "@pubsub @fast"},
    {"pubsub", -2, 0, 0, 0, 0, nullptr, "@slow"},
    {"pubsub|channels", -2, k_ps, 0, 0, 0, cmd_pubsub_channels, "@pubsub @slow"},
    {"pubsub|help", 2, k_cmd_loading | k_cmd_stale, 0, 0, 0, cmd_pubsub_help, "@slow"},
    {"pubsub|numpat", 2, k_ps, 0, 0, 0, cmd_pubsub_numpat, "@pubsub @slow"},
    {"pubsub|numsub", -2, k_ps, 0, 0, 0, cmd_pubsub_numsub, "@pubsub @slow"},
    {"pubsub|shardchannels", -2, k_ps, 0, 0, 0, cmd_pubsub_shardchannels, "@pubsub @slow"},
    {"pubsub|shardnumsub", -2, k_ps, 0, 0, 0, cmd_pubsub_shardnumsub, "@pubsub @slow"},
};

}  // namespace

void register_pubsub_family(CommandRegistry& registry) {
  registry.add(k_pubsub_commands);
}

}  // namespace keyshift::engine
