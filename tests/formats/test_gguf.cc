// GGUF reader: every metadata type and the tensor types, against files written by gguf-py
// (GGUFWriter) and values dequantised by gguf-py (gguf.quants); corrupt and truncated files.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "common/dtype.h"
#include "formats/gguf.h"
#include "formats/safetensors.h"
#include "formats_test_util.h"

namespace crosspoint {
namespace {

using testing::fixture;
using testing::ScratchDir;

class GgufTypes : public ::testing::Test {
 protected:
  void SetUp() override {
    auto file = GgufFile::open(fixture("gguf_types.gguf"));
    ASSERT_TRUE(file.is_ok()) << file.status().to_string();
    gguf_ = std::make_unique<GgufFile>(std::move(file).value());
  }
  std::unique_ptr<GgufFile> gguf_;
};

TEST_F(GgufTypes, ScalarMetadataOfEveryType) {
  const GgufFile& g = *gguf_;
  EXPECT_EQ(g.get_string("general.architecture").value(), "testarch");
  EXPECT_EQ(g.get_int("test.u8").value(), 200);
  EXPECT_EQ(g.get_int("test.i8").value(), -100);
  EXPECT_EQ(g.get_int("test.u16").value(), 60000);
  EXPECT_EQ(g.get_int("test.i16").value(), -30000);
  EXPECT_EQ(g.get_int("test.u32").value(), 4000000000);
  EXPECT_EQ(g.get_int("test.i32").value(), -2000000000);
  EXPECT_EQ(g.get_float("test.f32").value(), 0.125);
  EXPECT_EQ(g.get_bool("test.bool").value(), true);
  EXPECT_EQ(g.get_string("test.string").value(), "h\xc3\xa9llo, \xe4\xb8\x96\xe7\x95\x8c");
  EXPECT_EQ(std::get<uint64_t>(g.metadata().at("test.u64")), (uint64_t{1} << 63) + 5);
  EXPECT_EQ(g.get_int("test.i64").value(), -(int64_t{1} << 40));
  EXPECT_EQ(g.get_float("test.f64").value(), 1e-300);
  EXPECT_EQ(g.get_float("test.u32").value(), 4e9);  // integers read as floats too

  // Wrong types and missing keys are errors naming the key and the file.
  auto u64 = g.get_int("test.u64");
  ASSERT_FALSE(u64.is_ok());
  EXPECT_NE(u64.status().message().find("'test.u64'"), std::string::npos);
  auto wrong = g.get_string("test.u8");
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_NE(
      wrong.status().message().find("gguf_types.gguf: metadata key 'test.u8' is a unsigned integer, expected a string"),
      std::string::npos)
      << wrong.status().message();
  auto missing = g.get_int("llama.block_count");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(g.has("llama.block_count"));
}

TEST_F(GgufTypes, ArrayMetadataIncludingNested) {
  const GgufFile& g = *gguf_;
  EXPECT_EQ(g.get_int_array("test.array.u8").value(), (std::vector<int64_t>{1, 2, 255}));
  EXPECT_EQ(g.get_int_array("test.array.i16").value(), (std::vector<int64_t>{-1, 7}));
  EXPECT_EQ(g.get_int_array("test.array.i32").value(), (std::vector<int64_t>{-5, 0, 5}));
  EXPECT_EQ(g.get_int_array("test.array.u64").value(), (std::vector<int64_t>{1, int64_t{1} << 40}));
  EXPECT_EQ(g.get_float_array("test.array.f32").value(), (std::vector<double>{0.5, -1.25}));
  EXPECT_EQ(g.get_float_array("test.array.f64").value(), (std::vector<double>{1e-10, 3.0}));
  EXPECT_EQ(std::get<std::vector<bool>>(g.metadata().at("test.array.bool")), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(g.get_string_array("test.array.string").value(), (std::vector<std::string>{"a", "", "ccc"}));
  ASSERT_TRUE(g.has("test.array.nested"));
  const auto& nested = g.nested_arrays().at("test.array.nested");
  ASSERT_EQ(nested.size(), 2u);
  EXPECT_EQ(std::get<std::vector<int64_t>>(nested[0]), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(std::get<std::vector<std::string>>(nested[1]), (std::vector<std::string>{"x", "y"}));
  EXPECT_FALSE(g.get_string_array("test.array.i32").is_ok());
}

TEST_F(GgufTypes, DequantisationMatchesGgufPy) {
  auto expected = SafetensorsFile::open(fixture("gguf_types.expected.safetensors"));
  ASSERT_TRUE(expected.is_ok()) << expected.status().to_string();
  ASSERT_EQ(gguf_->tensors().size(), expected->tensors().size());
  for (const auto& [name, want] : expected->tensors()) {
    SCOPED_TRACE(name);
    const GgufTensor* tensor = gguf_->find_tensor(name);
    ASSERT_NE(tensor, nullptr);
    EXPECT_EQ(tensor->shape(), want.shape);
    EXPECT_EQ(static_cast<int64_t>(tensor->num_elements()), want.num_elements());
    auto values = gguf_dequantize(*tensor);
    ASSERT_TRUE(values.is_ok()) << values.status().to_string();
    ASSERT_EQ(static_cast<int64_t>(values->size()), want.num_elements());
    for (int64_t i = 0; i < want.num_elements(); ++i) {
      float w;
      std::memcpy(&w, want.data + 4 * i, 4);
      // gguf-py computes d*q (+ m) in fp32 as we do; allow one rounding step of difference.
      ASSERT_NEAR((*values)[i], w, 1e-6f * std::max(1.0f, std::fabs(w))) << "element " << i;
    }
  }
  EXPECT_EQ(gguf_->find_tensor("t_q4_1")->type, GgmlType::kQ4_1);
  EXPECT_EQ(gguf_->find_tensor("t_q4_1")->dims, (std::vector<uint64_t>{96, 5}));
  EXPECT_EQ(gguf_->find_tensor("t_bf16")->type, GgmlType::kBF16);
  EXPECT_EQ(gguf_->find_tensor("t_q4_1")->num_bytes, 5u * 3 * 20);
}

TEST_F(GgufTypes, DequantiseRangeOfRows) {
  const GgufTensor* q41 = gguf_->find_tensor("t_q4_1");  // [5, 96]
  auto full = gguf_dequantize(*q41);
  ASSERT_TRUE(full.is_ok());
  std::vector<float> row(96 * 2);
  ASSERT_TRUE(gguf_dequantize_range(*q41, 96 * 3, 96 * 2, row.data()).is_ok());
  for (size_t i = 0; i < row.size(); ++i) EXPECT_EQ(row[i], (*full)[96 * 3 + i]);
  EXPECT_EQ(gguf_dequantize_range(*q41, 16, 32, row.data()).code(), StatusCode::kInvalidArgument);  // not block-aligned
  EXPECT_EQ(gguf_dequantize_range(*q41, 96 * 4, 96 * 2, row.data()).code(), StatusCode::kInvalidArgument);  // past end
}

TEST(Gguf, CustomAlignmentAndNestedArrays) {
  auto file = GgufFile::open(fixture("gguf_align64.gguf"));
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  EXPECT_EQ(file->alignment(), 64u);
  const GgufTensor* a = file->find_tensor("a");
  const GgufTensor* b = file->find_tensor("b");
  ASSERT_TRUE(a && b);
  EXPECT_EQ((b->data - a->data) % 64, 0);
  auto b_values = gguf_dequantize(*b);
  ASSERT_TRUE(b_values.is_ok());
  for (int i = 0; i < 40; ++i) EXPECT_EQ((*b_values)[i], static_cast<float>(i));
  EXPECT_EQ(b->shape(), (std::vector<int64_t>{2, 20}));
  const auto& nested = file->nested_arrays().at("test.nested");
  ASSERT_EQ(nested.size(), 3u);
  EXPECT_EQ(std::get<std::vector<int64_t>>(nested[1]), (std::vector<int64_t>{3, 4, 5}));
}

// A small valid GGUF assembled by hand, with knobs to break one thing at a time.
struct GgufRecipe {
  uint32_t magic = 0x46554747;
  uint32_t version = 3;
  uint64_t kv_count = 1;
  uint32_t value_type = 8;     // string
  int64_t string_length = -1;  // -1: the real length
  uint64_t tensor_count = 1;
  uint32_t n_dims = 2;
  std::vector<uint64_t> dims = {32, 2};
  uint32_t ggml_type = 0;  // F32
  uint64_t offset = 0;
  size_t data_bytes = 32 * 2 * 4;
};

std::vector<uint8_t> build_gguf(const GgufRecipe& r) {
  std::vector<uint8_t> out;
  auto put = [&](const void* p, size_t n) {
    const auto* bytes = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) out.push_back(bytes[i]);
  };
  auto u32 = [&](uint32_t v) { put(&v, 4); };
  auto u64 = [&](uint64_t v) { put(&v, 8); };
  auto str = [&](const std::string& s, int64_t length) {
    u64(length >= 0 ? static_cast<uint64_t>(length) : s.size());
    put(s.data(), s.size());
  };
  u32(r.magic);
  u32(r.version);
  u64(r.tensor_count);
  u64(r.kv_count);
  str("general.architecture", -1);
  u32(r.value_type);
  str("llama", r.string_length);
  str("w", -1);
  u32(r.n_dims);
  for (uint64_t d : r.dims) u64(d);
  u32(r.ggml_type);
  u64(r.offset);
  while (out.size() % 32 != 0) out.push_back(0);
  out.resize(out.size() + r.data_bytes, 0);
  return out;
}

TEST(Gguf, HandBuiltFileIsValid) {
  ScratchDir dir;
  testing::write_bytes(dir.file("ok.gguf"), build_gguf({}));
  auto file = GgufFile::open(dir.file("ok.gguf"));
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  EXPECT_EQ(file->get_string("general.architecture").value(), "llama");
  EXPECT_EQ(file->tensors().at(0).num_bytes, 256u);
}

TEST(Gguf, CorruptFilesAreOneLineErrors) {
  struct Case {
    const char* label;
    GgufRecipe recipe;
    StatusCode code;
    const char* needle;
  };
  std::vector<Case> cases;
  auto add = [&](const char* label, auto edit, StatusCode code, const char* needle) {
    GgufRecipe r;
    edit(r);
    cases.push_back({label, r, code, needle});
  };
  add("bad magic", [](GgufRecipe& r) { r.magic = 0x12345678; }, StatusCode::kCorrupt, "not a GGUF file");
  add("version 2", [](GgufRecipe& r) { r.version = 2; }, StatusCode::kUnsupported, "GGUF version 2");
  add("huge kv count", [](GgufRecipe& r) { r.kv_count = uint64_t{1} << 60; }, StatusCode::kCorrupt, "cannot fit");
  add(
      "huge tensor count", [](GgufRecipe& r) { r.tensor_count = uint64_t{1} << 62; }, StatusCode::kCorrupt,
      "cannot fit");
  add(
      "string past end", [](GgufRecipe& r) { r.string_length = 1 << 30; }, StatusCode::kCorrupt,
      "metadata key 'general.architecture': string length 1073741824");
  add("unknown value type", [](GgufRecipe& r) { r.value_type = 99; }, StatusCode::kCorrupt, "unknown value type 99");
  add("too many dims", [](GgufRecipe& r) { r.n_dims = 5; }, StatusCode::kCorrupt, "tensor 'w': n_dims 5");
  add(
      "unknown ggml type", [](GgufRecipe& r) { r.ggml_type = 77; }, StatusCode::kUnsupported,
      "tensor 'w': unknown ggml type id 77");
  add(
      "not a block multiple",
      [](GgufRecipe& r) {
        r.ggml_type = 2;
        r.dims = {16, 2};
      },
      StatusCode::kCorrupt, "tensor 'w': dims[0] = 16 is not a multiple of the Q4_0 block size 32");
  add(
      "misaligned offset",
      [](GgufRecipe& r) {
        r.offset = 8;
        r.data_bytes += 32;
      },
      StatusCode::kCorrupt, "tensor 'w': offset 8 is not a multiple of the alignment 32");
  add(
      "data past end", [](GgufRecipe& r) { r.data_bytes = 100; }, StatusCode::kCorrupt,
      "tensor 'w': bytes [0, 256) run past");
  add(
      "huge dims", [](GgufRecipe& r) { r.dims = {uint64_t{1} << 40, uint64_t{1} << 40}; }, StatusCode::kCorrupt,
      "overflows");
  ScratchDir dir;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    const std::string path = dir.file("bad.gguf");
    testing::write_bytes(path, build_gguf(c.recipe));
    auto file = GgufFile::open(path);
    ASSERT_FALSE(file.is_ok());
    EXPECT_EQ(file.status().code(), c.code) << file.status().to_string();
    EXPECT_NE(file.status().message().find(path), std::string::npos) << file.status().message();
    EXPECT_NE(file.status().message().find(c.needle), std::string::npos) << file.status().message();
    EXPECT_EQ(file.status().message().find('\n'), std::string::npos);
  }
}

TEST(Gguf, EveryTruncationIsAnErrorNotACrash) {
  const std::vector<uint8_t> good = testing::read_bytes(fixture("gguf_types.gguf"));
  ScratchDir dir;
  const std::string path = dir.file("t.gguf");
  for (size_t length = 0; length < good.size(); length += (length < 300 ? 1 : 29)) {
    testing::write_bytes(path, std::vector<uint8_t>(good.begin(), good.begin() + length));
    auto file = GgufFile::open(path);
    ASSERT_FALSE(file.is_ok()) << "length " << length;
    EXPECT_EQ(file.status().code(), StatusCode::kCorrupt) << file.status().to_string();
  }
}

// Found by tests/fuzz/fuzz_gguf: a tensor with a zero dim dequantised into an empty vector
// passed its null data() to memcpy.
TEST(Gguf, ZeroElementTensorDequantisesToNothing) {
  GgufRecipe recipe;
  recipe.dims = {32, 0};
  recipe.data_bytes = 0;
  ScratchDir dir;
  testing::write_bytes(dir.file("empty.gguf"), build_gguf(recipe));
  auto file = GgufFile::open(dir.file("empty.gguf"));
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  ASSERT_EQ(file->tensors().at(0).num_elements(), 0u);
  auto values = gguf_dequantize(file->tensors().at(0));
  ASSERT_TRUE(values.is_ok()) << values.status().to_string();
  EXPECT_TRUE(values->empty());
}

TEST(Gguf, UnsupportedTypeIsRefusedByDequantize) {
  GgufTensor tensor;
  tensor.name = "blk.0.ffn_up.weight";
  tensor.type = static_cast<GgmlType>(12);  // Q4_K
  tensor.dims = {256, 1};
  auto values = gguf_dequantize(tensor);
  ASSERT_FALSE(values.is_ok());
  EXPECT_EQ(values.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(values.status().message().find("'blk.0.ffn_up.weight': dequantising Q4_K"), std::string::npos);
}

}  // namespace
}  // namespace crosspoint
