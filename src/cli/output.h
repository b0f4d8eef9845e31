// How the CLI talks to the user: nn-Meter's "(nn-Meter) " lines on stdout.
#pragma once

#include <spdlog/spdlog.h>

#include <string>

namespace nnmeter::cli {

// One result line at nn-Meter's default level (shown unless --json).
inline void print_line(const std::string& text) { spdlog::info("{}", text); }

}  // namespace nnmeter::cli
