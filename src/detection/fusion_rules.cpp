// fusion_rules.json → FusionRules: BF_<op1>_<op2> pairs, BF chains of more than
// two ops, MON. obey null or missing counts as false; other rules are ignored, as nn-Meter's rule reader
// does.
#include <fmt/format.h>

#include <sstream>

#include "nnmeter/prediction.h"

namespace nnmeter {

namespace {

// Operator names of older nn-Meter rule files (the builtin CPU predictor's, issue #65).
std::vector<std::string> canonical_ops(const std::string& op) {
  if (op == "dense") return {"fc"};
  if (op == "pooling") return {"maxpool", "avgpool"};
  if (op == "gap" || op == "global-avgpool") return {"globalavgpool"};
  if (op == "SE") return {"se"};
  return {op};
}

std::vector<std::string> split_ops(const std::string& rule) {
  std::vector<std::string> ops;
  std::stringstream ss(rule.substr(3));
  for (std::string op; std::getline(ss, op, '_');)
    if (!op.empty()) ops.push_back(op);
  return ops;
}

bool read_obey(const std::string& rule, const Json& value, const std::string& origin) {
  if (!value.is_object())
    throw Error(fmt::format("fusion rule '{}' in {} must be an object like {{\"obey\": true}}", rule, origin));
  if (!value.contains("obey") || value["obey"].is_null()) return false;
  const Json& obey = value["obey"];
  if (obey.is_boolean()) return obey.get<bool>();
  // nn-Meter stored MON's result as the winning case name in old versions; a non-empty name was truthy.
  if (obey.is_string()) return !obey.get<std::string>().empty();
  if (obey.is_number()) return obey.get<double>() != 0;
  throw Error(fmt::format("fusion rule '{}' in {} has an 'obey' that is not true, false or null", rule, origin));
}

}  // namespace

FusionRules FusionRules::from_json(const Json& rules, const std::string& origin) {
  if (!rules.is_object())
    throw Error(origin + " is not a fusion rule file: expected an object like {\"BF_conv_relu\": {\"obey\": true}}");
  FusionRules out;
  for (const auto& [name, value] : rules.items()) {
    if (name == "MON") {
      out.multiple_outbounds = read_obey(name, value, origin);
      continue;
    }
    if (name.rfind("BF_", 0) != 0) continue;
    const bool obey = read_obey(name, value, origin);
    const auto ops = split_ops(name);
    if (ops.size() < 2) continue;
    if (ops.size() == 2) {
      for (const auto& a : canonical_ops(ops[0]))
        for (const auto& b : canonical_ops(ops[1])) {
          out.tested.insert({a, b});
          if (obey) out.fusible.insert({a, b});
        }
    } else if (obey) {
      std::vector<std::string> chain;
      for (const auto& op : ops) chain.push_back(canonical_ops(op).front());
      out.chains.push_back(std::move(chain));
    }
  }
  return out;
}

bool FusionRules::can_fuse(const std::string& root, const std::string& consumer) const {
  // The rule tester has no relu6 (or swish) case on many backends; a backend that fuses relu fuses the
  // clipped relu the same way (one eltwise post-op), and swish is an x·gate(x) activation like hswish.
  auto stand_in = [](const std::string& op) -> std::string {
    if (op == "relu6") return "relu";
    if (op == "swish") return "hswish";
    return op;
  };
  std::pair<std::string, std::string> key{root, consumer};
  if (!tested.count(key)) key = {stand_in(root), stand_in(consumer)};
  return fusible.count(key) != 0;
}

}  // namespace nnmeter
