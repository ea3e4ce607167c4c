// Eight clients at once, each uploading, resharding, computing, downloading and deleting its own
// arrays while the others do the same; every result must be exact and nothing may leak.
#include <random>
#include <thread>

#include "tests/support/backend_fixture.h"
#include "tests/support/reference.h"

namespace distarray::testing {
namespace {

class ConcurrencyTest : public BackendTest {};

TEST_P(ConcurrencyTest, EightClients) {
  constexpr int kClients = 8;
  std::vector<std::string> failures(kClients);
  std::vector<std::thread> threads;
  for (int t = 0; t < kClients; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(1000 + t);
      auto own = Client::Connect(address());
      if (!own.ok()) {
        failures[t] = own.status().ToString();
        return;
      }
      for (int round = 0; round < 4; ++round) {
        const Shape shape = {64, 33};
        const TestMap from = RandomMap(shape, devices(), rng, /*allow_gaps=*/false);
        const TestMap to = RandomMap(shape, devices(), rng, /*allow_gaps=*/false);
        const std::vector<float> values = RandomValues<float>(NumElements(shape), rng);
        auto a = own->Upload<float>(values, shape, {ToProto(from, shape)});
        if (!a.ok()) {
          failures[t] = a.status().ToString();
          return;
        }
        auto b = a->Reshard(ToProto(to, shape));
        if (!b.ok()) {
          failures[t] = b.status().ToString();
          return;
        }
        auto c = *a + *b;
        if (!c.ok()) {
          failures[t] = c.status().ToString();
          return;
        }
        auto got = c->Download<float>();
        if (!got.ok()) {
          failures[t] = got.status().ToString();
          return;
        }
        for (size_t i = 0; i < values.size(); ++i) {
          if ((*got)[i] != values[i] + values[i]) {
            failures[t] = "wrong value at " + std::to_string(i);
            return;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kClients; ++t) EXPECT_EQ(failures[t], "") << "client " << t;
}

DISTARRAY_INSTANTIATE_BACKENDS(ConcurrencyTest);

}  // namespace
}  // namespace distarray::testing
