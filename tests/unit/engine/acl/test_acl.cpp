#include "engine/acl/acl.hpp"
#include "engine/commands/registry.hpp"
#include "engine/engine.hpp"
#include "engine/util/clock.hpp"

#include <doctest/doctest.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace {

using keyshift::engine::CommandRegistry;
using keyshift::engine::Engine;
using keyshift::engine::EngineConfig;
using keyshift::engine::ManualClock;
using keyshift::engine::RespValue;
using keyshift::engine::Session;
using keyshift::engine::acl::Denial;
using keyshift::engine::acl::RuleError;
using keyshift::engine::acl::User;
using keyshift::engine::acl::Users;

// A registry with every command, as an engine has.
struct Table {
  CommandRegistry registry;
  Table() { keyshift::engine::register_all_families(registry); }
};

std::vector<std::string> words(std::initializer_list<std::string_view> list) {
  return {list.begin(), list.end()};
}

// The outcome of checking `argv` for `user`.
Denial check(const Users& users, const User& user, std::initializer_list<std::string_view> argv,
             size_t* pos = nullptr) {
  std::vector<std::string_view> v(argv);
  const keyshift::engine::Command* cmd = users.registry().find(v[0]);
  if (cmd != nullptr && v.size() > 1 && !cmd->subcommands.empty()) {
    cmd = users.registry().find_sub(*cmd, v[1]);
  }
  REQUIRE(cmd != nullptr);
  size_t at = 0;
  Denial d = users.check_command(user, *cmd, v, at);
  if (pos != nullptr) {
    *pos = at;
  }
  return d;
}

std::string text(const RespValue& v) {
  return v.str;
}

// A network host that carries nothing: sessions opened on it are clients, not the engine's
// own (which run anything).
struct NoHost : keyshift::engine::SessionHost {
  void wake(Session&) override {}
  void request_shutdown() override {}
};

}  // namespace

