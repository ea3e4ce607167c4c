// RunGraph: programs with while/if against host references on fresh random inputs: loops that
// run 0, 1 and many times, nested loops, if inside while, loop-carried values whose op yields a
// new buffer, programs on one device (a CUDA graph on the CUDA backend) and split across devices,
// registered programs re-run with new arguments and cache hits, value outputs, the iteration cap,
// deadlines with a loop running, and the errors with their exact codes.
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "distarray/graph.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/compute_reference.h"

namespace distarray::testing {
namespace {

namespace g = graph;

// The seed's loop: while all(a < limit): a += 1.
v1::Program SeedLoop(float limit, int64_t max_iterations) {
  g::ProgramBuilder p;
  g::Var a = p.Input("a");
  g::Vars out = p.WhileLoop([limit](auto v) { return g::All(v[0] < limit); },
                            [](auto v) { return g::Vars{v[0] + 1.0f}; }, {a}, max_iterations);
  p.Output("a", out[0]);
  return p.program();
}

// Host model of the seed loop; returns the iteration count.
int64_t SeedLoopOnHost(std::vector<float>& a, float limit, int64_t max_iterations) {
  int64_t iterations = 0;
  auto all_below = [&] {
    for (float x : a) {
      if (!(x < limit)) return false;
    }
    return true;
  };
  while (all_below() && iterations < max_iterations) {
    for (float& x : a) x += 1.0f;
    ++iterations;
  }
  return iterations;
}

std::vector<float> RandomSmallIntegers(int64_t n, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> digit(0, 6);
  std::vector<float> a(n);
  for (float& x : a) x = static_cast<float>(digit(rng));
  return a;
}

class GraphTest : public BackendTest {
 protected:
  // The layouts every program runs on: one device; one chunk on each of two devices; and three
  // chunks over three devices (on two GPUs, two chunks on device 0; on one GPU every layout lands
  // on device 0).
  std::vector<std::pair<std::string, v1::IndexMap>> Layouts(int64_t n) const {
    return {{"one device", Split(1, 0, n, {dev(0)})},
            {"two devices", Split(1, 0, n, {dev(0), dev(1)})},
            {"split", Split(1, 0, n, {dev(0), dev(1), dev(2)})}};
  }
  absl::StatusOr<Array> UploadFloats(const std::vector<float>& values, const v1::IndexMap& map) {
    return client().Upload<float>(values, {static_cast<int64_t>(values.size())}, ArrayOpts(map));
  }
  bool IsCuda() const { return absl::StartsWith(GetParam(), "cuda"); }
  // Programs whose arrays all sit on one device replay a recorded graph on every backend; the
  // CUDA backend also records programs over several devices (one graph per device, agreeing on
  // their conditions; its machines have peer access between their GPUs). The host backend runs
  // those step by step.
  static int DeviceCount(const v1::IndexMap& map) {
    std::set<int> devices;
    for (const auto& chunk : map.chunks()) devices.insert(chunk.device());
    return static_cast<int>(devices.size());
  }
  bool GraphsExpected(const v1::IndexMap& map) const { return DeviceCount(map) == 1 || IsCuda(); }
  // Over several devices, "cuda" agrees on conditions through peer memory, "cuda_nccl" through
  // NCCL all-reduces (as where GPUs have no peer access), which records loops unfused.
  bool PeerAgreement(const v1::IndexMap& map) const {
    return DeviceCount(map) == 1 || GetParam() == "cuda";
  }
  // The CUDA backend runs a loop whose body is an elementwise chain ending in all()/any(), over
  // arrays of one chunk per device, as one runtime-compiled kernel per iteration on each device
  // (docs/graphs.md).
  int FusedLoopsExpected(const v1::IndexMap& map) const {
    return IsCuda() && DeviceCount(map) == map.chunks_size() && PeerAgreement(map) ? 1 : 0;
  }
};

TEST_P(GraphTest, SeedLoopRunsZeroOneAndManyTimes) {
  std::mt19937_64 rng(1);
  const int64_t n = 3000;
  for (const auto& [label, map] : Layouts(n)) {
    // start offsets give 0 iterations, 1 iteration, and many.
    for (const float offset : {1000.0f, 993.0f, 0.0f}) {
      SCOPED_TRACE(absl::StrCat(label, ", start offset ", offset));
      std::vector<float> a = RandomSmallIntegers(n, rng);
      for (float& x : a) x += offset;
      a[0] = 6 + offset;  // the maximum is known, so the iteration count is too
      auto input = UploadFloats(a, map);
      ASSERT_TRUE(input.ok()) << input.status();
      auto run = client().RunGraph(SeedLoop(1000, 100000), {{"a", &*input}});
      ASSERT_TRUE(run.ok()) << run.status();
      std::vector<float> expected = a;
      const int64_t iterations = SeedLoopOnHost(expected, 1000, 100000);
      EXPECT_EQ(run->iterations, iterations);
      EXPECT_FALSE(run->hit_iteration_cap);
      EXPECT_EQ(run->execution,
                GraphsExpected(map) ? v1::GRAPH_EXECUTION_DEVICE_GRAPH : v1::GRAPH_EXECUTION_EAGER);
      EXPECT_EQ(run->fused_loops, FusedLoopsExpected(map));
      auto got = run->outputs.at("a").Download<float>();
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(*got, expected);
      EXPECT_EQ(run->outputs.at("a").info().index_map().chunks_size(), map.chunks_size());
      // The input is untouched.
      auto before = input->Download<float>();
      ASSERT_TRUE(before.ok());
      EXPECT_EQ(*before, a);
    }
  }
}

// A loop fused on the CUDA backend (several dtypes, casts, scalars, where, a remainder, a value
// carried by copy, any()) computes exactly what its statements compute one by one: the same
// program on every backend and layout against a host model.
TEST_P(GraphTest, FusedLoopComputesWhatItsStatementsCompute) {
  std::mt19937_64 rng(7);
  const int64_t n = 5000;
  const float limit = 300;
  g::ProgramBuilder p;
  g::Vars out =
      p.WhileLoop([limit](auto v) { return g::Any(v[0] < limit); },
                  [](auto v) {
                    g::ProgramBuilder& b = v[0].builder();
                    g::Var a = v[0] + b.AsType(v[1], v1::DTYPE_FLOAT32);
                    g::Var next_b = b.Ufunc(v1::ELEMENTWISE_OP_REMAINDER, {v[1] * 3, 7}) + 1;
                    g::Var c = g::Where(a > 50.0f, v[2] * 0.5, v[2] + 1.0);
                    return g::Vars{a, next_b, c, v[0]};
                  },
                  {p.Input("a"), p.Input("b"), p.Input("c"), p.Input("d")}, 100000);
  for (int i = 0; i < 4; ++i) p.Output(std::string(1, static_cast<char>('a' + i)), out[i]);

  std::uniform_int_distribution<int> small(0, 6), large(0, 100);
  std::vector<float> a(n), d(n);
  std::vector<int32_t> b(n);
  std::vector<double> c(n);
  for (int64_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(small(rng));
    b[i] = 1 + small(rng);
    c[i] = large(rng);
    d[i] = static_cast<float>(large(rng));
  }
  // The host model, element by element in the program's dtypes.
  std::vector<float> ea = a, ed = d;
  std::vector<int32_t> eb = b;
  std::vector<double> ec = c;
  int64_t iterations = 0;
  auto any_below = [&] {
    for (float x : ea) {
      if (x < limit) return true;
    }
    return false;
  };
  while (any_below()) {
    for (int64_t i = 0; i < n; ++i) {
      const float na = ea[i] + static_cast<float>(eb[i]);
      ed[i] = ea[i];
      ec[i] = na > 50.0f ? ec[i] * 0.5 : ec[i] + 1.0;
      eb[i] = (eb[i] * 3) % 7 + 1;
      ea[i] = na;
    }
    ++iterations;
  }

  for (const auto& [label, map] : Layouts(n)) {
    SCOPED_TRACE(label);
    auto ua = UploadFloats(a, map);
    auto ub = client().Upload<int32_t>(b, {n}, ArrayOpts(map));
    auto uc = client().Upload<double>(c, {n}, ArrayOpts(map));
    auto ud = UploadFloats(d, map);
    ASSERT_TRUE(ua.ok() && ub.ok() && uc.ok() && ud.ok());
    auto run = client().RunGraph(p.program(), {{"a", &*ua}, {"b", &*ub}, {"c", &*uc}, {"d", &*ud}});
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_EQ(run->iterations, iterations);
    EXPECT_EQ(run->fused_loops, FusedLoopsExpected(map));
    EXPECT_EQ(run->outputs.at("a").Download<float>().value(), ea);
    EXPECT_EQ(run->outputs.at("b").Download<int32_t>().value(), eb);
    EXPECT_EQ(run->outputs.at("c").Download<double>().value(), ec);
    EXPECT_EQ(run->outputs.at("d").Download<float>().value(), ed);
  }
}

// Fused (one chunk per device on the CUDA backend) and op by op (split: several chunks on a
// device) compute the same
// bits, also for the library functions (pow, sin, exp, hypot) whose results depend on how the
// kernels were compiled: contraction of a multiply and an add into an FMA, allowed in one build
// and not the other, changed float64 pow by 1 ulp.
TEST_P(GraphTest, FusedAndOpByOpLoopsComputeTheSameBits) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> uniform(0.5, 2.0);
  const int64_t n = 4099;
  g::ProgramBuilder p;
  g::Vars out = p.WhileLoop(
      [](auto v) { return g::All(v[2] < 20.0f); },
      [](auto v) {
        g::ProgramBuilder& b = v[0].builder();
        g::Var x = b.Ufunc(v1::ELEMENTWISE_OP_POWER, {v[0], 1.01f}) * 0.999f +
                   b.Ufunc(v1::ELEMENTWISE_OP_SIN, {v[0]}) * 0.25f;
        g::Var y = b.Ufunc(v1::ELEMENTWISE_OP_HYPOT,
                           {v[1] * 0.75, b.Ufunc(v1::ELEMENTWISE_OP_EXP, {v[1] * -0.5})}) +
                   b.Ufunc(v1::ELEMENTWISE_OP_POWER, {v[1], 0.9}) * 0.125;
        return g::Vars{x, y, v[2] + 1.0f};
      },
      {p.Input("x"), p.Input("y"), p.Input("k")}, 1000);
  p.Output("x", out[0]);
  p.Output("y", out[1]);

