#include "engine/resp/request_writer.hpp"

#include <charconv>
#include <cstring>

namespace keyshift::engine {

char* write_decimal(char* dst, uint64_t value) {
  return std::to_chars(dst, dst + 20, value).ptr;
}

char* write_bulk_header(char* dst, size_t length) {
  *dst++ = '$';
  dst = write_decimal(dst, length);
  *dst++ = '\r';
  *dst++ = '\n';
  return dst;
}

namespace {

template <typename Arg>
size_t multibulk_size(std::span<const Arg> args) {
  char digits[24];
  size_t n = 1 + static_cast<size_t>(write_decimal(digits, args.size()) - digits) + 2;
  for (const Arg& a : args) {
    n += 1 + static_cast<size_t>(write_decimal(digits, a.size()) - digits) + 2 + a.size() + 2;
  }
  return n;
}

template <typename Arg>
char* write_multibulk(char* dst, std::span<const Arg> args) {
  *dst++ = '*';
  dst = write_decimal(dst, args.size());
  *dst++ = '\r';
  *dst++ = '\n';
  for (const Arg& a : args) {
    dst = write_bulk_header(dst, a.size());
    std::memcpy(dst, a.data(), a.size());
    dst += a.size();
    *dst++ = '\r';
    *dst++ = '\n';
  }
  return dst;
}

template <typename Arg>
void append_multibulk(std::string& out, std::span<const Arg> args) {
  size_t at = out.size();
  out.resize(at + multibulk_size(args));
  write_multibulk(out.data() + at, args);
}

}  // namespace

size_t request_size(std::span<const std::string_view> args) {
  return multibulk_size(args);
}

size_t request_size(std::span<const std::string> args) {
  return multibulk_size(args);
}

char* write_request(char* dst, std::span<const std::string_view> args) {
  return write_multibulk(dst, args);
}

char* write_request(char* dst, std::span<const std::string> args) {
  return write_multibulk(dst, args);
}

void append_request(std::string& out, std::span<const std::string_view> args) {
  append_multibulk(out, args);
}

void append_request(std::string& out, std::span<const std::string> args) {
  append_multibulk(out, args);
}

void append_request(std::string& out, std::initializer_list<std::string_view> args) {
  append_multibulk(out, std::span<const std::string_view>(args.begin(), args.size()));
}

RequestTemplate RequestTemplate::multibulk(std::span<const std::string_view> args) {
  RequestTemplate t;
  t.m_bytes.reserve(request_size(args));
  append_multibulk(t.m_bytes, args);
  // A placeholder has no CR or LF, so every match lies inside one argument's bytes.
  std::string_view bytes = t.m_bytes;
  for (size_t at = bytes.find(k_placeholder); at != std::string_view::npos;
       at = bytes.find(k_placeholder, at + k_placeholder.size())) {
    t.m_slots.push_back(static_cast<uint32_t>(at));
  }
  return t;
}

RequestTemplate RequestTemplate::raw(std::string bytes) {
  RequestTemplate t;
  t.m_bytes = std::move(bytes);
  return t;
}

}  // namespace keyshift::engine
