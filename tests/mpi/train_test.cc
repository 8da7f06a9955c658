// Training across ranks (run by mpiexec -n 2, ctest label mpi): 2 ranks x 2 threads must be the
// same algorithm as 1 process x 4 threads, which the parameters show bit for bit (the issue's
// proof). Every rank trains across the ranks; rank 0 then trains alone with 4 threads and
// compares; every rank also checks it holds rank 0's parameters and history.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cctype>
#include <cstring>
#include <fstream>
#include <map>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <corral/cache.h>
#include <corral/cluster.h>
#include <corral/error.h>
#include <corral/kinds.h>
#include <corral/load.h>
#include <corral/model_file.h>
#include <corral/synthetic.h>
#include <corral/train.h>
#include <corral/write.h>

#include "data/src/cache_format.h"
#include "data/src/cache_rows.h"
#include "data/src/cache_seal.h"
#include "engine/src/cluster/mpi_cluster.h"
#include "engine/src/cluster/rank_data.h"

namespace corral {
namespace {

Cluster* the_cluster = nullptr;  // set by main, every test's ranks

struct Case {
  std::string name;
  Algorithm algorithm;
  ModelKind model = ModelKind::kLogistic;
  bool dense = false;
  int batch = 1;
  int gossip_every = 1;
  std::string topology = "ring";
  std::string compress;  // "": the algorithm's default
  AllReduce allreduce = AllReduce::kGather;  // sync, qsgd
  std::vector<int> hidden = {8};             // mlp
};

std::string CaseName(const testing::TestParamInfo<Case>& info) { return info.param.name; }

const SyntheticSplit& Data(bool dense) {
  static const SyntheticSplit sparse = MakeSyntheticClassification(
      {.rows = 1'000, .features = 300, .nnz_per_row = 10, .seed = 7}, 200);
  static const SyntheticSplit dense_set = MakeSyntheticClassification(
      {.rows = 600, .features = 16, .seed = 8, .dense = true}, 100);
  return dense ? dense_set : sparse;
}

TrainConfig ConfigOf(const Case& c, int threads) {
  return {.algorithm = c.algorithm, .model = c.model, .threads = threads, .epochs = 2,
          .batch = c.batch, .hidden = c.hidden, .lr = 0.05f, .pin = Pin::kNone,
          .compress = c.compress, .topology = c.topology, .gossip_every = c.gossip_every,
          .allreduce = c.allreduce};
}

// Rank 0's bytes, on every rank.
std::vector<float> FromRankZero(std::vector<float> v) {
  the_cluster->Broadcast(std::as_writable_bytes(std::span(v)));
  return v;
}
double FromRankZeroD(double v) {
  the_cluster->Broadcast(std::as_writable_bytes(std::span(&v, 1)));
  return v;
}

class AcrossRanks : public testing::TestWithParam<Case> {};

TEST_P(AcrossRanks, TwoRanksOfTwoThreadsEqualOneProcessOfFour) {
  const Case& c = GetParam();
  const SyntheticSplit& data = Data(c.dense);
  ASSERT_EQ(the_cluster->ranks(), 2);
  const TrainResult across = Train(data.train, &data.test, ConfigOf(c, 2), {}, *the_cluster);
  EXPECT_EQ(across.threads, 4);
  ASSERT_EQ(across.history.size(), 2u);
  // Every rank holds the same model and the same evaluation (all ranks' samples counted).
  const std::vector<float> zero = FromRankZero(across.params);
  EXPECT_EQ(0, std::memcmp(zero.data(), across.params.data(), zero.size() * sizeof(float)));
  if (the_cluster->rank() != 0) return;
  const TrainResult alone = Train(data.train, &data.test, ConfigOf(c, 4));
  ASSERT_EQ(alone.params.size(), across.params.size());
  EXPECT_EQ(0, std::memcmp(alone.params.data(), across.params.data(),
                           alone.params.size() * sizeof(float)))
      << c.name << ": 2 ranks x 2 threads differ from 1 process x 4 threads";
  EXPECT_EQ(alone.samples, across.samples);
  // Each rank evaluates its own rows and the sums are added across ranks: the same objective
  // up to the order of the additions; accuracies (ratios of counts) exactly.
  const EvalPoint& one = alone.history.back();
  const EvalPoint& two = across.history.back();
  EXPECT_NEAR(one.objective, two.objective, 1e-12 * std::abs(one.objective));
  EXPECT_EQ(one.train_acc, two.train_acc);
  EXPECT_EQ(one.test_acc, two.test_acc);
  EXPECT_EQ(one.test_auc, two.test_auc);
  EXPECT_EQ(alone.history.back().step, across.history.back().step);
  if (alone.history.back().consensus) {
    EXPECT_EQ(*alone.history.back().consensus, *across.history.back().consensus);
  }
  EXPECT_EQ(alone.bytes_sent, across.bytes_sent);
  EXPECT_EQ(alone.bytes_sent_max, across.bytes_sent_max);
}

INSTANTIATE_TEST_SUITE_P(
    Modes, AcrossRanks,
    testing::Values(Case{.name = "sync", .algorithm = Algorithm::kSync, .batch = 4},
                    Case{.name = "sync_mlp", .algorithm = Algorithm::kSync, .model = ModelKind::kMlp,
                         .dense = true, .batch = 4},
                    Case{.name = "qsgd", .algorithm = Algorithm::kQsgd, .batch = 4},
                    Case{.name = "sync_mlp_ring", .algorithm = Algorithm::kSync,
                         .model = ModelKind::kMlp, .dense = true, .batch = 4,
                         .allreduce = AllReduce::kRing},
                    Case{.name = "qsgd_mlp_ring", .algorithm = Algorithm::kQsgd,
                         .model = ModelKind::kMlp, .dense = true, .batch = 4,
                         .allreduce = AllReduce::kRing},
                    // 26,602 parameters: 4 chunks of the ring's 8192 floats, in flight together
                    Case{.name = "sync_mlp_ring_chunks", .algorithm = Algorithm::kSync,
                         .model = ModelKind::kMlp, .dense = true, .batch = 4,
                         .allreduce = AllReduce::kRing, .hidden = {1400}},
                    Case{.name = "sync_ring_sparse_gathers", .algorithm = Algorithm::kSync,
                         .batch = 4, .allreduce = AllReduce::kRing},
                    Case{.name = "dpsgd", .algorithm = Algorithm::kDpsgd},
                    Case{.name = "dpsgd_complete_batch", .algorithm = Algorithm::kDpsgd, .batch = 3,
                         .gossip_every = 2, .topology = "complete"},
                    Case{.name = "local", .algorithm = Algorithm::kLocal, .gossip_every = 4},
                    Case{.name = "dcd", .algorithm = Algorithm::kDcd},
                    Case{.name = "ecd", .algorithm = Algorithm::kEcd},
                    Case{.name = "ecd_local_steps", .algorithm = Algorithm::kEcd, .gossip_every = 3},
                    Case{.name = "choco", .algorithm = Algorithm::kChoco, .compress = "topk:0.1"}),
    CaseName);

// hogwild++ is asynchronous (its ring's messages meet the groups' steps wherever they are), so
// no bits to compare: one group per rank on a token ring across the ranks must reach the
// objective of the same groups (2 of 2 threads) in one process, within 1%, once both have
// converged (20 epochs; at 4, the slower turns of the ring across ranks still show, ~2%). A
// short hold (--gossip-every 8) makes the token go round as often as the ranks let it.
TEST(HogwildPPAcrossRanks, ConvergesAsOneProcessDoes) {
  const SyntheticSplit& data = Data(false);
  TrainConfig config = ConfigOf(Case{.name = "", .algorithm = Algorithm::kHogwildPP}, 2);
  config.epochs = 20;
  config.lr = 0.3f;
  config.group_size = 2;
  config.gossip_every = 8;
  const TrainResult across = Train(data.train, nullptr, config, {}, *the_cluster);
  EXPECT_EQ(across.threads, 4);
  ASSERT_EQ(across.history.size(), 20u);
  ASSERT_TRUE(across.history.back().consensus.has_value());
  EXPECT_GT(*across.history.back().consensus, 0.0);  // the ranks' replicas differ: two groups
  EXPECT_GT(across.bytes_sent, 0u);                  // and the ring carried messages
  const std::vector<float> zero = FromRankZero(across.params);
  EXPECT_EQ(0, std::memcmp(zero.data(), across.params.data(), zero.size() * sizeof(float)));
  if (the_cluster->rank() != 0) return;
  config.threads = 4;
  const TrainResult alone = Train(data.train, nullptr, config);
  const double one = alone.history.back().objective;
  const double two = across.history.back().objective;
  EXPECT_LE(std::abs(two - one), 0.01 * one)
      << "hogwild++: 2 ranks x 2 threads reach " << two << ", 1 process x 4 threads " << one;
}

TEST(AcrossRanksRefusals, OtherModesAreRefusedNamingAlgo) {
  const SyntheticSplit& data = Data(false);
  TrainConfig config = ConfigOf(Case{.name = "", .algorithm = Algorithm::kHogwild}, 2);
  try {
    Train(data.train, nullptr, config, {}, *the_cluster);
    ADD_FAILURE() << "hogwild ran across ranks";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadConfig);
    EXPECT_NE(std::string(e.what()).find("--algo hogwild"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("dpsgd"), std::string::npos) << e.what();
  }
  config = ConfigOf(Case{.name = "", .algorithm = Algorithm::kDpsgd}, 0);
  EXPECT_THROW(Train(data.train, nullptr, config, {}, *the_cluster), Error);  // --threads 0
}

// Reading by rank (engine/src/cluster/rank_data.h): a file rank 0 writes, with comment and
// blank lines between rows, that every rank then reads.
std::string SharedPath(const std::string& name) {
  std::int64_t id = the_cluster->rank() == 0 ? static_cast<std::int64_t>(::getpid()) : 0;
  the_cluster->Broadcast(std::as_writable_bytes(std::span(&id, 1)));
  return testing::TempDir() + "corral_rank_rows_" + std::to_string(id) + "_" + name;
}

void WriteWithComments(const Dataset& data, const std::string& path) {
  std::ofstream out(path);
  out << "# a LIBSVM file with comments\n\n";
  for (std::size_t r = 0; r < data.rows(); ++r) {
    out << data.Label(r);
    const SparseRow row = data.Row(r);
    for (std::size_t k = 0; k < row.nnz(); ++k) {
      char value[32];
      std::snprintf(value, sizeof(value), "%.9g", static_cast<double>(row.value[k]));
      out << ' ' << row.index[k] + 1 << ':' << value;
    }
    out << (r % 7 == 3 ? "  # a trailing comment\n" : "\n");
    if (r % 11 == 5) out << "\n   \n# between rows\n";
  }
}

// Each rank holds exactly its workers' rows of the whole file (RankPartOf), row for row the
// whole file's, with the whole file's dimension: LIBSVM (cut at line boundaries) and the cache.
TEST(RankData, EachRankReadsOnlyItsOwnRows) {
  const SyntheticSplit& data = Data(false);
  const std::string svm = SharedPath("rows.svm"), cache = SharedPath("rows.cache");
  if (the_cluster->rank() == 0) {
    WriteWithComments(data.train, svm);
    WriteCache(LoadDataset(svm), cache);
  }
  the_cluster->Barrier();
  const Dataset whole = LoadDataset(svm);
  ASSERT_EQ(whole.rows(), data.train.rows());
  // The cache, and the text parsed in one piece and in pieces of 64 bytes (shorter than some
  // of its lines).
  for (const auto& [path, piece] : {std::pair{cache, internal::kRankPieceBytes},
                                    std::pair{svm, internal::kRankPieceBytes},
                                    std::pair{svm, std::size_t{64}}}) {
    const std::optional<internal::RankRows> mine =
        internal::LoadRankRows(path, {}, *the_cluster, piece);
    ASSERT_TRUE(mine.has_value()) << path;
    const RankPart expected = RankPartOf(whole.rows(), the_cluster->rank(), the_cluster->ranks());
    EXPECT_EQ(mine->part.first, expected.first) << path;
    EXPECT_EQ(mine->part.count, expected.count) << path;
    EXPECT_EQ(mine->part.total, whole.rows()) << path;
    ASSERT_EQ(mine->mine.rows(), expected.count) << path;
    EXPECT_LT(mine->mine.rows(), whole.rows()) << path;
    EXPECT_EQ(mine->mine.num_features(), whole.num_features()) << path;
    for (std::size_t r = 0; r < mine->mine.rows(); ++r) {
      const SparseRow got = mine->mine.Row(r), want = whole.Row(expected.first + r);
      ASSERT_EQ(mine->mine.Label(r), whole.Label(expected.first + r)) << path << " row " << r;
      ASSERT_TRUE(std::ranges::equal(got.index, want.index) &&
                  std::ranges::equal(got.value, want.value))
          << path << " row " << r;
    }
  }
  // Formats not read by range say so (the caller reads them whole).
  const std::string csv = SharedPath("rows.csv");
  if (the_cluster->rank() == 0) WriteCsv(data.test, csv);
  the_cluster->Barrier();
  EXPECT_FALSE(internal::LoadRankRows(csv, {}, *the_cluster).has_value());
  the_cluster->Barrier();
  if (the_cluster->rank() == 0) {
    for (const std::string& path : {svm, cache, csv}) std::remove(path.c_str());
  }
}

// The resident bytes of this process's mapping of `path` (/proc/self/smaps: its Rss lines).
std::size_t MappedResidentBytes(const std::string& path) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in = false;
  std::size_t kb = 0;
  while (std::getline(smaps, line)) {
    if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) &&
        line.find('-') != std::string::npos && line.find(' ') != std::string::npos) {
      in = line.ends_with(" " + path);  // a mapping's first line ends with its file
    } else if (in && line.starts_with("Rss:")) {
      kb += std::stoul(line.substr(4));
    }
  }
  return kb * 1024;
}

// A rank reading a cache keeps its rows' pages, not the file's: the checksum still covers
// every block (a flipped byte in another rank's rows fails on every rank), but each block's
// pages are released once hashed (data/src/cache_rows.h). The control: a whole load keeps
// them all resident, so the measure sees the mapping.
TEST(RankData, ACacheRankKeepsOnlyItsRowsPagesAndChecksTheWholeFile) {
  const std::string cache = SharedPath("resident.cache"), bad = SharedPath("flipped.cache");
  if (the_cluster->rank() == 0) {
    WriteCache(MakeSyntheticClassification(
                   {.rows = 120'000, .features = 5'000, .nnz_per_row = 20, .seed = 3}, 0)
                   .train,
               cache);
  }
  the_cluster->Barrier();
  std::ifstream in(cache, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  {
    const std::optional<internal::RankRows> mine = internal::LoadRankRows(cache, {}, *the_cluster);
    ASSERT_TRUE(mine.has_value());
    ASSERT_EQ(mine->part.total, 120'000u);
    double sum = 0;  // the rows are read (and so mapped again) here
    for (std::size_t r = 0; r < mine->mine.rows(); ++r) {
      for (const float v : mine->mine.Row(r).value) sum += v;
    }
    const std::size_t resident = MappedResidentBytes(cache);
    const double share = static_cast<double>(mine->part.count) / 120'000.0;
    // The kernel maps a page cache's large folio whole on a fault: ~1-2 MB past a range's ends.
    EXPECT_LT(static_cast<double>(resident), (share + 0.25) * static_cast<double>(bytes.size()))
        << "rank " << the_cluster->rank() << " holds " << resident << " bytes of the "
        << bytes.size() << "-byte cache for its " << mine->part.count << " rows (sum " << sum << ")";
  }
  {
    const Dataset whole = LoadDataset(cache);
    EXPECT_GT(static_cast<double>(MappedResidentBytes(cache)),
              0.95 * static_cast<double>(bytes.size()));
  }
  // A byte flipped at the file's end (the last rank's labels), then one in the row offsets of
  // the first rows: every rank finds the checksum wrong, whichever rows it reads.
  for (const std::size_t at : {bytes.size() - 1, std::size_t{300}}) {
    the_cluster->Barrier();
    if (the_cluster->rank() == 0) {
      std::string flipped = bytes;
      flipped[at] = static_cast<char>(flipped[at] ^ 0x10);
      std::ofstream(bad, std::ios::binary) << flipped;
    }
    the_cluster->Barrier();
    try {
      internal::LoadRankRows(bad, {}, *the_cluster);
      ADD_FAILURE() << "no error for a byte flipped at " << at;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("checksum mismatch"), std::string::npos) << e.what();
    }
  }
  the_cluster->Barrier();
  if (the_cluster->rank() == 0) {
    std::remove(cache.c_str());
    std::remove(bad.c_str());
  }
}

// A range of a cache's rows (ReadCacheRows) is the whole read's view of those rows, sparse and
// dense, for empty, whole and inner ranges; a range past the rows is refused; a forged cache
// (its checksum resealed) with a bad index in the range is refused naming where the range
// starts, and read when the bad row is outside it (the rows a rank never reads).
TEST(RankData, ACacheRangeIsTheWholeReadsRows) {
  const std::string path = testing::TempDir() + "corral_cache_range_" +
                           std::to_string(::getpid()) + ".cache";
  for (const bool dense : {false, true}) {
    WriteCache(Data(dense).train, path);
    const Dataset whole = ReadCache(path);
    const std::size_t n = whole.rows();
    for (const auto& [first, count] : {std::pair<std::size_t, std::size_t>{0, 0}, {0, n},
                                       {n / 3, n / 2}, {n - 1, 1}, {n, 0}}) {
      const detail::CacheRows got =
          detail::ReadCacheRows(path, [&](std::size_t) { return detail::RowRange{first, count}; });
      const Dataset want = whole.Rows(first, first + count);
      EXPECT_EQ(got.total, n);
      ASSERT_EQ(got.rows.rows(), count) << first;
      EXPECT_EQ(got.rows.is_dense(), dense);
      EXPECT_TRUE(std::ranges::equal(got.rows.row_ptr(), want.row_ptr()) &&
                  std::ranges::equal(got.rows.index(), want.index()) &&
                  std::ranges::equal(got.rows.value(), want.value()) &&
                  std::ranges::equal(got.rows.labels(), want.labels()))
          << "dense " << dense << " rows [" << first << ", +" << count << ")";
    }
    try {
      detail::ReadCacheRows(path, [&](std::size_t) { return detail::RowRange{n - 1, 2}; });
      ADD_FAILURE() << "a range past the rows was read";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadConfig) << e.what();
    }
  }
  // Row n - 50's first index set past the features, the checksum resealed.
  WriteCache(Data(false).train, path);
  const std::size_t n = Data(false).train.rows(), bad = n - 50;
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  const auto row_ptr_at = detail::cache::Get<std::uint64_t>(bytes, detail::cache::kSectionsAt);
  const auto index_at =
      detail::cache::Get<std::uint64_t>(bytes, detail::cache::kSectionsAt + 16 * detail::cache::kIndex);
  const auto k = detail::cache::Get<std::uint64_t>(bytes, row_ptr_at + 8 * bad);
  const std::uint32_t past = 1'000'000;
  std::memcpy(bytes.data() + index_at + 4 * k, &past, sizeof past);
  detail::SealCache(bytes);
  std::ofstream(path, std::ios::binary) << bytes;
  const auto read = [&](std::size_t first, std::size_t count) {
    return detail::ReadCacheRows(path, [&](std::size_t) { return detail::RowRange{first, count}; });
  };
  EXPECT_EQ(read(0, bad).rows.rows(), bad);
  try {
    read(bad - 100, 150);
    ADD_FAILURE() << "a bad index in the range was read";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("row 100 has feature index 1000000"), std::string::npos) << what;
    EXPECT_NE(what.find("counted from row " + std::to_string(bad - 100) + " of the file"),
              std::string::npos)
        << what;
  }
  std::remove(path.c_str());
}