  std::vector<float> x(n), k(n, 0.0f);
  std::vector<double> y(n);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(uniform(rng));
    y[i] = uniform(rng);
  }
  std::vector<std::vector<float>> xs;
  std::vector<std::vector<double>> ys;
  for (const auto& [label, map] : Layouts(n)) {
    SCOPED_TRACE(label);
    auto ux = UploadFloats(x, map);
    auto uy = client().Upload<double>(y, {n}, ArrayOpts(map));
    auto uk = UploadFloats(k, map);
    ASSERT_TRUE(ux.ok() && uy.ok() && uk.ok());
    auto run = client().RunGraph(p.program(), {{"x", &*ux}, {"y", &*uy}, {"k", &*uk}});
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_EQ(run->iterations, 20);
    EXPECT_EQ(run->fused_loops, FusedLoopsExpected(map));
    xs.push_back(run->outputs.at("x").Download<float>().value());
    ys.push_back(run->outputs.at("y").Download<double>().value());
  }
  ASSERT_EQ(xs.size(), 3u);
  // Bit for bit (memcmp: EXPECT_EQ on floats would let -0 equal 0).
  for (size_t l = 1; l < xs.size(); ++l) {
    EXPECT_EQ(std::memcmp(xs[0].data(), xs[l].data(), n * sizeof(float)), 0) << l;
    EXPECT_EQ(std::memcmp(ys[0].data(), ys[l].data(), n * sizeof(double)), 0) << l;
  }
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_TRUE(std::isfinite(xs[0][i]) && std::isfinite(ys[0][i])) << i;
  }
}

// A fused loop inside another loop: entered again on every outer iteration (its count, its
// decision and its state start over each time), and capped in a later round of its unrolled
// copies (cap 11 with 8 copies a round).
TEST_P(GraphTest, FusedLoopInsideALoopRestartsAndStopsAtItsCap) {
  std::mt19937_64 rng(12);
  const int64_t n = 2000;
  g::ProgramBuilder p;
  // while all(k < 3): k += 1; (while all(a < 1e9): a += 1, at most 11 times)
  g::Vars out = p.WhileLoop([](auto v) { return g::All(v[1] < 3.0f); },
                            [](auto v) {
                              g::Vars inner = v[0].builder().WhileLoop(
                                  [](auto w) { return g::All(w[0] < 1e9f); },
                                  [](auto w) { return g::Vars{w[0] + 1.0f}; }, {v[0]}, 11);
                              return g::Vars{inner[0], v[1] + 1.0f};
                            },
                            {p.Input("a"), p.Input("k")}, 100);
  p.Output("a", out[0]);
  for (const auto& [label, map] : Layouts(n)) {
    SCOPED_TRACE(label);
    std::vector<float> a = RandomSmallIntegers(n, rng);
    auto ua = UploadFloats(a, map);
    auto uk = UploadFloats(std::vector<float>(n, 0.0f), map);
    ASSERT_TRUE(ua.ok() && uk.ok());
    auto run = client().RunGraph(p.program(), {{"a", &*ua}, {"k", &*uk}});
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_EQ(run->iterations, 3 + 3 * 11);  // outer bodies + inner bodies
    EXPECT_TRUE(run->hit_iteration_cap);
    EXPECT_EQ(run->fused_loops, FusedLoopsExpected(map));  // the inner loop; the outer one is not
    for (float& x : a) x += 33;
    EXPECT_EQ(run->outputs.at("a").Download<float>().value(), a);
  }
}

