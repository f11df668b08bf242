// safetensors: files written by the reference library, our writer checked by the reference
// library (crosspoint_written.check.json), sharded directories, and corrupt headers.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <cstring>

#include "common/dtype.h"
#include "formats/safetensors.h"
#include "formats_test_util.h"

namespace crosspoint {
namespace {

using testing::fixture;
using testing::ScratchDir;

template <typename T>
std::vector<uint8_t> to_bytes(const std::vector<T>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

template <typename T>
T element(const TensorInfo& info, size_t idx) {
  T v;
  std::memcpy(&v, info.data + idx * sizeof(T), sizeof(T));
  return v;
}

TEST(SafetensorsReader, ReadsFileWrittenByReferenceLibrary) {
  auto file = SafetensorsFile::open(fixture("reference_written.safetensors"));
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  EXPECT_EQ(file->tensors().size(), 6u);
  EXPECT_EQ(file->metadata().at("format"), "np");
  EXPECT_EQ(file->metadata().at("note"), "written by safetensors");

  const TensorInfo* m = file->find("f32_matrix");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->dtype, DType::kF32);
  EXPECT_EQ(m->shape, (std::vector<int64_t>{3, 5}));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) EXPECT_EQ(element<float>(*m, i * 5 + j), i * 10 + j * 0.5f);

  const TensorInfo* v = file->find("f16_vector");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->dtype, DType::kF16);
  for (int k = 0; k < 7; ++k) EXPECT_EQ(f16_to_f32(element<uint16_t>(*v, k)), 0.25f * k - 1);

  const TensorInfo* s = file->find("i64_scalar");
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->shape.empty());
  EXPECT_EQ(s->num_elements(), 1);
  EXPECT_EQ(element<int64_t>(*s, 0), -123456789012);

  const TensorInfo* e = file->find("i32_empty");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->shape, (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(e->num_bytes, 0u);

  const TensorInfo* u = file->find("u8_bytes");
  ASSERT_NE(u, nullptr);
  for (int k = 0; k < 5; ++k) EXPECT_EQ(u->data[k], 3 * k);

  const TensorInfo* d = file->find("f64_square");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(element<double>(*d, 2), 1e300);
  EXPECT_EQ(file->find("nope"), nullptr);
}

// The tensors of crosspoint_written.safetensors, which the reference library has read.
std::vector<TensorToWrite> writer_fixture_tensors() {
  std::vector<TensorToWrite> t;
  t.push_back({"matrix_f32", DType::kF32, {2, 3}, to_bytes<float>({1.5f, -2.0f, 3.25f, 0.0f, 1e-3f, -7.0f})});
  t.push_back({"vector_f16",
               DType::kF16,
               {4},
               to_bytes<uint16_t>({f32_to_f16(1.0f), f32_to_f16(-0.5f), f32_to_f16(65504.0f), f32_to_f16(0.1f)})});
  t.push_back({"column_i32", DType::kI32, {3, 1}, to_bytes<int32_t>({-1, 0, 2147483647})});
  t.push_back({"scalar_i64", DType::kI64, {}, to_bytes<int64_t>({-9000000000})});
  t.push_back({"empty_u8", DType::kU8, {0}, {}});
  t.push_back({"pair_i8", DType::kI8, {2}, to_bytes<int8_t>({-128, 127})});
  t.push_back({"one_f64", DType::kF64, {1}, to_bytes<double>({0.1})});
  t.push_back({"flags_bool", DType::kBool, {3}, {1, 0, 1}});
  return t;
}