// A file one rank cannot read fails on every rank, that rank with its own error.
TEST(RankData, AFileMissingOnOneRankFailsOnEvery) {
  const std::string path = SharedPath("missing_on_rank_1.svm");
  if (the_cluster->rank() == 0) WriteLibsvm(Data(false).test, path);
  the_cluster->Barrier();
  const std::string mine = the_cluster->rank() == 0 ? path : path + ".absent";
  try {
    internal::LoadRankRows(mine, {}, *the_cluster);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(the_cluster->rank() == 0 ? "another rank" : ".absent"),
              std::string::npos)
        << e.what();
  }
  the_cluster->Barrier();
  if (the_cluster->rank() == 0) std::remove(path.c_str());
}

// Training on the rows each rank read (no rank holds the set) is the run of one process with
// 4 threads on the whole file, bit for bit: also without --lr (the step-size search gathers
// its sample's rows from the ranks that hold them), and for softmax (the classes, the feature
// counts of the sparse L2 weights and the rows are added across ranks). Evaluation sums the
// ranks' parts: the same objective and accuracy on every rank.
TEST(RankData, TrainingOnRankRowsIsOneProcessOnTheWholeFile) {
  const SyntheticSplit multi = MakeSyntheticClassification(
      {.rows = 900, .features = 200, .nnz_per_row = 8, .seed = 11, .classes = 3}, 150);
  const std::string binary = SharedPath("train2.svm"), three = SharedPath("train3.svm");
  if (the_cluster->rank() == 0) {
    WriteWithComments(Data(false).train, binary);
    WriteWithComments(multi.train, three);
  }
  the_cluster->Barrier();
  struct Run {
    std::string path;
    Case c;
    float lr;
  };
  const Case sync{.name = "sync", .algorithm = Algorithm::kSync, .batch = 4};
  const Case dpsgd{.name = "dpsgd", .algorithm = Algorithm::kDpsgd};
  const Case softmax{.name = "softmax", .algorithm = Algorithm::kDpsgd,
                     .model = ModelKind::kSoftmax};
  for (const Run& run : {Run{binary, sync, 0.0f}, Run{binary, dpsgd, 0.0f},
                         Run{binary, dpsgd, 0.05f}, Run{three, softmax, 0.0f}}) {
    TrainConfig across_config = ConfigOf(run.c, 2), alone_config = ConfigOf(run.c, 4);
    across_config.lr = alone_config.lr = run.lr;
    const std::optional<internal::RankRows> mine =
        internal::LoadRankRows(run.path, {}, *the_cluster);
    ASSERT_TRUE(mine.has_value());
    const TrainResult across =
        Train(mine->mine, mine->part, nullptr, across_config, {}, *the_cluster);
    const std::vector<float> zero = FromRankZero(across.params);
    EXPECT_EQ(0, std::memcmp(zero.data(), across.params.data(), zero.size() * sizeof(float)));
    EXPECT_EQ(FromRankZeroD(across.history.back().objective), across.history.back().objective)
        << "every rank reports the same objective";
    if (the_cluster->rank() != 0) continue;
    const TrainResult alone = Train(LoadDataset(run.path), nullptr, alone_config);
    ASSERT_EQ(alone.params.size(), across.params.size()) << run.c.name;
    EXPECT_EQ(alone.lr, across.lr) << run.c.name;
    EXPECT_EQ(0, std::memcmp(alone.params.data(), across.params.data(),
                             alone.params.size() * sizeof(float)))
        << run.c.name << " (lr " << run.lr << "): 2 ranks reading their rows differ from 1 process";
    EXPECT_NEAR(alone.history.back().objective, across.history.back().objective,
                1e-12 * std::abs(alone.history.back().objective));
    EXPECT_EQ(alone.history.back().train_acc, across.history.back().train_acc);
  }
  the_cluster->Barrier();
  if (the_cluster->rank() == 0) {
    std::remove(binary.c_str());
    std::remove(three.c_str());
  }
}