// A loop whose condition spans the devices, with a value the program returns: recorded on the
// CUDA backend, the condition's partials are combined by the devices agreeing on every
// iteration. A program that also returns the combined reduction (which a graph cannot combine
// across devices) runs eagerly instead, with the same answers.
TEST_P(GraphTest, SplitConditionsAgreeAndReturnedReductionsCombine) {
  std::mt19937_64 rng(21);
  const int64_t n = 2001;
  for (const auto& [label, map] : Layouts(n)) {
    for (const bool return_flag : {false, true}) {
      SCOPED_TRACE(absl::StrCat(label, return_flag ? ", returning the flag" : ""));
      std::vector<float> a = RandomSmallIntegers(n, rng);
      a[n - 1] = 30;  // the last chunk decides: it reaches the limit first
      g::ProgramBuilder p;
      g::Vars out = p.WhileLoop([](auto v) { return g::All(v[0] < 100.0f); },
                                [](auto v) { return g::Vars{v[0] + 1.0f}; }, {p.Input("a")}, 1000);
      p.Output("a", out[0]);
      if (return_flag) p.ValueOutput("any_big", g::Any(out[0] > 99.0f));
      auto input = UploadFloats(a, map);
      ASSERT_TRUE(input.ok()) << input.status();
      auto run = client().RunGraph(p.program(), {{"a", &*input}});
      ASSERT_TRUE(run.ok()) << run.status();
      EXPECT_EQ(run->iterations, 70);
      const bool recorded = DeviceCount(map) == 1 || (IsCuda() && !return_flag);
      EXPECT_EQ(run->execution,
                recorded ? v1::GRAPH_EXECUTION_DEVICE_GRAPH : v1::GRAPH_EXECUTION_EAGER);
      for (float& x : a) x += 70;
      EXPECT_EQ(run->outputs.at("a").Download<float>().value(), a);
      if (return_flag) {
        const v1::Value& flag = run->values.at("any_big");
        ASSERT_EQ(flag.data().size(), 1u);
        EXPECT_EQ(flag.data()[0], 1);
      }
    }
  }
}

// A loop whose body moves data between devices: a matrix-vector product with the matrix's rows
// split (the vector is gathered to every device), a combined sum (partials brought together), and
// a division by it (the 0-d sum replicated where the vector lies), with a counter on one device
// as the condition. On the CUDA backend the whole loop is recorded (copies between devices as
// peer reads between barriers), against a long double host model.
TEST_P(GraphTest, LoopMovingDataBetweenDevicesMatchesTheHost) {
  std::mt19937_64 rng(31);
  std::uniform_real_distribution<double> uniform(0.1, 1.0);
  const int64_t n = 96;
  const int steps = 6;
  std::vector<double> a(n * n), v(n);
  for (double& x : a) x = uniform(rng);
  for (double& x : v) x = uniform(rng);

  g::ProgramBuilder p;
  const g::Var va = p.Input("A");
  g::Vars out = p.WhileLoop([steps](auto w) { return g::All(w[2] < static_cast<double>(steps)); },
                            [&va](auto w) {
                              g::ProgramBuilder& b = w[0].builder();
                              const g::Var av = b.Matmul(va, w[0]);
                              const g::Var total = g::Sum(av);
                              return g::Vars{av / total, w[1] + total, w[2] + 1.0};
                            },
                            {p.Input("v"), p.Input("acc"), p.Input("k")}, 100);
  p.Output("v", out[0]);
  p.Output("acc", out[1]);

  // The host model, in long double.
  std::vector<long double> hv(v.begin(), v.end());
  long double acc = 0;
  for (int step = 0; step < steps; ++step) {
    std::vector<long double> next(n, 0);
    long double total = 0;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) next[i] += static_cast<long double>(a[i * n + j]) * hv[j];
      total += next[i];
    }
    for (int64_t i = 0; i < n; ++i) hv[i] = next[i] / total;
    acc += total;
  }

  for (const auto& [label, map] :
       {std::pair{std::string("one device"), std::vector<int>{dev(0)}},
        std::pair{std::string("two devices"), std::vector<int>{dev(0), dev(1)}}}) {
    SCOPED_TRACE(label);
    auto ua = client().Upload<double>(a, {n, n}, ArrayOpts(Split(2, 0, n, map)));
    auto uv = client().Upload<double>(v, {n, 1}, ArrayOpts(Split(2, 0, n, map)));
    auto uacc =
        client().Upload<double>(std::vector<double>{0.0}, {1}, ArrayOpts(Split(1, 0, 1, {dev(0)})));
    auto uk =
        client().Upload<double>(std::vector<double>{0.0}, {1}, ArrayOpts(Split(1, 0, 1, {dev(0)})));
    ASSERT_TRUE(ua.ok() && uv.ok() && uacc.ok() && uk.ok());
    for (int run_index = 0; run_index < 2; ++run_index) {  // recorded, then replayed from cache
      auto run =
          client().RunGraph(p.program(), {{"A", &*ua}, {"v", &*uv}, {"acc", &*uacc}, {"k", &*uk}});
      ASSERT_TRUE(run.ok()) << run.status();
      EXPECT_EQ(run->iterations, steps);
      std::set<int> devices(map.begin(), map.end());
      EXPECT_EQ(run->execution, devices.size() == 1 || IsCuda() ? v1::GRAPH_EXECUTION_DEVICE_GRAPH
                                                                : v1::GRAPH_EXECUTION_EAGER);
      auto got = run->outputs.at("v").Download<double>();
      auto got_acc = run->outputs.at("acc").Download<double>();
      ASSERT_TRUE(got.ok() && got_acc.ok());
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_NEAR((*got)[i], static_cast<double>(hv[i]), 1e-13) << i;
      }
      EXPECT_NEAR((*got_acc)[0], static_cast<double>(acc), 1e-9 * static_cast<double>(acc));
    }
  }
}