TEST(SafetensorsWriter, MatchesFileTheReferenceLibraryRead) {
  ScratchDir dir;
  const std::string path = std::getenv("CROSSPOINT_REGENERATE_FIXTURES") ? fixture("crosspoint_written.safetensors")
                                                                         : dir.file("written.safetensors");
  const std::vector<TensorToWrite> tensors = writer_fixture_tensors();
  ASSERT_TRUE(write_safetensors(path, tensors, {{"format", "pt"}, {"writer", "crosspoint"}}).is_ok());
  // Byte-identical to the committed file that the safetensors library loaded.
  EXPECT_EQ(testing::read_bytes(path), testing::read_bytes(fixture("crosspoint_written.safetensors")));

  // What the library read from it must be what we meant to write.
  const auto check = nlohmann::json::parse(testing::read_bytes(fixture("crosspoint_written.check.json")));
  EXPECT_EQ(check["metadata"]["writer"], "crosspoint");
  ASSERT_EQ(check["tensors"].size(), tensors.size());
  auto file = SafetensorsFile::open(path);
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  for (const TensorToWrite& t : tensors) {
    SCOPED_TRACE(t.name);
    const auto& seen = check["tensors"][t.name];
    EXPECT_EQ(seen["shape"].get<std::vector<int64_t>>(), t.shape);
    const TensorInfo* info = file->find(t.name);
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(info->shape, t.shape);
    EXPECT_EQ(info->dtype, t.dtype);
    ASSERT_EQ(static_cast<int64_t>(seen["values"].size()), info->num_elements());
    for (int64_t k = 0; k < info->num_elements(); ++k) {
      double ours = 0;
      switch (t.dtype) {
        case DType::kF32: ours = element<float>(*info, k); break;
        case DType::kF16: ours = f16_to_f32(element<uint16_t>(*info, k)); break;
        case DType::kI32: ours = element<int32_t>(*info, k); break;
        case DType::kI64: ours = static_cast<double>(element<int64_t>(*info, k)); break;
        case DType::kI8: ours = element<int8_t>(*info, k); break;
        case DType::kF64: ours = element<double>(*info, k); break;
        default: ours = info->data[k]; break;
      }
      EXPECT_EQ(seen["values"][k].get<double>(), ours) << "element " << k;
    }
  }
}

TEST(SafetensorsWriter, RoundTripsBf16AndAlignsOffsets) {
  ScratchDir dir;
  std::vector<TensorToWrite> tensors = {
      {"b", DType::kBF16, {3}, to_bytes<uint16_t>({f32_to_bf16(1.0f), f32_to_bf16(-3.0f), f32_to_bf16(0.5f)})},
      {"a", DType::kU8, {1}, {9}},
      {"c", DType::kF64, {2}, to_bytes<double>({1.0, 2.0})},
  };
  ASSERT_TRUE(write_safetensors(dir.file("x.safetensors"), tensors).is_ok());
  auto file = SafetensorsFile::open(dir.file("x.safetensors"));
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  EXPECT_EQ(bf16_to_f32(element<uint16_t>(*file->find("b"), 1)), -3.0f);
  EXPECT_EQ(file->metadata().at("format"), "pt");
  for (const auto& [name, info] : file->tensors()) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(info.data) % dtype_size(info.dtype), 0u) << name;
  }
}

