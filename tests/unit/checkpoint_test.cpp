// Unit tests for safetensors files and checkpoints: exact round trips, and a clear refusal of
// every kind of damaged or mismatched file.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "run_folder/checkpoint.h"
#include "run_config/config.h"
#include "train/lr_schedule.h"
#include "support/atomic_file.h"
#include "support/file_errors.h"
#include "support/safetensors.h"

namespace bertc::run_folder {

using namespace bertc::support;
namespace {

std::filesystem::path scratch(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("bertc-checkpoint-test-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

HostTensor real(ir::Shape shape, std::vector<float> v) {
  HostTensor t = HostTensor::zeros({ir::DType::F32, std::move(shape)});
  t.real = std::move(v);
  return t;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

TEST(Safetensors, RoundTripsTensorsAndMetadata) {
  Safetensors file;
  file.tensors["a.weight"] = to_stored(real({2, 2}, {1, -2, 3.5f, 1e-30f}));
  file.tensors["b"] = to_stored(real({}, {7}));
  file.metadata["step"] = "12";
  const std::string bytes = encode_safetensors(file);
  // 8-byte length, then JSON; the header is padded so that data starts 8-byte aligned.
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ((8 + n) % 8, 0u);
  EXPECT_EQ(bytes[8], '{');
  const Safetensors back = decode_safetensors(bytes, "mem");
  EXPECT_EQ(back.metadata, file.metadata);
  ASSERT_EQ(back.tensors.size(), 2u);
  EXPECT_EQ(to_host(back.tensors.at("a.weight"), ir::DType::F32, "a").real, (std::vector<float>{1, -2, 3.5f, 1e-30f}));
  EXPECT_EQ(back.tensors.at("b").shape, ir::Shape{});
}

TEST(Safetensors, ReadsSixteenBitFloats) {
  // fp16 1.0 = 0x3c00, -2.0 = 0xc000, 2^-24 (smallest subnormal) = 0x0001; bf16 1.5 = 0x3fc0.
  StoredTensor half{ir::DType::F16, {3}, {0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00}};
  EXPECT_EQ(to_host(half, ir::DType::F32, "h").real, (std::vector<float>{1.0f, -2.0f, 5.9604644775390625e-08f}));
  StoredTensor bf{ir::DType::BF16, {1}, {0xc0, 0x3f}};
  EXPECT_EQ(to_host(bf, ir::DType::F32, "b").real, std::vector<float>{1.5f});
  StoredTensor ints{ir::DType::I64, {1}, std::vector<uint8_t>(8, 0)};
  EXPECT_NE(error_of([&] { to_host(ints, ir::DType::F32, "file: tensor 'x'"); }).find("stored as i64"), std::string::npos);
}

TEST(Safetensors, RefusesDamagedFiles) {
  Safetensors file;
  file.tensors["w"] = to_stored(real({4}, {1, 2, 3, 4}));
  const std::string good = encode_safetensors(file);
  auto refuse = [](const std::string& bytes) { return error_of([&] { decode_safetensors(bytes, "ck.safetensors"); }); };
  EXPECT_NE(refuse(good.substr(0, 5)).find("ck.safetensors: only 5 bytes"), std::string::npos);
  EXPECT_NE(refuse(good.substr(0, good.size() - 4)).find("tensor 'w': data_offsets [0,16] lie outside the 12 data bytes"),
            std::string::npos);
  EXPECT_NE(refuse(good + "xx").find("2 data bytes after the last tensor"), std::string::npos);
  std::string huge = good;
  huge[6] = 1;  // header length ~2^48
  EXPECT_NE(refuse(huge).find("does not fit in the file"), std::string::npos);
  std::string garbled = good;
  garbled[9] = '#';
  EXPECT_NE(refuse(garbled).find("header is not valid JSON"), std::string::npos);
  std::string wrong_dtype = good;
  wrong_dtype.replace(wrong_dtype.find("F32"), 3, "F31");
  EXPECT_NE(refuse(wrong_dtype).find("tensor 'w': dtype \"F31\" is not one bertc reads"), std::string::npos);
  std::string wrong_shape = good;
  wrong_shape.replace(wrong_shape.find("[4]"), 3, "[5]");
  EXPECT_NE(refuse(wrong_shape).find("16 bytes stored for F32[5] which needs 20"), std::string::npos);
  // A dimension no whole number of 64 bits holds (2^64+8, a float to JSON, was said as -2^63), or negative.
  const auto file_of = [](const std::string& header) {
    std::string bytes(8, '\0');
    const uint64_t n = header.size();
    std::memcpy(bytes.data(), &n, 8);
    return bytes + header + std::string(4, '\0');
  };
  EXPECT_NE(refuse(file_of(R"({"w":{"dtype":"F32","shape":[18446744073709551624],"data_offsets":[0,4]}})"))
                .find("tensor 'w': shape [1.8446744073709552e+19] is not a list of whole numbers from 0 to 2^63-1"),
            std::string::npos);
  EXPECT_NE(
      refuse(file_of(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})")).find("shape [-1] is not a list"),
      std::string::npos);
  // A tensor named twice (JSON would keep the second), same length: "w" renamed in place.
  Safetensors two;
  two.tensors["v"] = to_stored(real({2}, {1, 2}));
  two.tensors["w"] = to_stored(real({2}, {3, 4}));
  std::string twice = encode_safetensors(two);
  twice.replace(twice.find("\"v\""), 3, "\"w\"");
  EXPECT_NE(refuse(twice).find("the header names 'w' twice"), std::string::npos) << refuse(twice);
}

// An output whose name fits the file system (up to 255 bytes) is written, whatever the length of
// its temporary's name (".NAME.tmp.PID" passed 255 bytes and failed as "File name too long").
TEST(AtomicFile, WritesAFileWhoseNameIsAsLongAsMayBe) {
  const auto dir = scratch("long-names");
  std::string accented;
  for (int i = 0; i < 125; ++i) accented += "\u00e9";  // 250 bytes of 2-byte characters
  for (const std::string& name : {std::string(251, 'v') + ".txt", accented + ".txt"}) {
    ASSERT_LE(name.size(), 255u);
    support::write_file_atomically(dir / name, "text\n");
    std::ifstream in(dir / name);
    std::string line;
    EXPECT_TRUE(std::getline(in, line) && line == "text") << name.size();
    const std::string tmp = support::temporary_beside(dir / name).filename().string();
    EXPECT_LE(tmp.size(), 255u);
    const std::string suffix = ".tmp." + std::to_string(::getpid());
    EXPECT_EQ(tmp.substr(tmp.size() - suffix.size()), suffix);
  }
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 2) << "a temporary was left";
}

// An output that must be new is never placed over a file made after its name was checked: the
// file there keeps its bytes, the write fails with EEXIST, and no temporary is left.
TEST(AtomicFile, ANewFileIsNeverPlacedOverOneMadeMeanwhile) {
  const auto dir = scratch("new-file");
  support::write_new_file_atomically(dir / "vocab.txt", "first\n");
  try {
    support::write_new_file_atomically(dir / "vocab.txt", "second\n");
    ADD_FAILURE() << "written over an existing file";
  } catch (const support::FileError& e) {
    EXPECT_EQ(e.code().value(), EEXIST) << e.what();
  }
  std::ifstream in(dir / "vocab.txt");
  std::string line;
  EXPECT_TRUE(std::getline(in, line) && line == "first") << line;
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1) << "a temporary was left";
}

// A file an immutable attribute keeps (EPERM, which root meets too: the folder is writable) is
// said as such, with the command that clears it, and that command, followed, lets it go ("make the
// folder writable" was said, and the folder was). Skipped where the file system has no attributes.
TEST(FileErrors, AnImmutableFileIsSaidWithTheCommandThatClearsIt) {
  const auto dir = scratch("immutable");
  const std::filesystem::path file = dir / "checkpoint-000003.safetensors";
  std::ofstream(file) << "old";
  const std::string quoted = "'" + file.string() + "'";
  if (std::system(("chattr +i " + quoted + " 2>/dev/null").c_str()) != 0) GTEST_SKIP() << "no chattr here";
  struct Clear {
    std::string quoted;
    ~Clear() { (void)std::system(("chattr -i -a " + quoted + " 2>/dev/null").c_str()); }
  } clear{quoted};
  std::error_code ec;
  ASSERT_FALSE(std::filesystem::remove(file, ec));
  ASSERT_EQ(ec.value(), EPERM);
  const std::string fix = support::file_error_fix(ec.value(), file);
  EXPECT_NE(fix.find("an immutable or append-only attribute on " + file.string()), std::string::npos) << fix;
  EXPECT_NE(fix.find("root clears them: sudo chattr -i -a " + file.string()), std::string::npos) << fix;
  EXPECT_EQ(fix.find("writable"), std::string::npos) << fix;
  ASSERT_EQ(std::system(("chattr -i -a " + quoted).c_str()), 0);  // (the fix, followed)
  EXPECT_TRUE(std::filesystem::remove(file));
}

// A device or a pipe is never replaced by the atomic write's rename (as root, "-o /dev/null"
// replaced /dev/null itself with a regular file): refused, the pipe still a pipe.
TEST(AtomicFile, NeverRenamesOverAPipeOrADevice) {
  const auto dir = scratch("pipe");
  ASSERT_EQ(::mkfifo((dir / "pipe").c_str(), 0600), 0);
  EXPECT_THROW(support::write_file_atomically(dir / "pipe", "text\n"), support::FileError);
  EXPECT_EQ(std::filesystem::status(dir / "pipe").type(), std::filesystem::file_type::fifo);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1) << "a temporary was left";
}

// A folder made whole beside its place (bertc export's) goes there only over nothing or an empty
// folder: one another process filled meanwhile keeps its file, and the made folder is still there
// for its maker to remove.
TEST(AtomicFile, AFolderIsPlacedOnlyOverNothingOrAnEmptyFolder) {
  const auto dir = scratch("place-folder");
  std::filesystem::create_directories(dir / "made");
  std::ofstream(dir / "made" / "config.json") << "{}";
  std::filesystem::create_directories(dir / "taken");
  std::ofstream(dir / "taken" / "other.txt") << "another's";
  EXPECT_FALSE(support::place_folder(dir / "made", dir / "taken"));
  EXPECT_TRUE(std::filesystem::exists(dir / "taken" / "other.txt"));
  EXPECT_FALSE(std::filesystem::exists(dir / "taken" / "config.json"));
  EXPECT_TRUE(std::filesystem::exists(dir / "made" / "config.json"));
  std::filesystem::create_directories(dir / "empty");
  EXPECT_TRUE(support::place_folder(dir / "made", dir / "empty"));
  EXPECT_TRUE(std::filesystem::exists(dir / "empty" / "config.json"));
  EXPECT_TRUE(support::place_folder(dir / "empty", dir / "new"));
  EXPECT_TRUE(std::filesystem::exists(dir / "new" / "config.json"));
}

// A folder that is there already is filled, not replaced: the folder is made inside it and its
// files moved up (the folder's inode, so its mode, owner and mount, stay); a name another process
// made there meanwhile stops it, with the made files put back for their maker to remove.
TEST(AtomicFile, AFolderThatIsThereIsFilledNotReplaced) {
  const auto dir = scratch("fill-folder");
  EXPECT_EQ(support::staging_folder_for(dir / "new").parent_path(), dir);
  std::filesystem::create_directories(dir / "there");
  const std::filesystem::path inside = support::staging_folder_for(dir / "there");
  ASSERT_EQ(inside.parent_path(), dir / "there");
  struct stat before {};
  ASSERT_EQ(::stat((dir / "there").c_str(), &before), 0);
  std::filesystem::create_directories(inside);
  std::ofstream(inside / "config.json") << "{}";
  std::ofstream(inside / "vocab.txt") << "[PAD]\n";
  EXPECT_TRUE(support::place_folder(inside, dir / "there"));
  struct stat after {};
  ASSERT_EQ(::stat((dir / "there").c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_FALSE(std::filesystem::exists(inside));
  EXPECT_TRUE(std::filesystem::exists(dir / "there" / "config.json"));
  EXPECT_TRUE(std::filesystem::exists(dir / "there" / "vocab.txt"));

  std::filesystem::create_directories(dir / "taken");
  const std::filesystem::path staged = support::staging_folder_for(dir / "taken");
  std::filesystem::create_directories(staged);
  std::ofstream(staged / "config.json") << "{}";
  std::ofstream(dir / "taken" / "other.txt") << "another's";
  EXPECT_FALSE(support::place_folder(staged, dir / "taken"));
  EXPECT_TRUE(std::filesystem::exists(staged / "config.json"));
  EXPECT_FALSE(std::filesystem::exists(dir / "taken" / "config.json"));
}

// A failed command removes the folders it made only while they are empty: a file another process
// put in one keeps that folder and those around it.
TEST(AtomicFile, MadeFoldersGoOnlyWhenEmpty) {
  const auto dir = scratch("made-folders");
  const auto missing = support::missing_folders(dir / "a" / "b" / "c");
  ASSERT_EQ(missing.size(), 3u);
  std::filesystem::create_directories(dir / "a" / "b" / "c");
  std::ofstream(dir / "a" / "theirs.txt") << "another's";
  support::remove_made_folders(missing);
  EXPECT_FALSE(std::filesystem::exists(dir / "a" / "b"));
  EXPECT_TRUE(std::filesystem::exists(dir / "a" / "theirs.txt"));
  std::filesystem::remove(dir / "a" / "theirs.txt");
  // (b and c are gone already; a, not on the list, stays)
  support::remove_made_folders(support::missing_folders(dir / "a" / "b" / "c"));
  EXPECT_TRUE(std::filesystem::exists(dir / "a"));
  support::remove_made_folders({dir / "a"});
  EXPECT_FALSE(std::filesystem::exists(dir / "a"));
}

TEST(Checkpoint, SavesLoadsAndKeepsTheNewest) {
  const auto dir = scratch("save");
  const TensorManifest manifest = {{"w", {ir::DType::F32, {2}}}, {"w.exp_avg", {ir::DType::F32, {2}}}};
  Environment env{{"w", real({2}, {1, 2})}, {"w.exp_avg", real({2}, {0.5f, 0.25f})}, {"w.grad_acc", real({2}, {9, 9})}};
  for (int64_t step : {10, 20, 30}) save_checkpoint(dir, step, manifest, env, {{"seed", "1"}}, 2);
  const auto files = list_checkpoints(dir);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].step, 20);
  EXPECT_EQ(files[1].path.filename(), "checkpoint-000030.safetensors");
  Environment loaded;
  const CheckpointContents c = load_checkpoint(files[1].path, manifest, loaded);
  EXPECT_EQ(c.step, 30);
  EXPECT_EQ(c.metadata.at("seed"), "1");
  EXPECT_EQ(loaded.at("w").real, (std::vector<float>{1, 2}));
  EXPECT_EQ(loaded.at("w.exp_avg").real, (std::vector<float>{0.5f, 0.25f}));
  EXPECT_EQ(loaded.count("w.grad_acc"), 0u);  // not part of a checkpoint
}

// The gradient exchange's state (PowerSGD's) travels beside the model's tensors, whatever the
// manifest: loaded when there, absent otherwise; only under its prefix.
TEST(Checkpoint, KeepsTheExchangeStateBesideTheModel) {
  const auto dir = scratch("exchange");
  const TensorManifest manifest = {{"w", {ir::DType::F32, {2}}}};
  const Environment env{{"w", real({2}, {1, 2})}};
  HostTensor words = HostTensor::zeros({ir::DType::I64, {2}});
  words.integer = {-1, int64_t{1} << 62};
  save_checkpoint(dir, 1, manifest, env, {}, 2, {{"dist.powersgd.w.q", real({2, 1}, {0.5f, -3})}, {"dist.powersgd.random", words}});
  save_checkpoint(dir, 2, manifest, env, {}, 2);
  Environment with, without;
  load_checkpoint(checkpoint_path(dir, 1), manifest, with);
  EXPECT_EQ(with.at("dist.powersgd.w.q").real, (std::vector<float>{0.5f, -3}));
  EXPECT_EQ(with.at("dist.powersgd.random").integer, words.integer);
  load_checkpoint(checkpoint_path(dir, 2), manifest, without);
  EXPECT_EQ(without.size(), 1u);
  EXPECT_THROW(save_checkpoint(dir, 3, manifest, env, {}, 2, {{"w.q", real({1}, {1})}}), std::logic_error);
}

// Every tensor and the metadata carry an xxh3 checksum: a flipped bit anywhere in a tensor's data,
// or an edited metadata value, is refused naming it; a file without checksums (another program's)
// loads as before; NaN weights and steps below 1 are refused naming the tensor or the step.
TEST(Checkpoint, ChecksumsCatchDamageAndFilesWithoutThemLoad) {
  const auto dir = scratch("checksums");
  const TensorManifest manifest = {{"a", {ir::DType::F32, {3}}}, {"b", {ir::DType::F32, {2}}}};
  const Environment env{{"a", real({3}, {1, 2, 3})}, {"b", real({2}, {4, 5})}};
  save_checkpoint(dir, 7, manifest, env, {{"seed", "1"}}, 2);
  const auto path = checkpoint_path(dir, 7);
  const Safetensors good = read_safetensors(path);
  EXPECT_EQ(good.metadata.count("xxh3.a"), 1u);
  EXPECT_EQ(good.metadata.count("xxh3.__metadata__"), 1u);
  Environment loaded;
  EXPECT_EQ(load_checkpoint(path, manifest, loaded).step, 7);
  for (size_t byte = 0; byte < good.tensors.at("b").bytes.size(); ++byte) {
    Safetensors bad = good;
    bad.tensors.at("b").bytes[byte] ^= 0x01;
    write_safetensors(path, bad);
    EXPECT_NE(error_of([&] { load_checkpoint(path, manifest, loaded); }).find("tensor 'b' does not match its checksum"),
              std::string::npos) << "byte " << byte;
  }
  Safetensors edited = good;
  edited.metadata["step"] = "-5";
  write_safetensors(path, edited);
  EXPECT_NE(error_of([&] { load_checkpoint(path, manifest, loaded); }).find("metadata does not match its checksum"),
            std::string::npos);
  Safetensors dropped = good;
  dropped.tensors.erase("b");
  write_safetensors(path, dropped);
  EXPECT_NE(error_of([&] { load_checkpoint(path, manifest, loaded); }).find("checksum of tensor 'b' is there"),
            std::string::npos);
  // A checksummed format (bertc-checkpoint-2) whose metadata checksum is gone (a flipped key name):
  // refused, not loaded unchecked.
  Safetensors unsummed = good;
  unsummed.metadata.erase("xxh3.__metadata__");
  write_safetensors(path, unsummed);
  EXPECT_NE(error_of([&] { load_checkpoint(path, manifest, loaded); }).find("without its metadata checksum"),
            std::string::npos);
  // Without checksums (an older bertc's bertc-checkpoint-1): loads, and the other checks still hold.
  Safetensors plain = good;
  for (auto it = plain.metadata.begin(); it != plain.metadata.end();)
    it = it->first.starts_with("xxh3.") ? plain.metadata.erase(it) : std::next(it);
  plain.metadata["format"] = "bertc-checkpoint-1";
  write_safetensors(path, plain);
  EXPECT_EQ(load_checkpoint(path, manifest, loaded).step, 7);
  plain.metadata["step"] = "-5";
  write_safetensors(path, plain);
  EXPECT_NE(error_of([&] { load_checkpoint(path, manifest, loaded); }).find("metadata step -5 is not a step"),
            std::string::npos);
  plain.metadata["step"] = "7x";
  write_safetensors(path, plain);
  EXPECT_NE(error_of([&] { load_checkpoint(path, manifest, loaded); }).find("metadata step '7x' is not a number"),
            std::string::npos);
  // A NaN weight is never saved (rotation would delete the good checkpoints), and is refused when
  // a file holds one, naming the tensor.
  Environment diverged = env;
  diverged.at("a").real[1] = std::nanf("");
  const auto nan_dir = scratch("checksums-nan");
  save_checkpoint(nan_dir, 5, manifest, env, {}, 1);
  EXPECT_NE(error_of([&] { save_checkpoint(nan_dir, 8, manifest, diverged, {}, 1); })
                .find("step 8's checkpoint, not written (the older ones are kept): tensor 'a' holds nan at element 1"),
            std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(checkpoint_path(nan_dir, 5)));
  EXPECT_FALSE(std::filesystem::exists(checkpoint_path(nan_dir, 8)));
  Safetensors with_nan = good;
  std::memcpy(with_nan.tensors.at("a").bytes.data() + 4, &diverged.at("a").real[1], 4);
  with_nan.metadata.erase("xxh3.__metadata__");
  for (auto it = with_nan.metadata.begin(); it != with_nan.metadata.end();)
    it = it->first.starts_with("xxh3.") ? with_nan.metadata.erase(it) : std::next(it);
  with_nan.metadata["format"] = "bertc-checkpoint-1";
  write_safetensors(path, with_nan);
  EXPECT_NE(error_of([&] { load_checkpoint(path, manifest, loaded); }).find("tensor 'a' holds nan at element 1"),
            std::string::npos);
}

// Every step a run may reach names a checkpoint that resume and info find (one of 16 digits and
// more was passed over); names past int64_t, or not of digits, name none.
TEST(Checkpoint, EveryStepsNameIsReadBack) {
  EXPECT_EQ(checkpoint_step_of("checkpoint-000012.safetensors"), 12);
  EXPECT_EQ(checkpoint_step_of("checkpoint-1000000000000000.safetensors"), int64_t{1000000000000000});
  EXPECT_EQ(checkpoint_step_of("checkpoint-9223372036854775807.safetensors"), INT64_MAX);
  EXPECT_EQ(checkpoint_step_of("checkpoint-9223372036854775808.safetensors"), std::nullopt);
  EXPECT_EQ(checkpoint_step_of("checkpoint-+12.safetensors"), std::nullopt);
  EXPECT_EQ(checkpoint_step_of("checkpoint-.safetensors"), std::nullopt);
  EXPECT_EQ(checkpoint_step_of("checkpoint-12.safetensors.xxh3"), std::nullopt);
}

TEST(Checkpoint, RefusesAnotherModelsCheckpoint) {
  const auto dir = scratch("mismatch");
  save_checkpoint(dir, 1, {{"w", {ir::DType::F32, {2}}}}, {{"w", real({2}, {1, 2})}}, {}, 1);
  const auto path = checkpoint_path(dir, 1);
  Environment env;
  EXPECT_NE(error_of([&] { load_checkpoint(path, {{"w", {ir::DType::F32, {3}}}}, env); })
                .find("tensor 'w' is f32[2], the model needs f32[3]"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load_checkpoint(path, {{"w", {ir::DType::F32, {2}}}, {"v", {ir::DType::F32, {2}}}}, env); })
                .find("tensor 'v' is missing"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load_checkpoint(path, {}, env); }).find("tensor 'w' is not part of this model"),
            std::string::npos);
  Safetensors foreign;
  foreign.tensors["w"] = to_stored(real({2}, {1, 2}));
  write_safetensors(dir / "foreign.safetensors", foreign);
  EXPECT_NE(error_of([&] { load_checkpoint(dir / "foreign.safetensors", {{"w", {ir::DType::F32, {2}}}}, env); })
                .find("no 'format' in its metadata: not a bertc checkpoint"),
            std::string::npos);
}