TEST_P(GraphTest, IterationCapStopsTheLoopAndSaysSo) {
  std::mt19937_64 rng(2);
  for (const auto& [label, map] : Layouts(500)) {
    SCOPED_TRACE(label);
    std::vector<float> a = RandomSmallIntegers(500, rng);
    auto input = UploadFloats(a, map);
    ASSERT_TRUE(input.ok()) << input.status();
    auto run = client().RunGraph(SeedLoop(1000, 5), {{"a", &*input}});
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_TRUE(run->hit_iteration_cap);
    EXPECT_EQ(run->iterations, 5);
    auto got = run->outputs.at("a").Download<float>();
    ASSERT_TRUE(got.ok());
    for (float& x : a) x += 5;
    EXPECT_EQ(*got, a);
  }
}

// Nested loops with a broadcast operand, and an if inside a while, in float64 against the host.
TEST_P(GraphTest, NestedLoopsAndIfInsideWhile) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> uniform(0, 4);
  const int64_t n = 700;
  for (const auto& [label, map] : Layouts(n)) {
    SCOPED_TRACE(label);
    std::vector<double> a(n);
    for (double& x : a) x = uniform(rng);
    auto input = client().Upload<double>(a, {n}, ArrayOpts(map));
    auto counter =
        client().Upload<double>(std::vector<double>{0.0}, {1}, ArrayOpts(Split(1, 0, 1, {dev(0)})));
    ASSERT_TRUE(input.ok() && counter.ok());

    // while all(k < 3): k += 1; while any(a < 10 * k): a += 1.5;
    //                           if all(k > 1): a *= 0.5 else: a += 0.25
    g::ProgramBuilder p;
    g::Var va = p.Input("a"), vk = p.Input("k");
    g::Vars out = p.WhileLoop([](auto v) { return g::All(v[1] < 3.0); },
                              [](auto v) {
                                g::Var k = v[1] + 1.0;
                                // The inner loop compares with the (1,)-shaped k, broadcast, so k
                                // must live where a does: on one device it does; split, the daemon
                                // brings it.
                                g::Vars inner = k.builder().WhileLoop(
                                    [k](auto w) { return g::Any(w[0] < k * 10.0); },
                                    [](auto w) { return g::Vars{w[0] + 1.5}; }, {v[0]}, 1000);
                                g::Vars branched = k.builder().Cond(
                                    g::All(k > 1.0), [](auto w) { return g::Vars{w[0] * 0.5}; },
                                    [](auto w) { return g::Vars{w[0] + 0.25}; }, {inner[0]});
                                return g::Vars{branched[0], k};
                              },
                              {va, vk}, 100);
    p.Output("a", out[0]);
    p.ValueOutput("k", out[1]);

    // The host model.
    std::vector<double> expected = a;
    double k = 0;
    int64_t iterations = 0;
    while (k < 3) {
      k += 1;
      ++iterations;
      auto any_below = [&] {
        for (double x : expected) {
          if (x < 10 * k) return true;
        }
        return false;
      };
      while (any_below()) {
        for (double& x : expected) x += 1.5;
        ++iterations;
      }
      for (double& x : expected) x = k > 1 ? x * 0.5 : x + 0.25;
    }
    auto run = client().RunGraph(p.program(), {{"a", &*input}, {"k", &*counter}});
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_EQ(run->iterations, iterations);
    auto got = run->outputs.at("a").Download<double>();
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(*got, expected);  // exact: every step is exact in float64 here
    const v1::Value& value = run->values.at("k");
    ASSERT_EQ(value.dtype(), v1::DTYPE_FLOAT64);
    ASSERT_EQ(value.data().size(), sizeof(double));
    double k_value;
    std::memcpy(&k_value, value.data().data(), sizeof k_value);
    EXPECT_EQ(k_value, 3.0);
  }
}

TEST_P(GraphTest, RegisteredProgramRerunsWithNewArgumentsAndHitsTheCache) {
  auto id = client().RegisterProgram(SeedLoop(200, 10000));
  ASSERT_TRUE(id.ok()) << id.status();
  std::mt19937_64 rng(4);
  const v1::IndexMap map = Split(1, 0, 1000, {dev(0)});
  auto info_before = client().ServerInfo();
  ASSERT_TRUE(info_before.ok());
  for (int run_index = 0; run_index < 3; ++run_index) {
    SCOPED_TRACE(absl::StrCat("run ", run_index));
    std::vector<float> a = RandomSmallIntegers(1000, rng);
    a[0] = 6;
    auto input = UploadFloats(a, map);
    ASSERT_TRUE(input.ok());
    auto run = client().RunGraph(*id, {{"a", &*input}});
    ASSERT_TRUE(run.ok()) << run.status();
    std::vector<float> expected = a;
    EXPECT_EQ(run->iterations, SeedLoopOnHost(expected, 200, 10000));
    auto got = run->outputs.at("a").Download<float>();
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(*got, expected);
    if (GraphsExpected(map)) EXPECT_EQ(run->graph_cache_hit, run_index > 0);
  }
  auto info_after = client().ServerInfo();
  ASSERT_TRUE(info_after.ok());
  if (GraphsExpected(map)) {
    EXPECT_GE(info_after->graph_cache().hits() - info_before->graph_cache().hits(), 2);
    EXPECT_GE(info_after->graph_cache().misses() - info_before->graph_cache().misses(), 1);
  }
  EXPECT_GE(info_after->graph_cache().registered_programs(), 1);
  ASSERT_TRUE(client().DeleteProgram(*id).ok());
  EXPECT_TRUE(StatusIs(client().DeleteProgram(*id), absl::StatusCode::kNotFound, {"program_id"}));
  std::vector<float> a(10, 1.0f);
  auto input = UploadFloats(a, Split(1, 0, 10, {dev(0)}));
  ASSERT_TRUE(input.ok());
  EXPECT_TRUE(StatusIs(client().RunGraph(*id, {{"a", &*input}}).status(),
                       absl::StatusCode::kNotFound, {"program_id"}));
}

