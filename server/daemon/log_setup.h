// The daemon's log output: --log_level and --log_format. Text lines carry the request id of the
// call being served; JSON lines (one object per line) carry time, level, message, and
// request_id, method, peer and tenant while a call is served (server/logging/request_log.h).
#ifndef DISTARRAY_SERVER_DAEMON_LOG_SETUP_H_
#define DISTARRAY_SERVER_DAEMON_LOG_SETUP_H_

#include <string>

#include <spdlog/common.h>

namespace distarray::daemon {

void ConfigureLogging(spdlog::level::level_enum level, bool json);

// `text` as a JSON string literal (quotes included); bytes that are not valid UTF-8 become
// U+FFFD, so every line parses whatever a client put in a name.
std::string JsonQuote(std::string_view text);

}  // namespace distarray::daemon

#endif  // DISTARRAY_SERVER_DAEMON_LOG_SETUP_H_
