#include "engine/resp/resp_value.hpp"

#include "engine/util/strconv.hpp"

#include <cstring>

namespace keyshift::engine {
namespace {

constexpr int k_max_depth = 64;

class Decoder {
 public:
  explicit Decoder(std::string_view data) : m_data(data) {}

  RespParse value(RespValue& out, int depth) {
    if (depth > k_max_depth) {
      return RespParse::error;
    }
    std::string_view line;
    if (!read_line(line)) {
      return RespParse::need_more;
    }
    if (line.empty()) {
      return RespParse::error;
    }
    char type = line[0];
    std::string_view body = line.substr(1);
    switch (type) {
      case '+':
        out.type = RespValue::Type::simple;
        out.str.assign(body);
        return RespParse::ok;
      case '-':
        out.type = RespValue::Type::error;
        out.str.assign(body);
        return RespParse::ok;
      case ':':
        out.type = RespValue::Type::integer;
        return parse_i64(body, out.integer) ? RespParse::ok : RespParse::error;
      case '_':
        out.type = RespValue::Type::null;
        return RespParse::ok;
      case ',':
        out.type = RespValue::Type::double_;
        out.str.assign(body);
        return RespParse::ok;
      case '(':
        out.type = RespValue::Type::big_number;
        out.str.assign(body);
        return RespParse::ok;
      case '#':
        out.type = RespValue::Type::boolean;
        out.integer = body == "t" ? 1 : 0;
        return (body == "t" || body == "f") ? RespParse::ok : RespParse::error;
      case '$':
      case '=':
      case '!': {
        int64_t len = 0;
        if (!parse_i64(body, len) || len < -1) {
          return RespParse::error;
        }
        if (len == -1) {
          out.type = RespValue::Type::null;
          return RespParse::ok;
        }
        if (m_data.size() - m_pos < static_cast<size_t>(len) + 2) {
          return RespParse::need_more;
        }
        out.type = type == '!'   ? RespValue::Type::error
                   : type == '=' ? RespValue::Type::verbatim
                                 : RespValue::Type::bulk;
        out.str.assign(m_data.substr(m_pos, static_cast<size_t>(len)));
        m_pos += static_cast<size_t>(len) + 2;
        return RespParse::ok;
      }
      case '*':
      case '%':
      case '~':
      case '>':
      case '|': {
        int64_t n = 0;
        if (!parse_i64(body, n) || n < -1) {
          return RespParse::error;
        }
        if (n == -1) {
          out.type = RespValue::Type::null;
          return RespParse::ok;
        }
        out.type = type == '*'   ? RespValue::Type::array
                   : type == '%' ? RespValue::Type::map
                   : type == '~' ? RespValue::Type::set
                   : type == '>' ? RespValue::Type::push
                                 : RespValue::Type::attribute;
        size_t count = static_cast<size_t>(n) * ((type == '%' || type == '|') ? 2 : 1);
        out.elements.clear();
        out.elements.reserve(count < 4096 ? count : 4096);
        for (size_t i = 0; i < count; ++i) {
          out.elements.emplace_back();
          RespParse r = value(out.elements.back(), depth + 1);
          if (r != RespParse::ok) {
            return r;
          }
        }
        if (type == '|') {
          // An attribute precedes the real reply; keep the reply, drop the attribute.
          RespValue real;
          RespParse r = value(real, depth + 1);
          if (r != RespParse::ok) {
            return r;
          }
          out = std::move(real);
        }
        return RespParse::ok;
      }
      default:
        return RespParse::error;
    }
  }

  size_t pos() const { return m_pos; }

 private:
  bool read_line(std::string_view& line) {
    size_t cr = m_data.find("\r\n", m_pos);
    if (cr == std::string_view::npos) {
      return false;
    }
    line = m_data.substr(m_pos, cr - m_pos);
    m_pos = cr + 2;
    return true;
  }

  std::string_view m_data;
  size_t m_pos = 0;
};

void display(const RespValue& v, std::string& out, int indent) {
  switch (v.type) {
    case RespValue::Type::simple:
    case RespValue::Type::big_number:
    case RespValue::Type::double_:
      out += v.str;
      break;
    case RespValue::Type::error:
      out += "(error) " + v.str;
      break;
    case RespValue::Type::integer:
      out += "(integer) " + i64_to_string(v.integer);
      break;
    case RespValue::Type::boolean:
      out += v.integer ? "(true)" : "(false)";
      break;
    case RespValue::Type::bulk:
    case RespValue::Type::verbatim:
      out += '"' + v.str + '"';
      break;
    case RespValue::Type::null:
      out += "(nil)";
      break;
    default: {
      if (v.elements.empty()) {
        out += "(empty array)";
        break;
      }
      for (size_t i = 0; i < v.elements.size(); ++i) {
        if (i > 0) {
          out += '\n' + std::string(static_cast<size_t>(indent), ' ');
        }
        std::string num = std::to_string(i + 1) + ") ";
        out += num;
        display(v.elements[i], out, indent + static_cast<int>(num.size()));
      }
      break;
    }
  }
}

}  // namespace

RespParse parse_resp(std::string_view data, RespValue& out, size_t& consumed) {
  Decoder d(data);
  RespParse r = d.value(out, 0);
  if (r == RespParse::ok) {
    consumed = d.pos();
  }
  return r;
}

std::string RespValue::to_display() const {
  std::string out;
  display(*this, out, 0);
  return out;
}

}  // namespace keyshift::engine