TEST(SafetensorsWriter, RefusesInconsistentInput) {
  ScratchDir dir;
  Status s = write_safetensors(dir.file("x.safetensors"), {{"w", DType::kF32, {2, 2}, std::vector<uint8_t>(12)}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'w'"), std::string::npos) << s.message();
  s = write_safetensors(dir.file("x.safetensors"), {{"w", DType::kU8, {1}, {1}}, {"w", DType::kU8, {1}, {2}}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

// Builds a file from a header text and data bytes, as a corrupt writer might.
std::vector<uint8_t> make_file(const std::string& header, size_t data_bytes, int64_t header_length = -1) {
  std::vector<uint8_t> bytes(8 + header.size() + data_bytes, 0);
  const uint64_t n = header_length >= 0 ? static_cast<uint64_t>(header_length) : header.size();
  std::memcpy(bytes.data(), &n, 8);
  if (!header.empty()) std::memcpy(bytes.data() + 8, header.data(), header.size());
  return bytes;
}

struct CorruptCase {
  const char* label;
  std::vector<uint8_t> bytes;
  StatusCode code;
  const char* needle;  // must appear in the message
};

TEST(SafetensorsReader, CorruptHeadersAreOneLineErrorsNamingFileAndTensor) {
  const std::string ok_entry = R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  std::vector<CorruptCase> cases = {
      {"too short", {1, 2, 3}, StatusCode::kCorrupt, "too short"},
      {"header beyond file", make_file("{}", 0, 9999), StatusCode::kCorrupt, "header length 9999 exceeds file size"},
      {"not json", make_file("{\"w\": [", 0), StatusCode::kCorrupt, "not valid JSON"},
      {"not object", make_file("[1,2]", 0), StatusCode::kCorrupt, "not an object"},
      {"unknown dtype", make_file(R"({"w":{"dtype":"Q7","shape":[1],"data_offsets":[0,1]}})", 1),
       StatusCode::kUnsupported, "tensor 'w': unknown or unsupported dtype \"Q7\""},
      {"missing shape", make_file(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", 4), StatusCode::kCorrupt,
       "tensor 'w': missing or non-array \"shape\""},
      {"negative dim", make_file(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4), StatusCode::kCorrupt,
       "tensor 'w': shape entry -1"},
      {"size mismatch", make_file(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8), StatusCode::kCorrupt,
       "tensor 'w': data_offsets span 8 bytes but shape [3] x F32 needs 12"},
      {"reversed offsets", make_file(R"({"w":{"dtype":"U8","shape":[0],"data_offsets":[4,0]}})", 4),
       StatusCode::kCorrupt, "end 0 before begin 4"},
      {"outside data", make_file("{" + ok_entry + "}", 4), StatusCode::kCorrupt,
       "tensor 'w': data_offsets [0, 8] run past"},
      {"overlap", make_file("{" + ok_entry + R"(,"v":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12),
       StatusCode::kCorrupt, "tensor 'v' overlaps tensor 'w'"},
      {"gap", make_file(R"({"v":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8), StatusCode::kCorrupt,
       "tensor 'v': gap of 4 bytes"},
      {"trailing bytes", make_file("{" + ok_entry + "}", 12), StatusCode::kCorrupt, "trailing bytes"},
      {"bad metadata", make_file(R"({"__metadata__":{"a":1}})", 0), StatusCode::kCorrupt, "__metadata__ value of 'a'"},
      {"overflowing shape",
       make_file(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", 0),
       StatusCode::kCorrupt, "overflows"},
  };
  ScratchDir dir;
  for (const CorruptCase& c : cases) {
    SCOPED_TRACE(c.label);
    const std::string path = dir.file("bad.safetensors");
    testing::write_bytes(path, c.bytes);
    auto file = SafetensorsFile::open(path);
    ASSERT_FALSE(file.is_ok());
    EXPECT_EQ(file.status().code(), c.code) << file.status().to_string();
    const std::string& message = file.status().message();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find(c.needle), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(SafetensorsReader, EveryTruncationOfAValidFileIsAnError) {
  const std::vector<uint8_t> good = testing::read_bytes(fixture("reference_written.safetensors"));
  ScratchDir dir;
  for (size_t length = 0; length < good.size(); length += (length < 200 ? 1 : 7)) {
    testing::write_bytes(dir.file("t.safetensors"), std::vector<uint8_t>(good.begin(), good.begin() + length));
    auto file = SafetensorsFile::open(dir.file("t.safetensors"));
    EXPECT_FALSE(file.is_ok()) << "length " << length;
  }
}

TEST(SafetensorsReader, MissingFileIsNotFound) {
  auto file = SafetensorsFile::open("/nonexistent/model.safetensors");
  ASSERT_FALSE(file.is_ok());
  EXPECT_EQ(file.status().code(), StatusCode::kNotFound);
}

TEST(SafetensorsModel, OpensSingleFileDirectory) {
  auto model = SafetensorsModel::open_dir(fixture("tiny_qwen2"));
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  EXPECT_NE((*model)->find("model.embed_tokens.weight"), nullptr);
  auto missing = (*model)->require("lm_head.weight");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("lm_head.weight"), std::string::npos);
}

TEST(SafetensorsModel, OpensShardsFromIndex) {
  ScratchDir dir;
  ASSERT_TRUE(write_safetensors(dir.file("model-00001-of-00002.safetensors"),
                                {{"a", DType::kF32, {1}, to_bytes<float>({1.0f})},
                                 {"b", DType::kF32, {2}, to_bytes<float>({2.0f, 3.0f})}})
                  .is_ok());
  ASSERT_TRUE(write_safetensors(dir.file("model-00002-of-00002.safetensors"),
                                {{"c", DType::kF16, {1}, to_bytes<uint16_t>({f32_to_f16(4.0f)})}})
                  .is_ok());
  testing::write_text(dir.file("model.safetensors.index.json"),
                      R"({"metadata":{"total_size":14},"weight_map":{"a":"model-00001-of-00002.safetensors",
                          "b":"model-00001-of-00002.safetensors","c":"model-00002-of-00002.safetensors"}})");
  auto model = SafetensorsModel::open_dir(dir.path());
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  EXPECT_EQ((*model)->tensor_names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ((*model)->total_bytes(), 14u);
  EXPECT_EQ(element<float>(*(*model)->find("b"), 1), 3.0f);
  EXPECT_NE((*model)->find("c")->file.find("00002"), std::string::npos);

  // An index naming a tensor its shard lacks.
  testing::write_text(
      dir.file("model.safetensors.index.json"),
      R"({"weight_map":{"a":"model-00001-of-00002.safetensors","z":"model-00002-of-00002.safetensors"}})");
  auto bad = SafetensorsModel::open_dir(dir.path());
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("tensor 'z'"), std::string::npos) << bad.status().to_string();

  // A shard that is missing.
  testing::write_text(dir.file("model.safetensors.index.json"), R"({"weight_map":{"a":"model-00009.safetensors"}})");
  bad = SafetensorsModel::open_dir(dir.path());
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kNotFound);

  // A path escaping the directory, and non-JSON.
  testing::write_text(dir.file("model.safetensors.index.json"), R"({"weight_map":{"a":"../x.safetensors"}})");
  EXPECT_FALSE(SafetensorsModel::open_dir(dir.path()).is_ok());
  testing::write_text(dir.file("model.safetensors.index.json"), "{not json");
  bad = SafetensorsModel::open_dir(dir.path());
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kCorrupt);
}

TEST(SafetensorsModel, CheckTensorAgainstConfig) {
  auto model = SafetensorsModel::open_dir(fixture("tiny_qwen2"));
  ASSERT_TRUE(model.is_ok());
  const TensorInfo* embed = (*model)->find("model.embed_tokens.weight");  // [64, 32] f16
  EXPECT_TRUE(check_tensor(*embed, {64, 32}, {DType::kF16, DType::kBF16}).is_ok());
  Status s = check_tensor(*embed, {128, 32});
  EXPECT_EQ(s.code(), StatusCode::kCorrupt);
  EXPECT_NE(
      s.message().find(
          "model.safetensors: tensor 'model.embed_tokens.weight': shape [64, 32] but the config implies [128, 32]"),
      std::string::npos)
      << s.message();
  s = check_tensor(*embed, {64, 32}, {DType::kF32});
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("dtype f16 where f32 is expected"), std::string::npos) << s.message();
}

TEST(SafetensorsModel, EmptyDirectoryIsNotFound) {
  ScratchDir dir;
  auto model = SafetensorsModel::open_dir(dir.path());
  ASSERT_FALSE(model.is_ok());
  EXPECT_EQ(model.status().code(), StatusCode::kNotFound);
  EXPECT_NE(model.status().message().find("model.safetensors"), std::string::npos);
}

}  // namespace
}  // namespace crosspoint
