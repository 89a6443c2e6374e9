// `mcring route`: which server each key goes to, through the proxy's own routing code.
#pragma once

namespace mcring::cli {

int runRouteCommand(int argc, char** argv);

}  // namespace mcring::cli