// A symmetric product inside a loop body (recorded: cuBLAS symv inside the WHILE node on CUDA):
// x = 0.25 * (A @sym x) three times, A whole on one device and NOT symmetric, so only its upper
// triangle's mirror gives these values. Against the host in long double.
TEST_P(GraphTest, ASymmetricProductInsideALoopReadsTheUpperTriangle) {
  constexpr int64_t n = 96;
  std::mt19937_64 rng(21);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> a(n * n), x(n);
  for (double& v : a) v = u(rng);
  for (double& v : x) v = u(rng);
  g::ProgramBuilder p;
  const g::Var A = p.Input("A");
  g::Vars out =
      p.WhileLoop([](auto v) { return g::All(v[1] < 3.0); },
                  [&A](auto v) {
                    return g::Vars{v[0].builder().SymmetricMatmul(A, v[0]) * 0.25, v[1] + 1.0};
                  },
                  {p.Input("x"), p.Input("k")}, 10);
  p.Output("x", out[0]);
  std::vector<long double> want(x.begin(), x.end());
  for (int step = 0; step < 3; ++step) {
    std::vector<long double> next(n, 0.0L);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        next[i] += static_cast<long double>(j >= i ? a[i * n + j] : a[j * n + i]) * want[j];
      }
      next[i] *= 0.25L;
    }
    want = next;
  }
  auto ua = client().Upload<double>(a, {n, n}, ArrayOpts(OnDevice(2, dev(1))));
  auto ux = client().Upload<double>(x, {n, 1}, ArrayOpts(OnDevice(2, dev(1))));
  auto uk = client().Upload<double>(std::vector<double>{0.0}, {}, ArrayOpts(OnDevice(0, dev(1))));
  ASSERT_TRUE(ua.ok() && ux.ok() && uk.ok());
  for (int run_index = 0; run_index < 2; ++run_index) {
    auto run = client().RunGraph(p.program(), {{"A", &*ua}, {"x", &*ux}, {"k", &*uk}});
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_EQ(run->iterations, 3);
    auto got = run->outputs.at("x").Download<double>();
    ASSERT_TRUE(got.ok()) << got.status();
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_NEAR((*got)[i], static_cast<double>(want[i]), 1e-12) << i;
    }
  }
}

// A cached graph skips the check only for the program and argument layouts it was recorded for:
// the same inline program with another argument is checked again, and a program whose structure
// is wrong is refused on every call (a failed check is not remembered).
TEST_P(GraphTest, ACachedProgramIsCheckedAgainForOtherArgumentsAndABadOneEveryTime) {
  g::ProgramBuilder p;
  const g::Var a = p.Input("a");
  const g::Var b = p.Input("b");
  p.Output("c", a + b);
  const v1::Program program = p.program();
  std::mt19937_64 rng(11);
  const std::vector<float> a_values = RandomSmallIntegers(10, rng);
  const std::vector<float> b_values = RandomSmallIntegers(10, rng);
  auto a10 = UploadFloats(a_values, Split(1, 0, 10, {dev(0)}));
  auto b10 = UploadFloats(b_values, Split(1, 0, 10, {dev(0)}));
  auto b7 = UploadFloats(RandomSmallIntegers(7, rng), Split(1, 0, 7, {dev(0)}));
  ASSERT_TRUE(a10.ok() && b10.ok() && b7.ok());
  for (int k = 0; k < 3; ++k) {
    auto run = client().RunGraph(program, {{"a", &*a10}, {"b", &*b10}});
    ASSERT_TRUE(run.ok()) << run.status();
    auto got = run->outputs.at("c").Download<float>();
    ASSERT_TRUE(got.ok());
    for (int i = 0; i < 10; ++i) EXPECT_EQ((*got)[i], a_values[i] + b_values[i]) << i;
    if (GraphsExpected(Split(1, 0, 10, {dev(0)}))) EXPECT_EQ(run->graph_cache_hit, k > 0);
  }
  for (int k = 0; k < 2; ++k) {
    EXPECT_TRUE(StatusIs(client().RunGraph(program, {{"a", &*a10}, {"b", &*b7}}).status(),
                         absl::StatusCode::kInvalidArgument, {"program.statements[0]"}));
  }
  v1::Program bad = program;
  bad.mutable_statements(0)->clear_target();
  for (int k = 0; k < 2; ++k) {
    EXPECT_TRUE(StatusIs(client().RunGraph(bad, {{"a", &*a10}, {"b", &*b10}}).status(),
                         absl::StatusCode::kInvalidArgument, {"program.statements[0]"}));
  }
  // The cached graph still answers its own arguments.
  auto again = client().RunGraph(program, {{"a", &*a10}, {"b", &*b10}});
  ASSERT_TRUE(again.ok()) << again.status();
  auto got = again->outputs.at("c").Download<float>();
  ASSERT_TRUE(got.ok());
  for (int i = 0; i < 10; ++i) EXPECT_EQ((*got)[i], a_values[i] + b_values[i]) << i;
}

// A loop that never ends on its own stops at the call's deadline: DEADLINE_EXCEEDED soon after,
// the daemon healthy, the input intact, no output left behind.
TEST_P(GraphTest, DeadlineStopsARunningLoop) {
  for (const auto& [label, map] : Layouts(256)) {
    SCOPED_TRACE(label);
    std::vector<float> a(256);
    for (int i = 0; i < 256; ++i) a[i] = static_cast<float>(i);
    auto input = UploadFloats(a, map);
    ASSERT_TRUE(input.ok());
    auto arrays_before = client().List();
    ASSERT_TRUE(arrays_before.ok());
    // while all(a > -1): a = a + 1 -- forever (float32 stops growing at 2^24, stays > -1).
    g::ProgramBuilder p;
    g::Var va = p.Input("a");
    g::Vars out = p.WhileLoop([](auto v) { return g::All(v[0] > -1.0f); },
                              [](auto v) { return g::Vars{v[0] + 1.0f}; }, {va}, int64_t{1} << 30);
    p.Output("a", out[0]);
    const auto start = std::chrono::steady_clock::now();
    auto run = client().RunGraph(p.program(), {{"a", &*input}}, /*timeout_ms=*/400);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_TRUE(StatusIs(run.status(), absl::StatusCode::kDeadlineExceeded));
    EXPECT_LT(seconds, 5.0) << "the loop did not stop promptly";
    // The daemon finished the call's work and stays healthy; nothing was registered.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto arrays_after = client().List();
    ASSERT_TRUE(arrays_after.ok()) << arrays_after.status();
    EXPECT_EQ(arrays_after->size(), arrays_before->size());
    auto intact = input->Download<float>();
    ASSERT_TRUE(intact.ok()) << intact.status();
    EXPECT_EQ(*intact, a);
  }
}

// ---- errors ----

v1::Statement Op(const std::string& target, v1::ElementwiseOp op,
                 std::initializer_list<v1::Operand> operands) {
  v1::Statement s;
  s.set_target(target);
  s.mutable_elementwise()->set_op(op);
  for (const v1::Operand& o : operands) *s.mutable_elementwise()->add_operands() = o;
  return s;
}
v1::Operand Var(const std::string& name) {
  v1::Operand o;
  o.set_variable(name);
  return o;
}
v1::Operand Num(double x) {
  v1::Operand o;
  o.mutable_scalar()->set_float_value(x);
  return o;
}
v1::Statement AllOf(const std::string& target, const std::string& source) {
  v1::Statement s;
  s.set_target(target);
  s.mutable_reduce()->set_op(v1::REDUCE_OP_ALL);
  s.mutable_reduce()->mutable_operand()->set_variable(source);
  s.mutable_reduce()->set_combine(true);
  return s;
}
// inputs {a}; c = all(a < 10); while c (cap 10): body; outputs {a}
v1::Program LoopWith(std::initializer_list<v1::Statement> body, int64_t cap = 10,
                     const std::string& condition = "c") {
  v1::Program p;
  p.add_inputs("a");
  *p.add_statements() = Op("lt", v1::ELEMENTWISE_OP_LESS, {Var("a"), Num(10)});
  *p.add_statements() = AllOf("c", "lt");
  v1::WhileLoop* loop = p.add_statements()->mutable_while_loop();
  loop->set_condition(condition);
  loop->set_max_iterations(cap);
  for (const v1::Statement& s : body) *loop->add_body() = s;
  p.add_outputs("a");
  return p;
}

