// data/hdf5_shard: NVIDIA-layout shards written and read back exactly, files written here with
// HDF5's own API in the layout of NVIDIA's scripts (other integer widths too) read, and every kind
// of damaged shard refused, naming the file and the dataset.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include <gtest/gtest.h>
#include <hdf5.h>

#include "data/hdf5_shard.h"
#include "data/vocab.h"
#include "refusal.h"
#include "scratch_folder.h"

namespace bertc::data {
namespace {

std::filesystem::path scratch(const std::string& name) { return testing::scratch_in("bertc-hdf5-shard-test", name); }

std::vector<Example> some_examples() {
  Example a;
  a.tokens = {2, 10, 11, 3, 12, 3};
  a.segment_ids = {0, 0, 0, 0, 1, 1};
  a.masked_positions = {1, 4};
  a.masked_labels = {20, 21};
  a.is_random_next = true;
  Example b;  // the longest: every position, no predictions
  b.tokens = {2, 5, 3, 6, 7, 8, 9, 3};
  b.segment_ids = {0, 0, 0, 1, 1, 1, 1, 1};
  return {a, b};
}

std::string refusal(const std::function<void()>& f) { return testing::refusal<DataError>(f); }

bool same(const Example& x, const Example& y) {
  return x.tokens == y.tokens && x.segment_ids == y.segment_ids && x.masked_positions == y.masked_positions &&
         x.masked_labels == y.masked_labels && x.is_random_next == y.is_random_next;
}

TEST(Hdf5Shard, RoundTripsExamples) {
  const auto path = scratch("round.hdf5");
  write_shard(path, some_examples(), 8, 3, 0);
  const ShardShape s = read_shard_shape(path);
  EXPECT_EQ(s.examples, 2);
  EXPECT_EQ(s.seq_len, 8);
  EXPECT_EQ(s.predictions, 3);
  const PackedExamples back = read_shard(path);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_TRUE(same(back[0], some_examples()[0]));
  EXPECT_TRUE(same(back[1], some_examples()[1]));
  EXPECT_FALSE(std::filesystem::exists(path.parent_path() / ".round.hdf5.tmp"));  // renamed into place
  EXPECT_TRUE(std::filesystem::exists(path.string() + ".xxh3"));                  // with its checksum
  EXPECT_NE(refusal([&] { write_shard(scratch("small.hdf5"), some_examples(), 7, 3, 0); }).find("more than the shard's 7"),
            std::string::npos);
}

// A 2-D dataset of `type` written with HDF5 directly.
void put(hid_t file, const char* name, hid_t type, hid_t memory, const void* data, std::vector<hsize_t> dims) {
  const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  const hid_t set = H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(H5Dwrite(set, memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), 0);
  H5Dclose(set);
  H5Sclose(space);
}

// One example in NVIDIA's layout: [CLS]=101 a b [SEP]=102 c [SEP], seq 8, 3 predictions ending
// at the first 0; input_ids as int64 (a reader converts any integer), the rest as NVIDIA's.
// `skip` leaves one dataset out; `float_mask` writes input_mask as floats.
std::filesystem::path nvidia_file(const std::string& name, const std::string& skip = "", bool float_mask = false) {
  const auto path = scratch(name);
  const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const int64_t ids[8] = {101, 7592, 2088, 102, 2003, 102, 0, 0};
  const int8_t mask[8] = {1, 1, 1, 1, 1, 1, 0, 0}, segments[8] = {0, 0, 0, 0, 1, 1, 0, 0}, nsp[1] = {0};
  const float fmask[8] = {1, 1, 1, 1, 1, 1, 0, 0};
  const int32_t positions[3] = {2, 0, 0}, labels[3] = {4248, 0, 0};
  if (skip != "input_ids") put(f, "input_ids", H5T_STD_I64LE, H5T_NATIVE_INT64, ids, {1, 8});
  if (float_mask) put(f, "input_mask", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, fmask, {1, 8});
  else put(f, "input_mask", H5T_STD_I8LE, H5T_NATIVE_INT8, mask, {1, 8});
  put(f, "segment_ids", H5T_STD_I8LE, H5T_NATIVE_INT8, segments, {1, 8});
  put(f, "masked_lm_positions", H5T_STD_I32LE, H5T_NATIVE_INT32, positions, {1, 3});
  if (skip != "masked_lm_ids") put(f, "masked_lm_ids", H5T_STD_I32LE, H5T_NATIVE_INT32, labels, {1, 3});
  put(f, "next_sentence_labels", H5T_STD_I8LE, H5T_NATIVE_INT8, nsp, {1});
  H5Fclose(f);
  return path;
}

TEST(Hdf5Shard, ReadsNvidiasLayout) {
  const PackedExamples e = read_shard(nvidia_file("nvidia.hdf5"));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].tokens, (std::vector<int64_t>{101, 7592, 2088, 102, 2003, 102}));
  EXPECT_EQ(e[0].segment_ids, (std::vector<int64_t>{0, 0, 0, 0, 1, 1}));
  EXPECT_EQ(e[0].masked_positions, std::vector<int64_t>{2});  // the positions end at the first 0
  EXPECT_EQ(e[0].masked_labels, std::vector<int64_t>{4248});
  EXPECT_FALSE(e[0].is_random_next);
}

