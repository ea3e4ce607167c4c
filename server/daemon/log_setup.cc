#include "server/daemon/log_setup.h"

#include <chrono>
#include <ctime>
#include <memory>

#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>

#include "absl/strings/str_format.h"
#include "server/logging/request_log.h"

namespace distarray::daemon {
namespace {

// The length of the UTF-8 sequence starting at text[i], or 0 when it is not valid UTF-8.
size_t Utf8Length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  size_t n = 0;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
  }
  // Overlong three- and four-byte forms, surrogates, and code points past U+10FFFF.
  if (c == 0xe0 && byte(i + 1) < 0xa0) return 0;
  if (c == 0xed && byte(i + 1) > 0x9f) return 0;
  if (c == 0xf0 && byte(i + 1) < 0x90) return 0;
  if (c == 0xf4 && byte(i + 1) > 0x8f) return 0;
  return n;
}

void AppendJsonField(std::string& out, std::string_view key, std::string_view value) {
  out += ',';
  out += JsonQuote(key);
  out += ':';
  out += JsonQuote(value);
}

// One JSON object per line.
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const auto since_epoch = msg.time.time_since_epoch();
    const std::time_t seconds = std::chrono::system_clock::to_time_t(msg.time);
    const auto millis =
        std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch).count() % 1000;
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    std::string line = absl::StrFormat("{\"time\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\"",
                                       utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour,
                                       utc.tm_min, utc.tm_sec, static_cast<int>(millis));
    const auto level = spdlog::level::to_string_view(msg.level);
    AppendJsonField(line, "level", std::string_view(level.data(), level.size()));
    AppendJsonField(line, "message", std::string_view(msg.payload.data(), msg.payload.size()));
    if (const RequestLogContext* request = CurrentRequestLog(); request != nullptr) {
      AppendJsonField(line, "request_id", request->request_id);
      AppendJsonField(line, "method", request->method);
      AppendJsonField(line, "peer", request->peer);
      if (!request->tenant.empty()) AppendJsonField(line, "tenant", request->tenant);
    }
    line += "}\n";
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

// %Q in the text pattern: "[request-id] " while a call is served, nothing otherwise.
class RequestIdFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg&, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const RequestLogContext* request = CurrentRequestLog();
    if (request == nullptr) return;
    dest.push_back('[');
    dest.append(request->request_id.data(),
                request->request_id.data() + request->request_id.size());
    dest.append(std::string_view("] "));
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<RequestIdFlag>();
  }
};

}  // namespace

std::string JsonQuote(std::string_view text) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += absl::StrFormat("\\u%04x", c);
    } else if (c >= 0x80) {
      if (const size_t n = Utf8Length(text, i); n > 0) {
        out.append(text.substr(i, n));
        i += n;
        continue;
      }
      out += "\\ufffd";
    } else {
      out += static_cast<char>(c);
    }
    ++i;
  }
  out += '"';
  return out;
}

void ConfigureLogging(spdlog::level::level_enum level, bool json) {
  spdlog::set_level(level);
  if (json) {
    spdlog::set_formatter(std::make_unique<JsonFormatter>());
    return;
  }
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<RequestIdFlag>('Q').set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] %Q%v");
  spdlog::set_formatter(std::move(formatter));
}

}  // namespace distarray::daemon
