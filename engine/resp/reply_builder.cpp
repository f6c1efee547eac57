#include "engine/resp/reply_builder.hpp"

#include "engine/util/strconv.hpp"

#include <cmath>
#include <cstring>

namespace keyshift::engine {

void ReplyBuilder::header(char type, size_t n) {
  char buf[32];
  buf[0] = type;
  size_t len = 1 + format_i64(static_cast<int64_t>(n), buf + 1);
  buf[len++] = '\r';
  buf[len++] = '\n';
  m_out->append(buf, len);
}

void ReplyBuilder::insert_header(size_t mark, char type, size_t n) {
  char buf[32];
  buf[0] = type;
  size_t len = 1 + format_i64(static_cast<int64_t>(n), buf + 1);
  buf[len++] = '\r';
  buf[len++] = '\n';
  m_out->insert(mark, buf, len);
}

void ReplyBuilder::simple(std::string_view text) {
  m_out->push_back('+');
  m_out->append(text);
  m_out->append("\r\n", 2);
}

void ReplyBuilder::error(std::string_view text) {
  ++m_errors;
  size_t sp = text.find(' ');
  m_last_error_code.assign(text.substr(0, sp == std::string_view::npos ? text.size() : sp));
  m_out->push_back('-');
  size_t start = m_out->size();
  m_out->append(text);
  for (size_t i = start; i < m_out->size(); ++i) {
    if ((*m_out)[i] == '\r' || (*m_out)[i] == '\n') {
      (*m_out)[i] = ' ';
    }
  }
  m_out->append("\r\n", 2);
}

void ReplyBuilder::integer(int64_t n) {
  char buf[32];
  buf[0] = ':';
  size_t len = 1 + format_i64(n, buf + 1);
  buf[len++] = '\r';
  buf[len++] = '\n';
  m_out->append(buf, len);
}

void ReplyBuilder::bulk(std::string_view data) {
  char buf[32];
  buf[0] = '$';
  size_t len = 1 + format_i64(static_cast<int64_t>(data.size()), buf + 1);
  buf[len++] = '\r';
  buf[len++] = '\n';
  size_t old = m_out->size();
  m_out->resize(old + len + data.size() + 2);
  char* p = m_out->data() + old;
  std::memcpy(p, buf, len);
  if (!data.empty()) {
    std::memcpy(p + len, data.data(), data.size());
  }
  p[len + data.size()] = '\r';
  p[len + data.size() + 1] = '\n';
}

void ReplyBuilder::null() {
  if (m_resp >= 3) {
    m_out->append("_\r\n", 3);
  } else {
    m_out->append("$-1\r\n", 5);
  }
}

void ReplyBuilder::null_array() {
  if (m_resp >= 3) {
    m_out->append("_\r\n", 3);
  } else {
    m_out->append("*-1\r\n", 5);
  }
}

void ReplyBuilder::map(size_t n) {
  if (m_resp >= 3) {
    header('%', n);
  } else {
    header('*', n * 2);
  }
}

void ReplyBuilder::end_map(size_t mark, size_t n) {
  if (m_resp >= 3) {
    insert_header(mark, '%', n);
  } else {
    insert_header(mark, '*', n * 2);
  }
}

void ReplyBuilder::set(size_t n) {
  header(m_resp >= 3 ? '~' : '*', n);
}

void ReplyBuilder::push(size_t n) {
  header(m_resp >= 3 ? '>' : '*', n);
}

void ReplyBuilder::double_value(double d) {
  if (m_resp >= 3) {
    m_out->push_back(',');
    if (std::isnan(d)) {
      m_out->append("nan");
    } else {
      m_out->append(format_double(d));
    }
    m_out->append("\r\n", 2);
  } else {
    bulk(format_double(d));
  }
}

void ReplyBuilder::boolean(bool b) {
  if (m_resp >= 3) {
    m_out->append(b ? "#t\r\n" : "#f\r\n", 4);
  } else {
    m_out->append(b ? ":1\r\n" : ":0\r\n", 4);
  }
}

void ReplyBuilder::verbatim(std::string_view data, std::string_view format) {
  if (m_resp < 3) {
    bulk(data);
    return;
  }
  char buf[32];
  buf[0] = '=';
  size_t len = 1 + format_i64(static_cast<int64_t>(data.size() + 4), buf + 1);
  buf[len++] = '\r';
  buf[len++] = '\n';
  m_out->append(buf, len);
  m_out->append(format);
  m_out->push_back(':');
  m_out->append(data);
  m_out->append("\r\n", 2);
}

}  // namespace keyshift::engine