TEST_SUITE("engine::acl rules") {
  TEST_CASE("the default user starts open and is described as Valkey lists it") {
    Table t;
    Users users(t.registry);
    const User& def = users.default_user();
    CHECK(def.enabled);
    CHECK(def.nopass);
    CHECK(Users::unrestricted(def));
    CHECK(users.describe(def) == "on nopass sanitize-payload ~* &* +@all");
  }

  TEST_CASE("a new user is off with no permissions until rules grant them") {
    Table t;
    Users users(t.registry);
    REQUIRE_FALSE(users.set_user("alice", {}));
    const User* alice = users.find("alice");
    REQUIRE(alice != nullptr);
    CHECK(users.describe(*alice) == "off sanitize-payload resetchannels -@all");
    CHECK(check(users, *alice, {"get", "k"}) == Denial::command);
  }

  TEST_CASE("command rules are kept in order and a repeated command moves to the end") {
    Table t;
    Users users(t.registry);
    REQUIRE_FALSE(users.set_user("u", words({"+@read", "-get", "+set", "+GET", "-config|set"})));
    const User& u = *users.find("u");
    CHECK(users.describe_commands(u.selectors[0]) == "-@all +@read +set +get -config|set");
    REQUIRE_FALSE(users.set_user("u", words({"allcommands", "-flushall"})));
    CHECK(users.describe_commands(u.selectors[0]) == "+@all -flushall");
  }

  TEST_CASE("a bad rule changes nothing and names the modifier") {
    Table t;
    Users users(t.registry);
    REQUIRE_FALSE(users.set_user("u", words({"on", "+get"})));
    auto err = users.set_user("u", words({"-get", "+nosuchcmd"}));
    REQUIRE(err);
    CHECK(*err ==
          "Error in ACL SETUSER modifier '+nosuchcmd': Unknown command or category name in ACL");
    CHECK(users.describe_commands(users.find("u")->selectors[0]) == "-@all +get");
    err = users.set_user("u", words({"bogus"}));
    REQUIRE(err);
    CHECK(*err == "Error in ACL SETUSER modifier 'bogus': Syntax error");
  }

  TEST_CASE("each rule error has Valkey's text") {
    Table t;
    Users users(t.registry);
    User u = users.make_user("u");
    CHECK(users.apply_rule(u, "~*") == RuleError::none);
    CHECK(users.apply_rule(u, "~a") == RuleError::keys_after_all);
    CHECK(users.apply_rule(u, "&*") == RuleError::none);
    CHECK(users.apply_rule(u, "&a") == RuleError::channels_after_all);
    CHECK(users.apply_rule(u, "<nothere") == RuleError::no_such_password);
    CHECK(users.apply_rule(u, "#ABC") == RuleError::bad_hash);
    CHECK(users.apply_rule(u, "+config|get|x") == RuleError::subcommand_first_arg);
    CHECK(users.apply_rule(u, "+nosuch|x") == RuleError::unknown_command);
    CHECK(users.apply_rule(u, "+select|") == RuleError::syntax);
    CHECK(users.apply_rule(u, "resetkeys") == RuleError::none);
    CHECK(users.apply_rule(u, "%X~a") == RuleError::syntax);
    CHECK(users.apply_rule(u, "+@nosuchcategory") == RuleError::unknown_command);
    CHECK(keyshift::engine::acl::rule_error_text(RuleError::subcommand_first_arg) ==
          "Allowing first-arg of a subcommand is not supported");
  }

  TEST_CASE("passwords are stored as SHA-256 and can be removed by text or hash") {
    Table t;
    Users users(t.registry);
    REQUIRE_FALSE(users.set_user("u", words({"on", ">password", ">password"})));
    const User& u = *users.find("u");
    REQUIRE(u.passwords.size() == 1);
    CHECK(u.passwords[0] == "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8");
    CHECK(users.check_credentials("u", "password"));
    CHECK_FALSE(users.check_credentials("u", "other"));
    REQUIRE_FALSE(users.set_user("u", words({"!" + u.passwords[0]})));
    CHECK(u.passwords.empty());
    CHECK_FALSE(users.check_credentials("u", "password"));
    REQUIRE_FALSE(users.set_user("u", words({"nopass"})));
    CHECK(users.check_credentials("u", "anything"));
    REQUIRE_FALSE(users.set_user("u", words({"off"})));
    CHECK_FALSE(users.check_credentials("u", "anything"));
  }

  TEST_CASE("read and write key patterns follow the key specs of each command") {
    Table t;
    Users users(t.registry);
    REQUIRE_FALSE(users.set_user("u", words({"on", "+@all", "%R~r:*", "%W~w:*", "~rw:*"})));
    const User& u = *users.find("u");
    CHECK(users.describe_keys(u.selectors[0]) == "%R~r:* %W~w:* ~rw:*");
    CHECK(check(users, u, {"get", "r:1"}) == Denial::none);
    CHECK(check(users, u, {"set", "r:1", "v"}) == Denial::key);
    CHECK(check(users, u, {"set", "w:1", "v"}) == Denial::none);
    CHECK(check(users, u, {"get", "w:1"}) == Denial::key);
    size_t pos = 0;
    CHECK(check(users, u, {"copy", "r:1", "w:2"}) == Denial::none);
    CHECK(check(users, u, {"mset", "w:1", "a", "x:1", "b"}, &pos) == Denial::key);
    CHECK(pos == 3);
    CHECK(check(users, u, {"lmove", "rw:1", "w:1", "left", "right"}) == Denial::none);
  }

  TEST_CASE("plain key patterns judge a command's key range as its key specs would") {
    Table t;
    Users users(t.registry);
    REQUIRE_FALSE(users.set_user("p", words({"on", "+@all", "~app:*"})));
    const User& u = *users.find("p");
    size_t pos = 0;
    CHECK(check(users, u, {"get", "app:1"}) == Denial::none);
    CHECK(check(users, u, {"get", "other"}) == Denial::key);
    CHECK(check(users, u, {"mset", "app:1", "a", "app:2", "b", "x", "c"}, &pos) == Denial::key);
    CHECK(pos == 5);
    CHECK(check(users, u, {"mset", "app:1", "a", "app:2", "b"}) == Denial::none);
    CHECK(check(users, u, {"del", "app:1", "app:2", "zz"}, &pos) == Denial::key);
    CHECK(pos == 3);
    CHECK(check(users, u, {"object", "encoding", "zz"}, &pos) == Denial::key);
    CHECK(pos == 2);
    CHECK(check(users, u, {"ping"}) == Denial::none);
    // Movable keys still go through the key specs.
    CHECK(check(users, u, {"eval", "return 1", "1", "zz"}, &pos) == Denial::key);
    CHECK(pos == 3);
    CHECK(check(users, u, {"eval", "return 1", "1", "app:9", "zz"}) == Denial::none);
  }

  TEST_CASE("channel patterns match channels and only equal PSUBSCRIBE patterns") {
    Table t;
    Users users(t.registry);
    REQUIRE_FALSE(users.set_user("u", words({"on", "+@all", "~*", "resetchannels", "&news.*"})));
    const User& u = *users.find("u");
    CHECK(check(users, u, {"publish", "news.1", "x"}) == Denial::none);
    CHECK(check(users, u, {"publish", "other", "x"}) == Denial::channel);
    CHECK(check(users, u, {"subscribe", "news.a", "news.b"}) == Denial::none);
    size_t pos = 0;
    CHECK(check(users, u, {"subscribe", "news.a", "other"}, &pos) == Denial::channel);
    CHECK(pos == 2);
    CHECK(check(users, u, {"psubscribe", "news.*"}) == Denial::none);
    CHECK(check(users, u, {"psubscribe", "news.1"}) == Denial::channel);
    CHECK(Users::describe_channels(u.selectors[0]) == "&news.*");
  }

  TEST_CASE("a selector grants what the root selector does not") {
    Table t;
    Users users(t.registry);
    auto err = users.set_user("u", words({"on", "+get", "~a*", "(+set", "~b*)"}));
    REQUIRE_FALSE(err);
    const User& u = *users.find("u");
    REQUIRE(u.selectors.size() == 2);
    CHECK(check(users, u, {"get", "a1"}) == Denial::none);
    CHECK(check(users, u, {"set", "b1", "v"}) == Denial::none);
    CHECK(check(users, u, {"set", "a1", "v"}) == Denial::key);
    CHECK(check(users, u, {"get", "b1"}) == Denial::key);
    CHECK(check(users, u, {"del", "a1"}) == Denial::command);
    CHECK(users.describe(u) ==
          "on sanitize-payload ~a* resetchannels -@all +get (~b* resetchannels -@all +set)");
    REQUIRE_FALSE(users.set_user("u", words({"clearselectors"})));
    CHECK(u.selectors.size() == 1);
    err = users.set_user("u", words({"(+get"}));
    REQUIRE(err);
    CHECK(*err == "Unmatched parenthesis in acl selector starting at '(+get'.");
  }

  TEST_CASE("a first argument can be allowed for a command without subcommands") {
    Table t;
    Users users(t.registry);
    REQUIRE_FALSE(users.set_user("u", words({"on", "-@all", "+select|0", "+config|get"})));
    const User& u = *users.find("u");
    CHECK(check(users, u, {"select", "0"}) == Denial::none);
    CHECK(check(users, u, {"select", "1"}) == Denial::command);
    CHECK(check(users, u, {"config", "get", "port"}) == Denial::none);
    CHECK(check(users, u, {"config", "set", "port", "1"}) == Denial::command);
    CHECK(users.describe_commands(u.selectors[0]) == "-@all +select|0 +config|get");
  }

  TEST_CASE("a first argument with spaces is taken and a later rule for its command drops it") {
    // Found by tests/fuzz/fuzz_acl_rules: two spaces in a row made an empty word in the rule
    // text, and the next rule for SELECT threw out of SETUSER (the server died). Valkey
    // 8.0.1 takes these rules too.
    Table t;
    Users users(t.registry);
    REQUIRE_FALSE(users.set_user("u", words({"-@all", "+select|a  b", "+select|c", "-select"})));
    CHECK(users.describe_commands(users.find("u")->selectors[0]) == "-@all b -select");
    REQUIRE_FALSE(users.set_user("v", words({"+select|x ", "+get", "-select"})));
    CHECK(users.describe_commands(users.find("v")->selectors[0]) == "-@all +get -select");
  }

  TEST_CASE("reset takes a user back to its state at creation") {
    Table t;
    Users users(t.registry);
    REQUIRE_FALSE(users.set_user("u", words({"on", ">x", "~*", "&*", "+@all", "(+get)"})));
    REQUIRE_FALSE(users.set_user("u", words({"reset"})));
    CHECK(users.describe(*users.find("u")) == "off sanitize-payload resetchannels -@all");
    users.set_pubsub_default_all(true);
    REQUIRE_FALSE(users.set_user("u", words({"reset"})));
    CHECK(users.describe(*users.find("u")) == "off sanitize-payload &* -@all");
  }

  TEST_CASE("an ACL file is read whole or not at all, naming file and line") {
    Table t;
    Users users(t.registry);
    std::string errors;
    auto loaded = keyshift::engine::acl::parse_acl_file(
        users, "user alice on >pw ~* +@all\n\nuser bob off\n", "users.acl", errors);
    REQUIRE(loaded);
    CHECK(loaded->size() == 2);
    loaded = keyshift::engine::acl::parse_acl_file(
        users, "user alice on\n# comment\nuser bob +nosuch\n", "users.acl", errors);
    CHECK_FALSE(loaded);
    CHECK(errors.find("users.acl:2 should start with user keyword") == 0);
    CHECK(errors.find("users.acl:3: Error in applying operation '+nosuch'") != std::string::npos);
    CHECK(errors.ends_with("no change to the previously active ACL rules was performed"));
  }

  TEST_CASE("the ACL log groups repeated denials and keeps at most acllog-max-len") {
    Table t;
    Users users(t.registry);
    users.log(Denial::command, keyshift::engine::acl::LogContext::toplevel, "get", "u", "c1", 1000);
    users.log(Denial::command, keyshift::engine::acl::LogContext::toplevel, "get", "u", "c2", 2000);
    REQUIRE(users.log_entries().size() == 1);
    CHECK(users.log_entries()[0].count == 2);
    CHECK(users.log_entries()[0].client_info == "c2");
    users.log(Denial::key, keyshift::engine::acl::LogContext::multi, "k", "u", "c3", 3000);
    CHECK(users.log_entries().size() == 2);
    CHECK(users.log_entries()[0].entry_id == 1);
    users.set_log_max_len(1);
    CHECK(users.log_entries().size() == 1);
    CHECK(users.denied_cmd == 2);
    CHECK(users.denied_key == 1);
  }
}