// Checkpoints across ranks: 2 ranks x 1 thread stopped after epoch 1 (--checkpoint-every 1, the
// file rank 0 writes) and resumed for epoch 2 end where the uninterrupted run does, bit for bit;
// the file is the one 1 process x 2 threads writes (the same parameters and every worker's
// state under the same names), and that process resuming its own file ends there too.
class CheckpointAcrossRanks : public testing::TestWithParam<Case> {};

TEST_P(CheckpointAcrossRanks, HalfAndResumeIsTheWholeRunAndOneProcesssFile) {
  const Case& c = GetParam();
  const SyntheticSplit& data = Data(c.dense);
  const std::string across_file = SharedPath(c.name + "_across.ckpt");
  const std::string alone_file = SharedPath(c.name + "_alone.ckpt");
  TrainConfig half = ConfigOf(c, 1);
  half.epochs = 1;
  half.checkpoint_path = across_file;
  half.checkpoint_every = 1;
  const TrainResult first = Train(data.train, nullptr, half, {}, *the_cluster);
  the_cluster->Barrier();
  TrainConfig rest = ConfigOf(c, 1);
  rest.resume_path = across_file;
  const TrainResult resumed = Train(data.train, nullptr, rest, {}, *the_cluster);
  const TrainResult whole = Train(data.train, nullptr, ConfigOf(c, 1), {}, *the_cluster);
  ASSERT_EQ(resumed.params.size(), whole.params.size());
  EXPECT_EQ(0, std::memcmp(resumed.params.data(), whole.params.data(),
                           whole.params.size() * sizeof(float)))
      << c.name << ": 2 x 1, half + resume differs from the whole run";
  EXPECT_EQ(first.samples + resumed.samples, whole.samples);
  if (the_cluster->rank() == 0) {
    TrainConfig alone_half = ConfigOf(c, 2);
    alone_half.epochs = 1;
    alone_half.checkpoint_path = alone_file;
    alone_half.checkpoint_every = 1;
    Train(data.train, nullptr, alone_half);
    const SavedModel two = LoadModel(across_file), one = LoadModel(alone_file);
    ASSERT_TRUE(two.training && one.training);
    EXPECT_EQ(two.params, one.params) << c.name;
    EXPECT_EQ(two.training->threads, 2);
    EXPECT_EQ(two.training->mode.arrays, one.training->mode.arrays) << c.name;
    // Each worker's clock counts its measured compute (virtual time without --link): not bits.
    const auto without_clocks = [](std::map<std::string, std::uint64_t> counters) {
      std::erase_if(counters, [](const auto& e) { return e.first.starts_with("clock/"); });
      return counters;
    };
    EXPECT_EQ(without_clocks(two.training->mode.counters),
              without_clocks(one.training->mode.counters))
        << c.name;
    if (c.algorithm != Algorithm::kSync) {  // sync keeps no state beyond the model
      EXPECT_TRUE(two.training->mode.counters.contains("clock/1")) << c.name;
    }
    EXPECT_EQ(two.training->position, one.training->position) << c.name;
    TrainConfig alone_rest = ConfigOf(c, 2);
    alone_rest.resume_path = alone_file;
    const TrainResult alone = Train(data.train, nullptr, alone_rest);
    EXPECT_EQ(0, std::memcmp(alone.params.data(), whole.params.data(),
                             whole.params.size() * sizeof(float)))
        << c.name << ": 1 x 2 resumed differs from 2 x 1";
    std::remove(across_file.c_str());
    std::remove(alone_file.c_str());
  }
  the_cluster->Barrier();
}