// Rows of several examples (prepare-data with [train] packing = "pack"): recorded beside the
// examples, which read as any shard's; read back with their capacity; rows that name an example
// twice, leave one out or overfill a row refused as damaged.
TEST(Hdf5Shard, RecordsRowsOfSeveralExamples) {
  std::vector<Example> three = some_examples();
  three.push_back(some_examples()[0]);  // (6 + 8 + 6 tokens, 2 + 0 + 2 predictions)
  const RowPlan plan{{16, 4, 3}, {{0, 2}, {1}}};
  const auto path = scratch("rows-recorded.hdf5");
  write_shard(path, three, 16, 3, 0, std::nullopt, &plan);
  const ShardShape s = read_shard_shape(path);
  ASSERT_TRUE(s.rows.has_value());
  EXPECT_EQ(s.rows->count, 2);
  EXPECT_EQ(s.rows->capacity.tokens, 16);
  EXPECT_EQ(s.rows->capacity.predictions, 4);
  EXPECT_EQ(s.rows->capacity.examples, 3);
  RowPlan back;
  const PackedExamples examples = read_shard(path, &back);
  ASSERT_EQ(examples.size(), 3u);  // (the examples one a row, as NVIDIA's readers read them)
  EXPECT_TRUE(same(examples[1], three[1]));
  EXPECT_EQ(back.rows, plan.rows);
  EXPECT_EQ(back.capacity.examples, 3);
  // A shard without rows reads with none.
  write_shard(scratch("no-rows.hdf5"), three, 16, 3, 0);
  EXPECT_FALSE(read_shard_shape(scratch("no-rows.hdf5")).rows.has_value());
  read_shard(scratch("no-rows.hdf5"), &back);
  EXPECT_TRUE(back.rows.empty());
  // Damaged rows, written with HDF5 directly (as a shard from elsewhere: no checksum).
  auto damaged = [&](const std::string& name, std::vector<int32_t> slots, const std::string& what) {
    const auto p = scratch(name);
    write_shard(p, three, 16, 3, 0, std::nullopt, &plan);
    std::filesystem::remove(p.string() + ".xxh3");
    const hid_t f = H5Fopen(p.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    H5Ldelete(f, "example_rows", H5P_DEFAULT);
    put(f, "example_rows", H5T_STD_I32LE, H5T_NATIVE_INT32, slots.data(), {2, 3});
    H5Fclose(f);
    RowPlan rows;
    const std::string why = refusal([&] { read_shard(p, &rows); });
    EXPECT_NE(why.find("its rows of several examples are damaged (" + what), std::string::npos) << why;
  };
  damaged("rows-twice.hdf5", {0, 2, -1, 2, -1, -1}, "row 1 names example 2, which another row holds");
  damaged("rows-missing.hdf5", {0, 2, -1, -1, -1, -1}, "row 1 holds -1 in slot 0");
  damaged("rows-past.hdf5", {0, 1, 2, -1, -1, -1}, "row 0 takes 20 tokens and 4 predictions, past its 16 and 4");
}

TEST(Hdf5Shard, RefusesDamagedShardsNamingTheDataset) {
  auto says = [](const std::filesystem::path& p, const std::string& what) {
    const std::string why = refusal([&] { read_shard(p); });
    EXPECT_NE(why.find(p.string()), std::string::npos) << why;
    EXPECT_NE(why.find(what), std::string::npos) << why;
  };
  says(nvidia_file("no-ids.hdf5", "masked_lm_ids"), "has no dataset 'masked_lm_ids'");
  says(nvidia_file("float.hdf5", "", true), "dataset 'input_mask' does not hold integers");
  says(scratch("absent.hdf5"), "no such shard file");
  {
    std::ofstream(scratch("text.hdf5")) << "not a shard\n";
    says(scratch("text.hdf5"), "not an HDF5 file");
  }
  {  // the examples disagree: 2 rows of input_ids, 1 of the rest
    const auto path = scratch("rows.hdf5");
    write_shard(path, some_examples(), 8, 3, 0);
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    H5Ldelete(f, "next_sentence_labels", H5P_DEFAULT);
    const int8_t one[1] = {1};
    put(f, "next_sentence_labels", H5T_STD_I8LE, H5T_NATIVE_INT8, one, {1});
    H5Fclose(f);
    says(path, "does not match its checksum (rows.hdf5.xxh3)");  // bertc's shard, changed
    std::filesystem::remove(path.string() + ".xxh3");             // as a shard from elsewhere
    says(path, "dataset 'next_sentence_labels' is [1], which does not agree with input_ids [2, 8]");
  }
  {  // a next-sentence label other than 0 or 1 (a shard from elsewhere, made wrong)
    const auto path = scratch("label.hdf5");
    write_shard(path, some_examples(), 8, 3, 0);
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    H5Ldelete(f, "next_sentence_labels", H5P_DEFAULT);
    const int8_t labels[2] = {1, 2};
    put(f, "next_sentence_labels", H5T_STD_I8LE, H5T_NATIVE_INT8, labels, {2});
    H5Fclose(f);
    std::filesystem::remove(path.string() + ".xxh3");
    says(path, "example 1: next_sentence_labels holds 2, and a label is 0");
  }
  {  // an empty checksum file: said to be the damaged one, not its shard; removing it, as advised, reads
    const auto path = scratch("empty-sum.hdf5");
    write_shard(path, some_examples(), 8, 3, 0);
    std::ofstream(path.string() + ".xxh3", std::ios::trunc);
    EXPECT_NE(refusal([&] { read_shard(path); }).find(path.string() + ".xxh3: holds no checksum (it is empty)"),
              std::string::npos)
        << refusal([&] { read_shard(path); });
    std::filesystem::remove(path.string() + ".xxh3");
    EXPECT_EQ(read_shard(path).size(), 2u);
  }
  {  // a token id past what int32 holds (uint64 in the file): said as it is, not as int32's largest
    const auto path = nvidia_file("huge-id.hdf5", "input_ids");
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const uint64_t ids[8] = {101, 3000000000ull, 2088, 102, 2003, 102, 0, 0};
    put(f, "input_ids", H5T_STD_U64LE, H5T_NATIVE_UINT64, ids, {1, 8});
    H5Fclose(f);
    says(path, "dataset 'input_ids' holds 3000000000, past what bertc reads it as (-2147483648 to 2147483647)");
    EXPECT_EQ(refusal([&] { read_shard(path); }).find("2147483647 is not below"), std::string::npos);
    const auto wide = nvidia_file("wide-id.hdf5", "input_ids");  // (int64, as NVIDIA's scripts may write)
    const hid_t w = H5Fopen(wide.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const int64_t wide_ids[8] = {101, int64_t{1} << 40, 2088, 102, 2003, 102, 0, 0};
    put(w, "input_ids", H5T_STD_I64LE, H5T_NATIVE_INT64, wide_ids, {1, 8});
    H5Fclose(w);
    says(wide, "dataset 'input_ids' holds 1099511627776, past what bertc reads it as");
  }
  {  // an example whose input_mask marks no token: said so, not as a bad masked position
    const auto path = nvidia_file("no-tokens.hdf5");
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    H5Ldelete(f, "input_mask", H5P_DEFAULT);
    const int8_t zeros[8] = {};
    put(f, "input_mask", H5T_STD_I8LE, H5T_NATIVE_INT8, zeros, {1, 8});
    H5Fclose(f);
    says(path, "example 0: input_mask marks no token (all 0)");
  }
  {  // cut in half: the header may survive, the data does not
    const auto path = scratch("cut.hdf5");
    std::vector<Example> many;
    for (int i = 0; i < 2000; ++i) many.push_back(some_examples()[i % 2]);
    write_shard(path, many, 8, 3, 0);
    std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
    says(path, "does not match its checksum");
    std::filesystem::remove(path.string() + ".xxh3");  // (libhdf5's own checks, as for a shard from elsewhere)
    const std::string why = refusal([&] { read_shard(path); });
    EXPECT_TRUE(why.find("truncated") != std::string::npos) << why;
    // ... found before any data is read (HDF5 itself sees the end of the file short of what its
    // header says).
    EXPECT_NE(refusal([&] { read_shard_shape(path); }).find("truncated"), std::string::npos)
        << refusal([&] { read_shard_shape(path); });
  }
}

TEST(Hdf5Shard, CarriesItsRecord) {
  const auto path = scratch("record.hdf5");
  write_shard(path, some_examples(), 8, 3, 0, ShardRecord{"0123456789abcdef", 30522, -1, 0.2, false});
  const ShardShape s = read_shard_shape(path);
  ASSERT_TRUE(s.record);
  EXPECT_EQ(s.record->vocab_xxh3, "0123456789abcdef");
  EXPECT_EQ(s.record->vocab_tokens, 30522);
  EXPECT_EQ(s.record->max_token_id, 21);  // (the examples' largest: masked label 21)
  EXPECT_EQ(s.record->masked_lm_prob, 0.2);
  EXPECT_FALSE(s.record->do_lower_case);
  write_shard(path, some_examples(), 8, 3, 0);
  EXPECT_FALSE(read_shard_shape(path).record);  // (none asked: as NVIDIA's shards)
}

// A record as another tool rewrites it: h5py's fixed-length strings are padded with NULs to their
// length, with no terminator; read whole, not one character short (which named another
// vocabulary). A record that contradicts itself is said to be damaged.
TEST(Hdf5Shard, ReadsARecordRewrittenByAnotherToolAndRefusesADamagedOne) {
  const auto path = scratch("rewritten.hdf5");
  auto rewrite = [&](const std::function<void(hid_t)>& change) {
    write_shard(path, some_examples(), 8, 3, 0, ShardRecord{"0123456789abcdef", 30522, -1, 0.2, false});
    std::filesystem::remove(path.string() + ".xxh3");
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    change(f);
    H5Fclose(f);
  };
  rewrite([](hid_t f) {
    H5Adelete(f, "bertc_vocab_xxh3");
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, 16);
    H5Tset_strpad(type, H5T_STR_NULLPAD);
    const hid_t space = H5Screate(H5S_SCALAR);
    const hid_t a = H5Acreate2(f, "bertc_vocab_xxh3", type, space, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, type, "0123456789abcdef");
    H5Aclose(a), H5Sclose(space), H5Tclose(type);
  });
  EXPECT_EQ(read_shard_shape(path).record->vocab_xxh3, "0123456789abcdef");
  auto set_int = [](hid_t f, const char* name, int64_t v) {
    const hid_t a = H5Aopen(f, name, H5P_DEFAULT);
    H5Awrite(a, H5T_NATIVE_INT64, &v);
    H5Aclose(a);
  };
  rewrite([&](hid_t f) { set_int(f, "bertc_do_lower_case", 2); });
  EXPECT_NE(refusal([&] { read_shard_shape(path); }).find("its record is damaged (bertc_do_lower_case is 2"),
            std::string::npos);
  rewrite([&](hid_t f) { set_int(f, "bertc_max_token_id", 50000); });
  EXPECT_NE(refusal([&] { read_shard_shape(path); })
                .find("its record is damaged (bertc_max_token_id 50000 in a vocabulary of 30522 tokens)"),
            std::string::npos)
      << refusal([&] { read_shard_shape(path); });
  rewrite([&](hid_t f) { set_int(f, "bertc_max_token_id", -1); });
  EXPECT_NE(refusal([&] { read_shard_shape(path); }).find("its record is damaged (bertc_max_token_id -1"),
            std::string::npos);
  // An integer of the record stored as a float (libhdf5 converted 0.5 to 0: do_lower_case read as
  // false), and the float stored as an integer: refused, naming the attribute.
  auto as_type = [&](const char* name, hid_t type, const void* value) {
    rewrite([&](hid_t f) {
      H5Adelete(f, name);
      const hid_t space = H5Screate(H5S_SCALAR);
      const hid_t a = H5Acreate2(f, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
      H5Awrite(a, type, value);
      H5Aclose(a), H5Sclose(space);
    });
    return refusal([&] { read_shard_shape(path); });
  };
  const double half = 0.5;
  const int64_t one = 1;
  for (const char* name : {"bertc_do_lower_case", "bertc_vocab_tokens", "bertc_max_token_id"})
    EXPECT_NE(as_type(name, H5T_NATIVE_DOUBLE, &half)
                  .find(std::string("attribute '") + name + "' is not stored as an integer as bertc writes it"),
              std::string::npos)
        << name;
  EXPECT_NE(as_type("bertc_masked_lm_prob", H5T_NATIVE_INT64, &one)
                .find("attribute 'bertc_masked_lm_prob' is not stored as a float as bertc writes it"),
            std::string::npos);
}

// A write that fails (a full disk; here the file size limit, which fails a write the same way
// with EFBIG) must be an error naming the file and the cause, leave nothing behind, and let the
// process end normally: libhdf5 used to crash at exit on the file it could not flush. Run in a
// child, which ends through exit() (libhdf5's exit-time cleanup runs) and says by its status.
TEST(Hdf5Shard, AWriteThatFailsIsAnErrorAndNoCrash) {
  const auto dir = scratch("full");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::vector<Example> many;
  for (int i = 0; i < 20000; ++i) {
    Example e = some_examples()[1];
    for (int64_t& t : e.tokens) t = (t * 7919 + i) % 30000;  // (less compressible)
    many.push_back(e);
  }
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{64 * 1024, 64 * 1024};
    setrlimit(RLIMIT_FSIZE, &limit);
    const std::string why = refusal([&] { write_shard(dir / "shard.hdf5", many, 8, 3, 0); });
    const bool said = why.find(".shard.hdf5.tmp: writing it failed after") != std::string::npos &&
                      why.find("File too large") != std::string::npos;
    std::exit(said && std::filesystem::is_empty(dir) ? 0 : 3);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "the child was killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the error did not name the file and cause, or a file was left";
  EXPECT_TRUE(std::filesystem::is_empty(dir));
}

}  // namespace
}  // namespace bertc::data