TEST_P(GraphTest, BadProgramsGetExactErrors) {
  auto a = client().Upload<float>(std::vector<float>{1, 2, 3, 4}, {4},
                                  ArrayOpts(Split(1, 0, 4, {dev(0)})));
  ASSERT_TRUE(a.ok());
  const std::map<std::string, const Array*> args{{"a", &*a}};
  struct Case {
    std::string name;
    v1::Program program;
    absl::StatusCode code;
    std::vector<std::string> needles;
  };
  std::vector<Case> cases;
  const v1::Statement step = Op("a", v1::ELEMENTWISE_OP_ADD, {Var("a"), Num(1)});
  cases.push_back({"condition not 0-d bool",
                   LoopWith({step}, 10, "lt"),
                   absl::StatusCode::kInvalidArgument,
                   {"statements[2].while_loop.condition", "0-d bool"}});
  cases.push_back({"unknown variable",
                   LoopWith({Op("a", v1::ELEMENTWISE_OP_ADD, {Var("zz"), Num(1)})}),
                   absl::StatusCode::kInvalidArgument,
                   {"while_loop.body[0].elementwise.operands[0].variable", "'zz'"}});
  cases.push_back({"missing cap",
                   LoopWith({step}, 0),
                   absl::StatusCode::kInvalidArgument,
                   {"while_loop.max_iterations", "required"}});
  cases.push_back({"type error in a body",
                   LoopWith({Op("b", v1::ELEMENTWISE_OP_BITWISE_AND, {Var("a"), Var("a")})}),
                   absl::StatusCode::kInvalidArgument,
                   {"body[0]", "bitwise_and"}});
  {
    v1::Statement cast = Op("a", v1::ELEMENTWISE_OP_ASTYPE, {Var("a")});
    cast.mutable_elementwise()->set_dtype(v1::DTYPE_FLOAT64);
    cases.push_back({"loop-carried type change",
                     LoopWith({cast}),
                     absl::StatusCode::kInvalidArgument,
                     {"'a'", "keeps its shape, dtype"}});
  }
  {
    v1::Program p = LoopWith({step});
    v1::Operand handle;
    handle.set_handle(a->handle());
    *p.mutable_statements(0)->mutable_elementwise()->mutable_operands(0) = handle;
    cases.push_back({"a handle inside a program",
                     p,
                     absl::StatusCode::kInvalidArgument,
                     {"statements[0].elementwise.operands[0].handle", "variables"}});
  }
  {
    v1::Program p = LoopWith({step});
    v1::Statement* s = p.mutable_statements(2);
    for (int depth = 0; depth < 9; ++depth) {
      v1::WhileLoop* inner = s->mutable_while_loop()->add_body()->mutable_while_loop();
      inner->set_condition("c");
      inner->set_max_iterations(1);
      s = s->mutable_while_loop()->mutable_body(s->while_loop().body_size() - 1);
    }
    cases.push_back({"nested too deep", p, absl::StatusCode::kInvalidArgument, {"nest at most"}});
  }
  {
    v1::Program p = LoopWith({step});
    for (int i = 0; i < 5000; ++i)
      *p.add_statements() = Op("b", v1::ELEMENTWISE_OP_NEGATIVE, {Var("a")});
    cases.push_back(
        {"too many statements", p, absl::StatusCode::kInvalidArgument, {"at most", "statements"}});
  }
  {
    v1::Program p = LoopWith({step});
    p.add_value_outputs("a");
    cases.push_back({"returned twice", p, absl::StatusCode::kInvalidArgument, {"returned twice"}});
  }
  {
    v1::Program p = LoopWith({step});
    p.set_outputs(0, "nope");
    cases.push_back({"output never assigned",
                     p,
                     absl::StatusCode::kInvalidArgument,
                     {"program.outputs[0]", "'nope'"}});
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_TRUE(StatusIs(client().RunGraph(c.program, args).status(), c.code, c.needles));
  }

  // Arguments: unbound input, an argument that is not an input, an unknown handle.
  EXPECT_TRUE(StatusIs(client().RunGraph(LoopWith({step}), {}).status(),
                       absl::StatusCode::kInvalidArgument, {"arguments", "'a'", "not bound"}));
  EXPECT_TRUE(StatusIs(client().RunGraph(LoopWith({step}), {{"a", &*a}, {"b", &*a}}).status(),
                       absl::StatusCode::kInvalidArgument, {"arguments", "'b'"}));
  v1::RunGraphRequest request;
  *request.mutable_program() = LoopWith({step});
  (*request.mutable_arguments())["a"] = "arr-00000000deadbeef";
  EXPECT_TRUE(
      StatusIs(client().RunGraph(request).status(), absl::StatusCode::kNotFound, {"arguments[a]"}));
  // Value outputs are bounded.
  auto big =
      client().Create({1 << 19}, v1::DTYPE_FLOAT32, ArrayOpts(Split(1, 0, 1 << 19, {dev(0)})));
  ASSERT_TRUE(big.ok());
  v1::Program value_program;
  value_program.add_inputs("a");
  *value_program.add_statements() = Op("b", v1::ELEMENTWISE_OP_NEGATIVE, {Var("a")});
  value_program.add_value_outputs("b");
  EXPECT_TRUE(StatusIs(client().RunGraph(value_program, {{"a", &*big}}).status(),
                       absl::StatusCode::kInvalidArgument, {"value_outputs[0]", "bytes"}));
  // Registering checks the structure at once.
  EXPECT_TRUE(StatusIs(client().RegisterProgram(LoopWith({step}, 0)).status(),
                       absl::StatusCode::kInvalidArgument, {"max_iterations"}));
}