INSTANTIATE_TEST_SUITE_P(
    Modes, CheckpointAcrossRanks,
    testing::Values(Case{.name = "sync", .algorithm = Algorithm::kSync, .batch = 4},
                    Case{.name = "dpsgd", .algorithm = Algorithm::kDpsgd},
                    Case{.name = "local", .algorithm = Algorithm::kLocal, .gossip_every = 4},
                    Case{.name = "choco", .algorithm = Algorithm::kChoco, .compress = "topk:0.1"},
                    Case{.name = "dcd", .algorithm = Algorithm::kDcd},
                    Case{.name = "ecd_local_steps", .algorithm = Algorithm::kEcd, .gossip_every = 3}),
    CaseName);

// sync and qsgd with --link: the parameter server's virtual clock over every rank's workers.
// The links do not touch the parameters (the same bits as one process); every rank keeps the
// same clock (the costs travel with the gradients), and it is one process's clock: the links'
// latency dominates here, so the two agree to a few percent whatever the machine's load (the
// compute parts are thread CPU times of microseconds a step).
class LinkAcrossRanks : public testing::TestWithParam<Algorithm> {};

TEST_P(LinkAcrossRanks, IsOneProcessesParameterServerClock) {
  const Case c{.name = "link", .algorithm = GetParam(), .batch = 4, .topology = "star"};
  TrainConfig config = ConfigOf(c, 2);
  config.link = "latency=5ms,bandwidth=100Mbit";
  const TrainResult across = Train(Data(false).train, nullptr, config, {}, *the_cluster);
  const double clock = across.history.back().virtual_s;
  EXPECT_EQ(FromRankZeroD(clock), clock) << "rank " << the_cluster->rank() << "'s clock differs";
  if (the_cluster->rank() != 0) return;
  config.threads = 4;
  const TrainResult alone = Train(Data(false).train, nullptr, config);
  EXPECT_EQ(0, std::memcmp(alone.params.data(), across.params.data(),
                           alone.params.size() * sizeof(float)));
  // Each step: an upload (5 ms) then the model's broadcast (5 ms) at least.
  const double steps = static_cast<double>(alone.samples) / (4.0 * c.batch);
  EXPECT_GE(clock, steps * 0.010);
  EXPECT_NEAR(clock, alone.history.back().virtual_s, 0.05 * alone.history.back().virtual_s);
}

