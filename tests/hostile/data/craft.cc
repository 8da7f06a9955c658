// Writes the crafted inputs of the hostile-data battery into one folder (argv[1]): small text
// files, caches whose checksums are valid but whose contents are not, IDX headers and model
// files with hostile header fields. Nothing big is committed; everything is made here.
//
// Model files are written byte by byte from the layout in <corral/model_file.h> (with its own
// FNV-1a), not through SaveModel: the point is to write what SaveModel never would.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <corral/cache.h>
#include <corral/dataset.h>

namespace {

std::string dir;

void Write(const std::string& name, const std::string& bytes) {
  std::ofstream out(dir + "/" + name, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "craft: cannot write %s/%s\n", dir.c_str(), name.c_str());
    std::exit(1);
  }
}

std::string BigEndian(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

template <typename T>
std::string Bytes(T v) {
  return std::string(reinterpret_cast<const char*>(&v), sizeof v);
}

// magic, version 1, header length, JSON header, parameter count, parameters, FNV-1a.
void Model(const std::string& name, const std::string& header, std::uint64_t count) {
  std::string bytes = "CORRALM\n" + Bytes<std::uint32_t>(1) +
                      Bytes(static_cast<std::uint32_t>(header.size())) + header + Bytes(count);
  for (std::uint64_t i = 0; i < count; ++i) bytes += Bytes(0.25f);
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  Write(name, bytes + Bytes(hash));
}

// A header with every field the reader asks for; `extra` holds all but kind, l2, mean and
// num_features.
std::string Header(const std::string& kind, const std::string& num_features,
                   const std::string& extra = R"("classes":[],"hidden":[],"rank":0,"users":0,"items":0,"user_ids":[],"item_ids":[])") {
  return R"({"kind":")" + kind + R"(","l2":0.0,"mean":0.0,"num_features":)" + num_features +
         "," + extra + "}";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: craft DIR\n");
    return 2;
  }
  dir = argv[1];
  std::filesystem::create_directories(dir);
  // Text: four rows of three numbers; a LIBSVM set of three classes; garbage that used to pass.
  Write("four_rows.csv", "1,0.5,2\n0,1,1\n1,3,0.25\n0,2,2\n");
  Write("four_rows.svm", "0 1:0.5 2:1\n1 1:1 3:2\n2 2:0.5\n1 3:1\n");
  Write("labels_only.svm", "+1\n-1\n+1\n");
  Write("one_column.csv", "1\n0\n1\n");
  Write("five_columns.csv", "1,1,2,3,4\n0,4,3,2,1\n");
  Write("bom.data", "\xEF\xBB\xBF" "1 2 5\n3 4 4\n");
  Write("typo.data", "l 2 5\n3 4 4\n");
  Write("looks_like_ratings.svm", "1 1 2\n2 3 4\n");
  Write("nan_label.svm", "+1 1:1\nnan 1:1\n");
  Write("inf_value.csv", "1,2,3\n1,inf,2\n");
  Write("nan_rating.data", "1 2 5\n1 3 nan\n");
  Write("ratings.data", "1 1 5\n1 2 3\n2 1 4\n2 2 1\n");
  // One row of 140,000 values: past what an int32 sum of 8-bit x 8-bit products holds.
  std::string wide = "1";
  for (int k = 1; k <= 140'000; ++k) {
    wide.push_back(' ');  // not " " + ...: a false -Wrestrict in GCC 12 at -O3
    wide.append(std::to_string(k));
    wide.append(":1");
  }
  Write("wide_row.svm", wide + "\n-1 1:1\n");

  // Caches with a valid checksum: written by WriteCache from arrays no reader would produce.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  corral::WriteCache(corral::Dataset({0, 1, 2}, {0, 0}, {1, 1}, {1, nan}, 1), dir + "/nan_label.cache");
  corral::WriteCache(corral::Dataset({0, 1, 2}, {0, 0}, {1, inf}, {1, -1}, 1), dir + "/inf_value.cache");
  corral::WriteCache(corral::Dataset::Dense({}, {}, std::size_t{1} << 28), dir + "/empty_dense.cache");

  // IDX: a header of a million images of 0 x 28 pixels, and a labels header to match; a valid
  // set of two 2 x 2 images.
  Write("zero-images-idx3-ubyte", std::string("\0\0\x08\x03", 4) + BigEndian(1'000'000) +
                                      BigEndian(0) + BigEndian(28));
  Write("zero-labels-idx1-ubyte", std::string("\0\0\x08\x01", 4) + BigEndian(1'000'000));
  Write("tiny-images-idx3-ubyte", std::string("\0\0\x08\x03", 4) + BigEndian(2) + BigEndian(2) +
                                      BigEndian(2) + std::string(8, '\x80'));
  Write("tiny-labels-idx1-ubyte", std::string("\0\0\x08\x01", 4) + BigEndian(2) + std::string("\0\1", 2));

  // Model files: hostile num_features, an mlp too wide to build, an mf id list shorter than its
  // user count, and a valid 3-feature logistic model; training states with a
  // hostile thread count and an unknown optimizer.
  Model("features_2p33.model", Header("logistic", "8589934592"), 1);
  Model("features_minus_1.model", Header("logistic", "-1"), 1);
  Model("features_1e300.model", Header("logistic", "1e300"), 1);
  Model("mlp_wide.model",
        Header("mlp", "4294967296", R"("classes":[0,1],"hidden":[4],"rank":0,"users":0,"items":0,"user_ids":[],"item_ids":[])"),
        1);
  Model("mf_short_ids.model",
        Header("mf", "0", R"("classes":[],"hidden":[],"rank":1,"users":2,"items":2,"user_ids":[1],"item_ids":[1,2])"),
        8);
  Model("logistic3.model", Header("logistic", "3"), 3);
  Model("threads_1e300.model",
        Header("logistic", "3", R"("classes":[],"hidden":[],"rank":0,"users":0,"items":0,"user_ids":[],"item_ids":[],)"
                                R"("training":{"algorithm":"hogwild","threads":1e300,"seed":1,"lr":0.5,"lr_decay":1,)"
                                R"("batch":1,"epochs_done":0,"position":[],"train_s":0,"samples":0})"),
        3);
  Model("optimizer_unknown.model",
        Header("logistic", "3", R"("classes":[],"hidden":[],"rank":0,"users":0,"items":0,"user_ids":[],"item_ids":[],)"
                                R"("training":{"algorithm":"hogwild","threads":1,"seed":1,"lr":0.5,"lr_decay":1,)"
                                R"("batch":1,"optimizer":"nesterov","epochs_done":0,"position":[],"train_s":0,"samples":0})"),
        3);
  return 0;
}
