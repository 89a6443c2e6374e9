// `mcring plan`: what a config change would move, before applying it.
#pragma once

namespace mcring::cli {

int runPlanCommand(int argc, char** argv);

}  // namespace mcring::cli