INSTANTIATE_TEST_SUITE_P(ParameterServer, LinkAcrossRanks,
                         testing::Values(Algorithm::kSync, Algorithm::kQsgd),
                         [](const testing::TestParamInfo<Algorithm>& p) {
                           return std::string(ToString(p.param));
                         });

// The setting a run reports for the reduction that ran across ranks ("" if none).
std::string AllReduceSetting(const TrainResult& r) {
  for (const ModeSetting& s : r.settings) {
    if (s.key == "allreduce") return std::get<std::string>(s.value);
  }
  return "";
}

// --allreduce ring with --link: the MLP's sum goes round the ring while the heads (stop flag,
// costs) are gathered, so every rank keeps one process's clock and bits; the run reports the
// ring. A sparse model asked for the ring gathers, and says so.
TEST(RingAcrossRanks, KeepsTheLinkClockAndReportsWhichReductionRan) {
  const Case c{.name = "ring_link", .algorithm = Algorithm::kSync, .model = ModelKind::kMlp,
               .dense = true, .batch = 4, .topology = "star", .allreduce = AllReduce::kRing};
  TrainConfig config = ConfigOf(c, 2);
  config.link = "latency=5ms,bandwidth=100Mbit";
  const TrainResult across = Train(Data(true).train, nullptr, config, {}, *the_cluster);
  EXPECT_EQ(AllReduceSetting(across), "ring");
  const double clock = across.history.back().virtual_s;
  EXPECT_EQ(FromRankZeroD(clock), clock) << "rank " << the_cluster->rank() << "'s clock differs";

  TrainConfig sparse = ConfigOf({.name = "sparse", .algorithm = Algorithm::kSync, .batch = 4,
                                 .allreduce = AllReduce::kRing}, 2);
  const TrainResult gathered = Train(Data(false).train, nullptr, sparse, {}, *the_cluster);
  EXPECT_EQ(AllReduceSetting(gathered), "gather");
  EXPECT_TRUE(std::any_of(gathered.summary.begin(), gathered.summary.end(),
                          [](const auto& line) { return line.first == "allreduce"; }));
  if (the_cluster->rank() != 0) return;
  config.threads = 4;
  const TrainResult alone = Train(Data(true).train, nullptr, config);
  EXPECT_EQ(AllReduceSetting(alone), "");  // one process: no reduction across ranks
  EXPECT_EQ(0, std::memcmp(alone.params.data(), across.params.data(),
                           alone.params.size() * sizeof(float)));
  EXPECT_NEAR(clock, alone.history.back().virtual_s, 0.05 * alone.history.back().virtual_s);
}