// A loop body that does not fuse as a whole (a reduction in it) holding a straight-line run of
// 0-d ops, as a solver's recurrence does: the run is recorded as one kernel per device on the GPU
// (chain_fusion.h) and must compute what the ops compute one by one, on every device its values
// are kept on.
TEST_P(GraphTest, StraightLineChainsComputeWhatTheirStatementsCompute) {
  std::vector<int> on = {dev(0)};
  if (devices() > 1) on.push_back(dev(1));
  g::ProgramBuilder p;
  g::Vars out =
      p.WhileLoop([](auto v) { return g::All(v[2] < 10.0); },
                  [](auto v) {
                    g::ProgramBuilder& b = v[0].builder();
                    g::Var n = b.Reduce(v[1] * v[1], v1::REDUCE_OP_SUM);  // breaks the chain
                    g::Var a = b.Ufunc(v1::ELEMENTWISE_OP_HYPOT, {v[0], n});
                    g::Var c = v[0] / b.Ufunc(v1::ELEMENTWISE_OP_WHERE, {a == 0.0, 1.0, a});
                    g::Var s = b.Ufunc(v1::ELEMENTWISE_OP_SQRT, {c * c + 1.0}) - c * 0.5 + n * 1e-3;
                    return g::Vars{s, v[1] * 0.5, v[2] + 1.0};
                  },
                  {p.Input("s"), p.Input("v"), p.Input("k")}, 100);
  p.Output("s", out[0]);
  const std::vector<double> v0 = {0.25, -1.5, 2.0, 0.125, 3.0};
  auto s_in = client().Upload<double>(std::vector<double>{0.75}, {}, ArrayOpts(Replicated(0, on)));
  auto v_in = client().Upload<double>(v0, {5}, ArrayOpts(Replicated(1, on)));
  auto k_in = client().Upload<double>(std::vector<double>{0}, {}, ArrayOpts(Replicated(0, on)));
  ASSERT_TRUE(s_in.ok() && v_in.ok() && k_in.ok());
  // The host model, in long double.
  long double s = 0.75L;
  std::vector<long double> v(v0.begin(), v0.end());
  for (int k = 0; k < 10; ++k) {
    long double n = 0;
    for (long double x : v) n += x * x;
    const long double a = std::hypot(s, n);
    const long double c = s / (a == 0 ? 1 : a);
    s = std::sqrt(c * c + 1) - c * 0.5L + n * 1e-3L;
    for (long double& x : v) x *= 0.5L;
  }
  for (int run = 0; run < 2; ++run) {  // recorded, then replayed from the cache
    auto result = client().RunGraph(p.program(), {{"s", &*s_in}, {"v", &*v_in}, {"k", &*k_in}});
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->iterations, 10);
    const std::vector<double> got = result->outputs.at("s").Download<double>().value();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_NEAR(got[0], static_cast<double>(s), 1e-13 * std::abs(static_cast<double>(s)));
  }
}

// A solver's vector updates fed by its 0-d values (`x + b * p`, with b computed in the same
// run, and `p * 0.5 - alpha * 1e-3` with alpha a carried 0-d value), rows split unevenly over the
// devices: on the GPU one kernel per device computes the 0-d values at every element, reads alpha
// at element 0, and stores the new 0-d values from element 0. alpha is read that way and also
// carried (assigned) in the same body: the copy that assigns it starts the next chain, so no
// element reads alpha while element 0 writes it.
TEST_P(GraphTest, ChainsBroadcastZeroDValuesIntoSplitVectors) {
  std::vector<int> on = {dev(0)};
  if (devices() > 1) on.push_back(dev(1));
  const int64_t n = 1037;
  g::ProgramBuilder p;
  const v1::IndexMap scalars = Replicated(0, on);
  g::Vars out = p.WhileLoop([](auto v) { return g::All(v[3] < 6.0); },
                            [&scalars](auto v) {
                              g::ProgramBuilder& b = v[0].builder();
                              const g::Var& x = v[0];
                              const g::Var& q = v[1];
                              const g::Var& alpha = v[2];
                              g::Var norm2 = b.Reshard(b.Reduce(q * q, v1::REDUCE_OP_SUM), scalars,
                                                       v1::MODE_REPLICA);
                              g::Var step = g::Sqrt(norm2 / (alpha + 1.0)) * 0.5;
                              g::Var x_next = x + step * q;
                              g::Var q_next = q * 0.5 - alpha * 1e-3;
                              g::Var alpha_next = alpha * 0.9 + step * 1e-2;
                              return g::Vars{x_next, q_next, alpha_next, v[3] + 1.0};
                            },
                            {p.Input("x"), p.Input("q"), p.Input("alpha"), p.Input("k")}, 100);
  p.Output("x", out[0]);
  p.Output("q", out[1]);
  p.Output("alpha", out[2]);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<double> x0(n), q0(n);
  for (double& e : x0) e = uniform(rng);
  for (double& e : q0) e = uniform(rng);
  const double alpha0 = 0.5 + uniform(rng) * 0.25;
  const v1::IndexMap rows = Split(1, 0, n, on);
  auto x_in = client().Upload<double>(x0, {n}, ArrayOpts(rows));
  auto q_in = client().Upload<double>(q0, {n}, ArrayOpts(rows));
  auto alpha_in = client().Upload<double>(std::vector<double>{alpha0}, {}, ArrayOpts(scalars));
  auto k_in = client().Upload<double>(std::vector<double>{0}, {}, ArrayOpts(scalars));
  ASSERT_TRUE(x_in.ok() && q_in.ok() && alpha_in.ok() && k_in.ok());
  // The host model, in long double.
  std::vector<long double> x(x0.begin(), x0.end()), q(q0.begin(), q0.end());
  long double alpha = alpha0;
  for (int k = 0; k < 6; ++k) {
    long double norm2 = 0;
    for (long double e : q) norm2 += e * e;
    const long double step = std::sqrt(norm2 / (alpha + 1)) * 0.5L;
    for (int64_t i = 0; i < n; ++i) {
      x[i] += step * q[i];
      q[i] = q[i] * 0.5L - alpha * 1e-3L;
    }
    alpha = alpha * 0.9L + step * 1e-2L;
  }
  for (int run = 0; run < 2; ++run) {  // recorded, then replayed from the cache
    auto result = client().RunGraph(
        p.program(), {{"x", &*x_in}, {"q", &*q_in}, {"alpha", &*alpha_in}, {"k", &*k_in}});
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->iterations, 6);
    if (IsCuda()) {
      // The 0-d ops and the vector updates they feed: one run, and the tail of copies another.
      EXPECT_GE(result->fused_chains_in_bodies, 2);
      EXPECT_GE(result->fused_chain_statements_in_bodies, 10);
    } else {
      EXPECT_EQ(result->fused_chains_in_bodies, 0);
    }
    const std::vector<double> got_x = result->outputs.at("x").Download<double>().value();
    const std::vector<double> got_q = result->outputs.at("q").Download<double>().value();
    const std::vector<double> got_alpha = result->outputs.at("alpha").Download<double>().value();
    ASSERT_EQ(got_x.size(), static_cast<size_t>(n));
    ASSERT_EQ(got_q.size(), static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_NEAR(got_x[i], static_cast<double>(x[i]), 1e-12) << "x[" << i << "]";
      ASSERT_NEAR(got_q[i], static_cast<double>(q[i]), 1e-12) << "q[" << i << "]";
    }
    ASSERT_EQ(got_alpha.size(), 1u);
    EXPECT_NEAR(got_alpha[0], static_cast<double>(alpha), 1e-13);
  }
}

