// Seed corpus for fuzz_net_input: valid frames addressed to the harness's
// interface (02:00:00:00:00:01, 10.0.0.1/24), so mutants reach deep paths.
#pragma once

#include <cstdint>
#include <vector>

std::vector<std::vector<uint8_t>> fuzz_seeds();