TEST(RingAcrossRanks, AnUnknownReductionIsRefusedNamingTheFlag) {
  try {
    ParseAllReduce("tree");
    ADD_FAILURE() << "--allreduce tree was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadConfig);
    EXPECT_NE(std::string(e.what()).find("--allreduce"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ring"), std::string::npos) << e.what();
  }
}

// hogwild++'s checkpoint across ranks (2 ranks x 1 thread: one group per rank on the ring).
// The ranks race (when the token hops depends on when a message arrives), so a resumed run is
// not the uninterrupted one bit for bit, as hogwild++'s resume is not in one process: each
// reaches the objective of the other within the runs' spread (1%, as ConvergesAsOneProcessDoes
// judges, after 20 epochs). Exact: the file (rank 0's, written after every epoch: the ring
// brought to rest each time) holds both groups' replica and snapshot by their number on the
// ring and one token turn, its model is the replicas' mean, and resuming it without training
// gives back the same state, bit for bit.
TEST(HogwildPPCheckpointAcrossRanks, HoldsTheWholeRingAndResumes) {
  const SyntheticSplit& data = Data(false);
  const std::string path = SharedPath("hpp_ring.ckpt");
  TrainConfig config = ConfigOf(Case{.name = "", .algorithm = Algorithm::kHogwildPP}, 1);
  config.epochs = 20;
  config.lr = 0.3f;
  config.gossip_every = 8;
  TrainConfig half = config;
  half.epochs = 10;
  half.checkpoint_path = path;
  half.checkpoint_every = 1;
  const TrainResult first = Train(data.train, nullptr, half, {}, *the_cluster);
  ASSERT_GT(first.bytes_sent, 0u);  // the ring carried messages
  the_cluster->Barrier();
  const SavedModel saved = LoadModel(path);
  ASSERT_TRUE(saved.training.has_value());
  const ModeState& state = saved.training->mode;
  for (const char* name : {"ring/x/0", "ring/x/1", "ring/old/0", "ring/old/1"}) {
    ASSERT_TRUE(state.arrays.contains(name)) << name;
    EXPECT_EQ(state.arrays.at(name).size(), saved.params.size()) << name;
  }
  EXPECT_EQ(state.arrays.size(), 4u);
  EXPECT_EQ(state.counters.at("ring/ranks"), 2u);
  EXPECT_EQ(state.counters.at("ring/groups"), 1u);
  EXPECT_LT(state.counters.at("ring/token"), 2u);
  EXPECT_TRUE(state.counters.contains("hot_syncs/1"));
  EXPECT_NE(state.arrays.at("ring/x/0"), state.arrays.at("ring/x/1"));  // two groups
  const std::vector<float>& x0 = state.arrays.at("ring/x/0");
  const std::vector<float>& x1 = state.arrays.at("ring/x/1");
  for (std::size_t u = 0; u < saved.params.size(); ++u) {
    const double mean = 0.5 * (static_cast<double>(x0[u]) + x1[u]);
    ASSERT_EQ(saved.params[u], static_cast<float>(mean)) << "the replicas' mean, at " << u;
  }
  // Resumed to where it stopped: nothing trains, and the state is the file's.
  TrainConfig same = half;
  same.checkpoint_every = 0;
  same.checkpoint_path.clear();
  same.resume_path = path;
  const TrainResult reloaded = Train(data.train, nullptr, same, {}, *the_cluster);
  EXPECT_EQ(reloaded.samples, 0u);
  EXPECT_EQ(reloaded.state.mode.arrays, state.arrays);
  EXPECT_EQ(reloaded.state.mode.counters, state.counters);
  EXPECT_EQ(reloaded.params, saved.params);

  TrainConfig rest = config;
  rest.resume_path = path;
  const TrainResult resumed = Train(data.train, nullptr, rest, {}, *the_cluster);
  const TrainResult whole = Train(data.train, nullptr, config, {}, *the_cluster);
  EXPECT_EQ(first.samples + resumed.samples, whole.samples);
  ASSERT_EQ(resumed.history.back().epoch, 20);
  const double a = resumed.history.back().objective, b = whole.history.back().objective;
  EXPECT_LE(std::abs(a - b), 0.01 * b)
      << "hogwild++ 2 x 1: resumed after 10 of 20 epochs reaches " << a << ", uninterrupted " << b;
  if (the_cluster->rank() == 0) {
    std::printf("hogwild++ 2 x 1, objective after 20 epochs: resumed after 10 %.9g, "
                "uninterrupted %.9g\n", a, b);
  }
  the_cluster->Barrier();
  if (the_cluster->rank() == 0) std::remove(path.c_str());
}

// A hogwild++ checkpoint resumes only on the layout that wrote it, on every rank alike, naming
// the file and the layouts: 2 ranks of 2 groups (--group-size 1) under 2 ranks of 1 group (the
// same 4 workers), a file of 2 ranks in one process of 2 threads, and one process's file on 2
// ranks.
TEST(HogwildPPCheckpointAcrossRanks, AnotherLayoutIsRefusedNamingBoth) {
  const SyntheticSplit& data = Data(false);
  const std::string path = SharedPath("hpp_layout.ckpt");
  const std::string alone_path = SharedPath("hpp_alone.ckpt");
  // hogwild++ at `threads` a rank and --group-size `size`, across the ranks or in one process.
  const auto train = [&](int threads, int size, bool across, const std::string& resume,
                         const std::string& save) {
    TrainConfig config = ConfigOf(Case{.name = "", .algorithm = Algorithm::kHogwildPP}, threads);
    config.group_size = size;
    config.epochs = resume.empty() ? 1 : 2;
    config.resume_path = resume;
    config.checkpoint_path = save;
    config.checkpoint_every = save.empty() ? 0 : 1;
    if (across) return Train(data.train, nullptr, config, {}, *the_cluster);
    return Train(data.train, nullptr, config);
  };
  const auto refused = [&](int threads, int size, bool across, const std::string& resume,
                           const std::string& expected) {
    try {
      train(threads, size, across, resume, "");
      ADD_FAILURE() << "rank " << the_cluster->rank() << " resumed " << resume;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadConfig) << e.what();
      EXPECT_NE(std::string(e.what()).find(resume + ": cannot resume: the checkpoint was "
                                           "written with " + expected),
                std::string::npos)
          << e.what();
    }
  };
  train(2, 1, true, "", path);
  the_cluster->Barrier();
  refused(2, 0, true, path,
          "2 ranks of 2 hogwild++ groups each (this run: 2 ranks of 1 hogwild++ group each");
  train(1, 0, true, "", path);
  the_cluster->Barrier();
  if (the_cluster->rank() == 0) {
    refused(2, 1, false, path, "hogwild++ across ranks (this run: one process");
    train(2, 1, false, "", alone_path);
  }
  the_cluster->Barrier();
  refused(1, 0, true, alone_path,
          "hogwild++ in one process (this run: 2 ranks of 1 hogwild++ group each");
  the_cluster->Barrier();
  if (the_cluster->rank() == 0) {
    std::remove(path.c_str());
    std::remove(alone_path.c_str());
  }
}

// An entry of a worker beyond the run (only a damaged or edited file has one): one process's
// resume refuses it as an entry the run does not keep; across ranks no rank loads that worker's
// entries, and every rank must still refuse it, alike, rather than drop it.
TEST(CheckpointAcrossRanks, AnEntryOfAWorkerBeyondTheRunIsRefusedOnEveryRank) {
  const Case c{.name = "dpsgd_beyond", .algorithm = Algorithm::kDpsgd};
  const std::string path = SharedPath("beyond.ckpt");
  TrainConfig half = ConfigOf(c, 1);
  half.epochs = 1;
  half.checkpoint_path = path;
  half.checkpoint_every = 1;
  Train(Data(false).train, nullptr, half, {}, *the_cluster);
  the_cluster->Barrier();
  if (the_cluster->rank() == 0) {  // worker 1's replica copied to a worker 2 of a 2-worker run
    SavedModel saved = LoadModel(path);
    ASSERT_TRUE(saved.training.has_value());
    auto& arrays = saved.training->mode.arrays;
    ASSERT_TRUE(arrays.contains("x/1"));
    arrays["x/2"] = arrays.at("x/1");
    SaveModel(path, saved);
  }
  the_cluster->Barrier();
  TrainConfig rest = ConfigOf(c, 1);
  rest.resume_path = path;
  try {
    Train(Data(false).train, nullptr, rest, {}, *the_cluster);
    ADD_FAILURE() << "rank " << the_cluster->rank() << " resumed a file with a third worker";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("it holds the array 'x/2', which this run does not keep"),
              std::string::npos)
        << e.what();
  }
  the_cluster->Barrier();
  if (the_cluster->rank() == 0) std::remove(path.c_str());
}

}  // namespace
}  // namespace corral

int main(int argc, char** argv) {
  const std::unique_ptr<corral::Cluster> cluster = corral::internal::MakeMpiCluster(&argc, &argv);
  corral::the_cluster = cluster.get();
  ::testing::InitGoogleTest(&argc, argv);
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  std::vector<int> all(static_cast<std::size_t>(cluster->ranks()));
  cluster->AllGather(std::as_bytes(std::span(&failed, 1)), std::as_writable_bytes(std::span(all)));
  for (const int f : all) failed = std::max(failed, f);
  return failed;
}
