// The predictor folder's tree cache: <kernel>.trees beside each <kernel>.json holds what
// predict() needs of that model (trees, power-law baseline, feature layout, target transform) in a compact
// binary form, so loading a predictor does not parse megabytes of XGBoost JSON in every process.
// The JSON stays the truth: a cache is used only when it was made of a file with the same content
// fingerprint (length included) by the same nn-meter; a stale, damaged or foreign cache is ignored and rewritten, never an
// error. Written atomically when a predictor is built and whenever a load finds it missing or stale; a
// folder that cannot be written (read-only install) just loads from JSON each time.
#pragma once

#include "nnmeter/regressor.h"

namespace nnmeter {

class ModelCache {
 public:
  static fs::path file_for(const fs::path& model_file);  // <kernel>.json → <kernel>.trees

  // The model of `model_file`, with KernelRegressor::load's errors for a missing or damaged file; from the
  // cache when it matches the file, else parsed from it (and the cache rewritten).
  static KernelRegressor load(const fs::path& model_file);

  // Writes the cache of `model_file`, which `model` was just saved to.
  static void write(const KernelRegressor& model, const fs::path& model_file);

 private:
  static void store(const KernelRegressor& model, const fs::path& model_file, std::string_view json_text);
};

}  // namespace nnmeter
