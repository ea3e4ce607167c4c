// Helpers the RPC benchmarks share: reading a peer script's `key value` lines, and stopping on a
// failed call with the benchmark's name and what failed.
#ifndef DISTARRAY_BENCH_FIGURES_H_
#define DISTARRAY_BENCH_FIGURES_H_

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>

#include "absl/status/statusor.h"

namespace distarray::bench {

// The `key value` lines of `path` (a peer script's output; other lines are skipped); empty when
// `path` is.
inline std::map<std::string, double> ReadFigures(const std::string& path) {
  std::map<std::string, double> figures;
  if (path.empty()) return figures;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    double value;
    if (fields >> key >> value) figures[key] = value;
  }
  return figures;
}

// The value, or exit status 2 with "<bench>: <what>: <status>".
template <typename T>
T Must(const char* bench, absl::StatusOr<T> v, const char* what) {
  if (!v.ok()) {
    std::fprintf(stderr, "%s: %s: %s\n", bench, what, v.status().ToString().c_str());
    std::exit(2);
  }
  return *std::move(v);
}

inline void Must(const char* bench, const absl::Status& status, const char* what) {
  if (!status.ok()) {
    std::fprintf(stderr, "%s: %s: %s\n", bench, what, status.ToString().c_str());
    std::exit(2);
  }
}

}  // namespace distarray::bench

#endif  // DISTARRAY_BENCH_FIGURES_H_
