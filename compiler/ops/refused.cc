// compiler/ops/refused.cc — ONNX ops Keel knows and refuses on purpose, each
// with the reason in one line instead of "unknown op".
//
// Keel compiles static shapes into a memory plan fixed at compile time, so ops
// whose output shape depends on tensor values (NonZero, Unique,
// NonMaxSuppression, TfIdfVectorizer, ImageDecoder) have no place in it;
// random sampling is not reproducible, so its results could never be checked;
// sequences, optionals and strings are not tensors of a fixed type.
#include "compiler/ops/op_util.h"
#include "compiler/ops/registry.h"

namespace keel::ops {
namespace {

void Refuse(Registry& r, const std::string& name, std::vector<int> versions, const std::string& why) {
  OpDef def;
  def.name = name;
  def.versions = std::move(versions);
  def.normalize = [why](ir::Node& node, int) -> Status { return NodeUnsupported(node, why); };
  r.Add(std::move(def));
}

}  // namespace

void RegisterRefusedOps(Registry& r) {
  const std::string value_shaped =
      "the output shape depends on the input values; Keel compiles static shapes (fixed memory plan)";
  Refuse(r, "NonZero", {9, 13}, value_shaped);
  Refuse(r, "Unique", {11, 28}, value_shaped);
  Refuse(r, "NonMaxSuppression", {10, 11}, value_shaped);
  Refuse(r, "TfIdfVectorizer", {9}, value_shaped);
  Refuse(r, "ImageDecoder", {20}, "decoding images is not supported (the output shape depends on the encoded data)");
  const std::string random = "random sampling is not supported (Keel runs deterministic inference)";
  for (const char* op : {"RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike"}) {
    Refuse(r, op, {1, 22}, random);
  }
  Refuse(r, "Bernoulli", {15, 22}, random);
  Refuse(r, "Multinomial", {7, 22}, random);
  const std::string sequences = "sequences are not supported (Keel compiles tensors of static shape)";
  for (const char* op : {"SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase", "SequenceInsert",
                         "SequenceLength", "ConcatFromSequence"}) {
    Refuse(r, op, {11}, sequences);
  }
  Refuse(r, "SequenceMap", {17}, sequences);
  Refuse(r, "SplitToSequence", {11, 24}, sequences);
  const std::string optionals = "optionals are not supported (Keel compiles tensors of static shape)";
  Refuse(r, "Optional", {15, 28}, optionals);
  Refuse(r, "OptionalGetElement", {15, 18, 28}, optionals);
  Refuse(r, "OptionalHasElement", {15, 18, 28}, optionals);
  const std::string strings = "string tensors are not supported";
  Refuse(r, "StringNormalizer", {10}, strings);
  for (const char* op : {"RegexFullMatch", "StringConcat", "StringSplit"}) Refuse(r, op, {20}, strings);
}

}  // namespace keel::ops