// Sums at the end of straight-line runs (on the GPU, added up by the run's kernel): over rows
// split unevenly (each device's partial, then combined) and over a vector held whole on every
// device (each device's whole sum; never twice). float32 and float64.
TEST_P(GraphTest, ChainsEndingInASumCountEachElementOnce) {
  std::vector<int> on = {dev(0)};
  if (devices() > 1) on.push_back(dev(1));
  const int64_t n = 70001;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<double> x0(n);
  for (double& e : x0) e = uniform(rng);
  long double dot = 0;
  for (double e : x0) dot += static_cast<long double>(e) * e * 3;
  for (const auto& [label, map] :
       {std::pair{"split", Split(1, 0, n, on)}, std::pair{"whole on each", Replicated(1, on)}}) {
    for (const bool f32 : {false, true}) {
      SCOPED_TRACE(absl::StrCat(label, f32 ? " float32" : " float64"));
      g::ProgramBuilder p;
      g::Var x = p.Input("x");
      g::Var s = g::Sum((x * x) * 3.0);
      g::Vars out = p.WhileLoop([](auto v) { return g::All(v[1] < 3.0); },
                                [&](auto v) {
                                  g::Var t = g::Sum((x * x) * 3.0);  // a run ending in a sum
                                  return g::Vars{v[0] * 0.0 + t, v[1] + 1.0};
                                },
                                {s * 0.0, s * 0.0}, 10);
      p.Output("s", out[0]);
      absl::StatusOr<Array> x_in =
          f32 ? client().Upload<float>(std::vector<float>(x0.begin(), x0.end()), {n},
                                       ArrayOpts(map))
              : client().Upload<double>(x0, {n}, ArrayOpts(map));
      ASSERT_TRUE(x_in.ok()) << x_in.status();
      auto result = client().RunGraph(p.program(), {{"x", &*x_in}});
      ASSERT_TRUE(result.ok()) << result.status();
      EXPECT_EQ(result->iterations, 3);
      if (IsCuda()) {
        // x * x * 3 and its sum in one kernel, unless each device holds all of x (then the sum
        // runs as a reduction: each device's kernel would add every element).
        const bool sum_fused = std::string(label) == "split" || on.size() == 1;
        EXPECT_GE(result->fused_chain_statements_in_bodies, sum_fused ? 3 : 2);
      }
      const double got = f32 ? result->outputs.at("s").Download<float>().value().at(0)
                             : result->outputs.at("s").Download<double>().value().at(0);
      EXPECT_NEAR(got, static_cast<double>(dot), (f32 ? 1e-4 : 1e-11) * static_cast<double>(dot));
    }
  }
}

// On one GPU the CUDA backend runs a small fused loop as a persistent kernel: up to 256
// iterations per launch with a grid barrier between them (docs/graphs.md, "Persistent loops").
// Loops that stop inside a launch, at its end and one past it, by the cap at and past a launch's
// end, and run 0 or 1 times, against the host model on every backend; on "cuda" also against a
// daemon that unrolls instead (--persistent_loops=false): the same values, iteration
// counts and cap.
TEST_P(GraphTest, PersistentAndUnrolledLoopsAgreeAtLaunchBoundaries) {
  std::vector<const Client*> daemons = {&client()};
  std::unique_ptr<Daemon> unrolled_daemon;
  std::optional<Client> unrolled;
  if (GetParam() == "cuda") {
    Daemon::Options options = OptionsFor(GetParam());
    options.extra_flags = {"--persistent_loops=false"};
    ASSERT_NO_FATAL_FAILURE(StartOwnDaemon(GetParam(), options, unrolled_daemon));
    if (IsSkipped()) return;
    auto connected = Client::Connect(unrolled_daemon->address());
    ASSERT_TRUE(connected.ok()) << connected.status();
    unrolled.emplace(*std::move(connected));
    daemons.push_back(&*unrolled);
  }
  std::mt19937_64 rng(11);
  struct Case {
    float offset;  // added to values in [0, 6], the largest being 6: 994 - offset iterations
    int64_t cap;
  };
  const std::vector<Case> cases = {{0, 100000}, {738, 100000}, {737, 100000}, {0, 256},
                                   {0, 257},    {0, 300},      {993, 100000}, {1000, 100000}};
  // One block of the fused kernel, and about a hundred (the grid barrier between them); the
  // host backends need only the first.
  const std::vector<int64_t> sizes =
      IsCuda() ? std::vector<int64_t>{3000, 400001} : std::vector<int64_t>{3000};
  // Over two devices the kernels agree on every iteration's flag (block 0's exchange); the
  // deciding element sits on the second device's chunk, so the first device's own vote is wrong
  // at the last iteration unless the agreement reaches it.
  for (const int64_t n : sizes) {
    for (const v1::IndexMap& map : {Split(1, 0, n, {dev(0)}), Split(1, 0, n, {dev(0), dev(1)})}) {
      for (const Case& c : cases) {
        SCOPED_TRACE(absl::StrCat("n ", n, ", devices ", DeviceCount(map), ", offset ", c.offset,
                                  ", cap ", c.cap));
        std::vector<float> a = RandomSmallIntegers(n, rng);
        for (float& x : a) x += c.offset;
        a[n / 2 + 1] = 6 + c.offset;
        std::vector<float> expected = a;
        const int64_t iterations = SeedLoopOnHost(expected, 1000, c.cap);
        for (const Client* daemon : daemons) {
          auto input = daemon->Upload<float>(a, {n}, ArrayOpts(map));
          ASSERT_TRUE(input.ok()) << input.status();
          auto run = daemon->RunGraph(SeedLoop(1000, c.cap), {{"a", &*input}});
          ASSERT_TRUE(run.ok()) << run.status();
          EXPECT_EQ(run->iterations, iterations);
          EXPECT_EQ(run->hit_iteration_cap, iterations == c.cap);
          EXPECT_EQ(run->fused_loops, FusedLoopsExpected(map));
          auto got = run->outputs.at("a").Download<float>();
          ASSERT_TRUE(got.ok()) << got.status();
          EXPECT_EQ(*got, expected);
        }
      }
    }
  }
}

DISTARRAY_INSTANTIATE_BACKENDS(GraphTest);

}  // namespace
}  // namespace distarray::testing
