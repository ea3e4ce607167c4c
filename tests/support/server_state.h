// What integration tests read back from the daemon to prove nothing leaked or was corrupted: the
// device memory in use, and a bystander array whose values every bad request must leave intact.
#ifndef DISTARRAY_TESTS_SUPPORT_SERVER_STATE_H_
#define DISTARRAY_TESTS_SUPPORT_SERVER_STATE_H_

#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <vector>

#include "distarray/client.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/reference.h"

namespace distarray::testing {

// Bytes in use on every device together, as GetServerInfo reports them.
inline int64_t UsedBytes(const Client& client) {
  auto info = client.ServerInfo();
  EXPECT_TRUE(info.ok()) << info.status();
  int64_t used = 0;
  for (const auto& d : info->devices()) used += d.memory_used_bytes();
  return used;
}

// A backend test with a bystander array spread over four devices, re-checked after each case.
class BystanderTest : public BackendTest {
 protected:
  void SetUp() override {
    BackendTest::SetUp();
    if (IsSkipped()) return;
    std::mt19937_64 rng(4);
    bystander_values_ = RandomValues<float>(100, rng);
    auto a = client().Upload<float>(bystander_values_, {10, 10},
                                    {BlockGrid2D(10, 10, 2, 2, {dev(0), dev(1), dev(2), dev(3)})});
    ASSERT_TRUE(a.ok()) << a.status();
    bystander_.emplace(*std::move(a));
  }
  void ExpectBystanderIntact() {
    auto values = bystander_->Download<float>();
    ASSERT_TRUE(values.ok()) << values.status();
    EXPECT_EQ(*values, bystander_values_);
  }
  const Array& bystander() const { return *bystander_; }

 private:
  std::vector<float> bystander_values_;
  std::optional<Array> bystander_;
};

}  // namespace distarray::testing

#endif  // DISTARRAY_TESTS_SUPPORT_SERVER_STATE_H_