TEST(Checkpoint, PretrainedFilesMatchByNameAndReportTheRest) {
  const auto dir = scratch("pretrained");
  ir::Graph g("g");
  for (const char* name : {"bert.embeddings.word_embeddings.weight", "cls.predictions.bias"}) {
    const ir::OpId id = g.add_op(ir::OpKind::Param, {}, {}, {{ir::DType::F32, {2}}});
    g.name_value(g.op(id).result(), name);
  }
  Safetensors hf;
  StoredTensor half{ir::DType::F16, {2}, {0x00, 0x3c, 0x00, 0x40}};  // 1.0, 2.0 in fp16
  hf.tensors["bert.embeddings.word_embeddings.weight"] = half;
  hf.tensors["cls.predictions.decoder.weight"] = half;  // tied: skipped silently
  hf.tensors["bert.embeddings.position_ids"] = StoredTensor{ir::DType::I64, {1}, std::vector<uint8_t>(8, 0)};
  hf.tensors["classifier.weight"] = half;
  write_safetensors(dir / "hf.safetensors", hf);
  Environment env;
  const PretrainedReport r = load_pretrained(dir / "hf.safetensors", g, env);
  EXPECT_EQ(r.loaded, std::vector<std::string>{"bert.embeddings.word_embeddings.weight"});
  EXPECT_EQ(r.missing, std::vector<std::string>{"cls.predictions.bias"});
  EXPECT_EQ(r.unexpected, std::vector<std::string>{"classifier.weight"});
  EXPECT_EQ(env.at("bert.embeddings.word_embeddings.weight").real, (std::vector<float>{1, 2}));
  // A BertModel file: names without "bert.".
  Safetensors bert_model;
  bert_model.tensors["embeddings.word_embeddings.weight"] = half;
  write_safetensors(dir / "bert_model.safetensors", bert_model);
  Environment from_base;
  EXPECT_EQ(load_pretrained(dir / "bert_model.safetensors", g, from_base).loaded,
            std::vector<std::string>{"bert.embeddings.word_embeddings.weight"});
  hf.tensors["cls.predictions.bias"] = StoredTensor{ir::DType::F16, {1}, {0, 0}};
  write_safetensors(dir / "bad.safetensors", hf);
  EXPECT_NE(error_of([&] { load_pretrained(dir / "bad.safetensors", g, env); })
                .find("1 tensors have another shape than the model's: cls.predictions.bias (file [1], model [2])"),
            std::string::npos);
}

TEST(LearningRate, WarmupThenDecay) {
  run_config::TrainConfig t;
  t.learning_rate = 1e-3;
  t.warmup_steps = 10;
  t.steps = 110;
  t.end_learning_rate = 0;
  EXPECT_DOUBLE_EQ(train::learning_rate_at(t, 1), 1e-4);
  EXPECT_DOUBLE_EQ(train::learning_rate_at(t, 10), 1e-3);
  EXPECT_DOUBLE_EQ(train::learning_rate_at(t, 60), 5e-4);  // halfway through the decay
  EXPECT_DOUBLE_EQ(train::learning_rate_at(t, 110), 0.0);
  t.lr_decay = run_config::LrDecay::Polynomial;
  t.lr_decay_power = 2;
  EXPECT_DOUBLE_EQ(train::learning_rate_at(t, 60), 2.5e-4);
  t.lr_decay = run_config::LrDecay::Constant;
  EXPECT_DOUBLE_EQ(train::learning_rate_at(t, 100), 1e-3);
  t.warmup_steps = 0;
  EXPECT_DOUBLE_EQ(train::learning_rate_at(t, 1), 1e-3);
}

}  // namespace
}  // namespace bertc::run_folder