TEST_SUITE("engine::acl enforcement") {
  TEST_CASE("commands of a restricted user are refused with Valkey's NOPERM texts") {
    ManualClock clock(1700000000000);
    Engine engine(EngineConfig{}, clock);
    NoHost host;
    Session& admin = engine.open_session(&host);
    auto run = [&](Session& s, std::initializer_list<std::string_view> argv) {
      std::vector<std::string_view> v(argv);
      return engine.run(s, v);
    };
    CHECK(text(run(admin, {"acl", "setuser", "alice", "on", ">pw", "~app:*", "+@all",
                           "-flushall"})) == "OK");
    Session& s = engine.open_session(&host);
    CHECK(text(run(s, {"auth", "alice", "nope"})) ==
          "WRONGPASS invalid username-password pair or user is disabled.");
    CHECK(text(run(s, {"auth", "alice", "pw"})) == "OK");
    CHECK(text(run(s, {"acl", "whoami"})) == "alice");
    CHECK(text(run(s, {"set", "app:1", "v"})) == "OK");
    CHECK(text(run(s, {"get", "other"})) == "NOPERM No permissions to access a key");
    CHECK(text(run(s, {"flushall"})) ==
          "NOPERM User alice has no permissions to run the 'flushall' command");
    CHECK(text(run(s, {"publish", "c", "m"})) == "NOPERM No permissions to access a channel");
    RespValue log = run(admin, {"acl", "log"});
    REQUIRE(log.elements.size() == 4);  // the three refusals and the failed AUTH
    CHECK(text(run(admin, {"acl", "dryrun", "alice", "get", "x"})) ==
          "User alice has no permissions to access the 'x' key");
    CHECK(run(admin, {"acl", "deluser", "alice"}).integer == 1);
    CHECK(s.has(keyshift::engine::k_session_close_asap));
  }

  TEST_CASE("requirepass is the default user's password and AUTH is required for it") {
    ManualClock clock(1700000000000);
    EngineConfig config;
    config.requirepass = "s3cret";
    Engine engine(config, clock);
    NoHost host;
    Session& s = engine.open_session(&host);
    CHECK(engine.auth_required(s));
    CHECK_FALSE(engine.auth_required(engine.open_session(nullptr)));
    std::vector<std::string_view> ping{"ping"};
    CHECK(engine.run(s, ping).str == "NOAUTH Authentication required.");
    std::vector<std::string_view> auth{"auth", "s3cret"};
    CHECK(engine.run(s, auth).str == "OK");
    CHECK_FALSE(engine.auth_required(s));
  }

  TEST_CASE("user lines load after requirepass and an unknown command stops the start") {
    ManualClock clock(1700000000000);
    EngineConfig config;
    config.requirepass = "s3cret";
    config.acl_users.push_back({{"default", "on", "nopass", "~*", "+@all"}, "valkey.conf", 3});
    Engine engine(config, clock);
    CHECK(engine.acl_startup_error().empty());
    CHECK(engine.users().default_user().nopass);
    EngineConfig bad;
    bad.acl_users.push_back({{"alice", "on", "+nosuch"}, "valkey.conf", 7});
    Engine refused(bad, clock);
    CHECK(refused.acl_startup_error() ==
          "valkey.conf:7: Error loading ACL rule '+nosuch' for the user named 'alice': Unknown "
          "command or category name in ACL");
  }
}
