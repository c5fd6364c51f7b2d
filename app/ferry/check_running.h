// `ferry -- --check --config FILE --running PREFIX`: asks the ferry running
// with EAL --file-prefix PREFIX, over its telemetry socket, what a reload of
// FILE would do (/ferry/reload,check,<FILE>: nothing is applied), and prints
// it: the changes it would apply, or why it would be refused.
#pragma once

#include <string>

namespace ferry::app {

// The exit status: 0 when the running ferry would apply FILE (or it changes
// nothing), 1 when it would refuse it or cannot be asked.
int check_against_running(const std::string &prefix, const std::string &config_path);

}  // namespace ferry::app
