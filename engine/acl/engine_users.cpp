// The Engine's side of ACL users: authentication, the permission check dispatch and scripts
// ask, and the users' life cycle (start, DELUSER, LOAD, SAVE) as it touches sessions.
#include "engine/acl/acl.hpp"
#include "engine/commands/context.hpp"
#include "engine/engine.hpp"
#include "engine/util/atomic_file.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace keyshift::engine {

bool Engine::auth_required(const Session& session) const {
  const acl::User& def = m_users->default_user();
  return (!def.nopass || !def.enabled) && !session.authenticated;
}

void Engine::set_default_auth(Session& session) {
  acl::User& def = m_users->default_user();
  session.user = &def;
  session.authenticated = def.nopass && def.enabled;
}

bool Engine::authenticate(Session& session, std::string_view user, std::string_view password,
                          std::string_view command) {
  if (m_users->check_credentials(user, password)) {
    session.authenticated = true;
    session.user = m_users->find(user);
    return true;
  }
  std::vector<std::string_view> argv{command};
  const Command* cmd = m_registry.find_original(command);
  if (cmd == nullptr) {
    cmd = m_registry.find_original("auth");
  }
  m_users->log(acl::Denial::auth,
               session.has(k_session_multi) ? acl::LogContext::multi : acl::LogContext::toplevel,
               std::string(command), std::string(user), client_info(session, *cmd, argv),
               m_clock.now_ms());
  return false;
}

std::string Engine::client_info(Session& session, const Command& cmd,
                                std::span<const std::string_view> argv) {
  // client_info_line reads the command and its arguments from a context; nothing is replied.
  CmdContext ctx(*this, session, const_cast<Command&>(cmd), argv);
  return client_info_line(ctx, session);
}

std::optional<std::string> Engine::acl_check(Session& session, const Command& cmd,
                                             std::span<const std::string_view> argv,
                                             acl::LogContext context) {
  if (session.user == nullptr) {
    return std::nullopt;
  }
  size_t pos = 0;
  acl::Denial d = m_users->check_command(*session.user, cmd, argv, pos);
  if (d == acl::Denial::none) {
    return std::nullopt;
  }
  std::string object = d == acl::Denial::command ? cmd.full_name : std::string(argv[pos]);
  m_users->log(d, context, std::move(object), session.user->name, client_info(session, cmd, argv),
               m_clock.now_ms());
  return acl::Users::denial_message(d, *session.user, cmd, argv[pos], false);
}

bool Engine::subscriptions_allowed(const Session& session) const {
  if (session.user == nullptr) {
    return true;
  }
  for (const std::string& p : session.patterns) {
    if (!acl::Users::channel_allowed(*session.user, p, true)) {
      return false;
    }
  }
  for (const auto* set : {&session.channels, &session.shard_channels}) {
    for (const std::string& c : *set) {
      if (!acl::Users::channel_allowed(*session.user, c, false)) {
        return false;
      }
    }
  }
  return true;
}

void Engine::drop_user_sessions(const acl::User* user, Session* current) {
  for (auto& [id, s] : m_sessions) {
    if (s->user != user) {
      continue;
    }
    set_default_auth(*s);
    s->authenticated = false;
    if (s.get() == current) {
      s->set(k_session_close_after_reply);
    } else {
      s->set(k_session_close_asap);
      if (s->host() != nullptr) {
        s->host()->wake(*s);
      }
    }
  }
}

void Engine::load_users_at_startup() {
  if (!m_config.aclfile.empty() && !m_config.acl_users.empty()) {
    m_acl_startup_error =
        "Configuring Valkey with users defined in valkey.conf and at the same setting an ACL "
        "file path is invalid. This setup is very likely to lead to configuration errors and "
        "security holes, please define either an ACL file or declare users directly in your "
        "valkey.conf, but not both.";
    return;
  }
  for (const AclUserLine& line : m_config.acl_users) {
    if (line.args.empty()) {
      continue;
    }
    const std::string& name = line.args[0];
    if (name.find_first_of(std::string_view(" \t\n\r\v\f\0", 7)) != std::string::npos) {
      m_acl_startup_error = "Spaces not allowed in ACL usernames";
      return;
    }
    auto rules = acl::merge_selector_arguments(std::span<const std::string>(line.args).subspan(1));
    if (!rules) {
      continue;  // refused when the file was read
    }
    // Only `default` may be named twice: it is reset before its line applies.
    m_users->set_user(name, {});
    acl::User* user = m_users->find(name);
    if (user == &m_users->default_user()) {
      m_users->apply_rule(*user, "reset");
    }
    for (const std::string& rule : *rules) {
      acl::RuleError e = m_users->apply_rule(*user, rule);
      if (e != acl::RuleError::none) {
        m_acl_startup_error =
            fmt::format("{}:{}: Error loading ACL rule '{}' for the user named '{}': {}", line.file,
                        line.line, rule, name, acl::rule_error_text(e));
        return;
      }
    }
  }
  if (!m_config.aclfile.empty()) {
    if (auto err = acl_load(nullptr)) {
      m_acl_startup_error = "Aborting Valkey startup because of ACL errors: " + *err;
    }
  }
  for (auto& [id, s] : m_sessions) {
    if (s->host() != nullptr) {
      set_default_auth(*s);
    }
  }
}

std::optional<std::string> Engine::acl_load(Session* current) {
  const std::string& path = m_config.aclfile;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return fmt::format("Error loading ACLs, opening file '{}': {}", path, std::strerror(errno));
  }
  std::stringstream buf;
  buf << in.rdbuf();
  std::string errors;
  auto users = acl::parse_acl_file(*m_users, buf.str(), path, errors);
  if (!users) {
    return errors;
  }
  // Sessions follow their user by name; those whose user is gone are closed.
  std::vector<std::pair<Session*, std::string>> names;
  for (auto& [id, s] : m_sessions) {
    if (s->user != nullptr) {
      names.emplace_back(s.get(), s->user->name);
    }
  }
  m_users->replace_all(std::move(*users));
  for (auto& [session, name] : names) {
    acl::User* user = m_users->find(name);
    session->user = user != nullptr ? user : &m_users->default_user();
    if (user == nullptr || !subscriptions_allowed(*session)) {
      session->authenticated = false;
      if (session == current) {
        session->set(k_session_close_after_reply);
      } else {
        session->set(k_session_close_asap);
        if (session->host() != nullptr) {
          session->host()->wake(*session);
        }
      }
    }
  }
  return std::nullopt;
}

bool Engine::acl_save(std::string& error) {
  std::string text;
  for (const auto& [name, user] : m_users->all()) {
    text += "user " + name + " " + m_users->describe(*user) + "\n";
  }
  if (auto err = write_file_atomically(m_config.aclfile, text, 0600)) {
    error = err->message();
    return false;
  }
  return true;
}

}  // namespace keyshift::engine
