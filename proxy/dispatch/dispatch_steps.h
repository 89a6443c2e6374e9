// Dispatch's implementation of the steps backend connections hand replies on to
// (backend/dispatch_steps.h): each forwards to completion.h / unavailable.h.
#pragma once

#include "proxy/backend/dispatch_steps.h"

namespace mcring::core {

// One stateless instance, shared by every worker.
const DispatchSteps& dispatchSteps();

}  // namespace mcring::core
