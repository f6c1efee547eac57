#include "compat/capture/capture_session.hpp"

#include "engine/util/strconv.hpp"
#include "engine/util/strings.hpp"

namespace keyshift::compat::capture {
namespace {

using engine::iequals;

std::vector<std::string> copy_args(const std::vector<std::string_view>& args) {
  return std::vector<std::string>(args.begin(), args.end());
}

// HELLO [protover [AUTH username password] [SETNAME clientname]]: the password's index.
std::optional<size_t> hello_password(const std::vector<std::string_view>& args) {
  for (size_t i = 2; i + 2 < args.size(); ++i) {
    if (iequals(args[i], "AUTH")) {
      return i + 2;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::vector<std::string>> redact_request(const std::vector<std::string_view>& args) {
  if (args.empty()) {
    return std::nullopt;
  }
  std::string_view name = args[0];
  std::vector<size_t> secret;
  if (iequals(name, "AUTH")) {
    // AUTH password | AUTH username password: the last argument is the password.
    if (args.size() >= 2) {
      secret.push_back(args.size() - 1);
    }
  } else if (iequals(name, "HELLO")) {
    if (auto at = hello_password(args)) {
      secret.push_back(*at);
    }
  } else if (iequals(name, "MIGRATE")) {
    // MIGRATE host port key db timeout [COPY] [REPLACE] [AUTH pw | AUTH2 user pw] [KEYS ...]
    for (size_t i = 6; i < args.size(); ++i) {
      if (iequals(args[i], "KEYS")) {
        break;
      }
      if (iequals(args[i], "AUTH") && i + 1 < args.size()) {
        secret.push_back(i + 1);
        ++i;
      } else if (iequals(args[i], "AUTH2") && i + 2 < args.size()) {
        secret.push_back(i + 2);
        i += 2;
      }
    }
  } else if (iequals(name, "CONFIG") && args.size() >= 4 && iequals(args[1], "SET")) {
    for (size_t i = 2; i + 1 < args.size(); i += 2) {
      if (iequals(args[i], "requirepass") || iequals(args[i], "masterauth")) {
        secret.push_back(i + 1);
      }
    }
  } else if (iequals(name, "ACL") && args.size() >= 3 && iequals(args[1], "SETUSER")) {
    // ">pw" / "<pw" add or remove a password, "#hash" / "!hash" its SHA-256: all name it.
    for (size_t i = 3; i < args.size(); ++i) {
      char rule = args[i].empty() ? '\0' : args[i][0];
      if (rule == '>' || rule == '<' || rule == '#' || rule == '!') {
        secret.push_back(i);
      }
    }
  }
  if (secret.empty()) {
    return std::nullopt;
  }
  auto out = copy_args(args);
  for (size_t i : secret) {
    out[i] = std::string(k_redacted_value);
  }
  return out;
}

bool SessionState::apply(const std::vector<std::string_view>& args) {
  bool no_reply = m_reply == ReplyMode::off;
  if (m_reply == ReplyMode::skip_next) {
    no_reply = true;
    m_reply = ReplyMode::on;
  }
  if (args.empty()) {
    return no_reply;
  }
  std::string_view name = args[0];
  if (iequals(name, "SELECT") && args.size() == 2) {
    uint64_t db = 0;
    if (engine::parse_u64(args[1], db) && db <= UINT32_MAX) {
      m_db = static_cast<uint32_t>(db);
    }
  } else if (iequals(name, "HELLO") && args.size() >= 2) {
    uint64_t version = 0;
    if (engine::parse_u64(args[1], version) && (version == 2 || version == 3)) {
      m_resp = static_cast<uint8_t>(version);
    }
    for (size_t i = 2; i + 1 < args.size(); ++i) {
      if (iequals(args[i], "SETNAME")) {
        m_name = std::string(args[i + 1]);
        ++i;
      } else if (iequals(args[i], "AUTH")) {
        i += 2;
      }
    }
  } else if (iequals(name, "RESET")) {
    m_db = 0;
    m_resp = 2;
    m_name.clear();
    m_reply = ReplyMode::on;
  } else if (iequals(name, "CLIENT") && args.size() >= 3) {
    std::string_view sub = args[1];
    if (iequals(sub, "SETNAME") && args.size() == 3) {
      m_name = std::string(args[2]);
    } else if (iequals(sub, "SETINFO") && args.size() == 4) {
      if (iequals(args[2], "LIB-NAME")) {
        m_lib_name = std::string(args[3]);
      } else if (iequals(args[2], "LIB-VER")) {
        m_lib_ver = std::string(args[3]);
      }
    } else if (iequals(sub, "REPLY") && args.size() == 3) {
      if (iequals(args[2], "OFF")) {
        m_reply = ReplyMode::off;
        no_reply = true;
      } else if (iequals(args[2], "SKIP")) {
        // SKIP while replies are off changes nothing; otherwise it and the next go unanswered.
        if (m_reply != ReplyMode::off) {
          m_reply = ReplyMode::skip_next;
        }
        no_reply = true;
      } else if (iequals(args[2], "ON")) {
        m_reply = ReplyMode::on;
        no_reply = false;
      }
    }
  }
  return no_reply;
}

std::string SessionState::client_lib() const {
  if (m_lib_ver.empty()) {
    return m_lib_name;
  }
  return m_lib_name.empty() ? m_lib_ver : m_lib_name + " " + m_lib_ver;
}

}  // namespace keyshift::compat::capture
