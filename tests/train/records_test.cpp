// Tests for train/records: a record built with an undeclared key, without a declared one, or
// with a value of another type is an internal error; the schema lists every key once per kind.
#include "train/records.h"

#include <set>

#include <gtest/gtest.h>

#include "util/error.h"

namespace sl {
namespace {

using nlohmann::json;

json an_eval_record() {
  return {{"step", 10}, {"kind", "eval"}, {"val_loss", 2.5}, {"train_loss", nullptr}};
}

TEST(RecordSchema, AcceptsARecordWithExactlyTheDeclaredKeys) {
  EXPECT_EQ(checked_record(an_eval_record()), an_eval_record());
}

TEST(RecordSchema, RefusesAnUndeclaredKey) {
  json r = an_eval_record();
  r["val_los"] = 1.0;
  EXPECT_THROW(checked_record(r), InternalError);
}

TEST(RecordSchema, RefusesARecordWithoutADeclaredKey) {
  json r = an_eval_record();
  r.erase("train_loss");
  EXPECT_THROW(checked_record(r), InternalError);
}

TEST(RecordSchema, RefusesAValueOfAnotherType) {
  json r = an_eval_record();
  r["step"] = 1.5;
  EXPECT_THROW(checked_record(r), InternalError);
}

TEST(RecordSchema, RefusesAnUndeclaredKind) {
  EXPECT_THROW(checked_record({{"step", 0}, {"kind", "stats"}}), InternalError);
}

TEST(RecordSchema, AnOptionalKeyMayBeLeftOut) {
  json layers = {{"step", 0}, {"kind", "layers"}, {"loss", 3.0}};
  for (const RecordField& f : metrics_record_kind("layers").fields)
    if (f.key != "step" && f.key != "kind" && f.key != "loss" && f.key != "params")
      layers[f.key] = nullptr;
  EXPECT_NO_THROW(checked_record(layers)) << "params is written only with log.params";
}

TEST(RecordSchema, NamesEveryKeyOncePerKindAndInTheMarkdownTable) {
  const std::string md = records_markdown();
  for (const RecordKind& k : metrics_record_kinds()) {
    std::set<std::string> keys;
    for (const RecordField& f : k.fields) {
      EXPECT_TRUE(keys.insert(f.key).second) << k.kinds[0] << " declares " << f.key << " twice";
      EXPECT_NE(md.find("| `" + f.key + "` |"), std::string::npos) << f.key;
    }
  }
  for (const RecordField& f : summary_fields())
    EXPECT_NE(md.find("| `" + f.key + "` |"), std::string::npos) << f.key;
  EXPECT_EQ(records_json().at("metrics.jsonl").size(), metrics_record_kinds().size());
}

}  // namespace
}  // namespace sl
