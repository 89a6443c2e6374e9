// Dispatch's DirectReplyObserver (backend/direct_reply_observer.h): what hot-key spread,
// warm-up and read failover make of a Direct request's reply, which the backend connection
// parses without knowing them. Dispatch gives a request this observer where it gives it the
// feature state that needs it (a spread copy read or a spread write, a warm-up read, a
// replicated mg). Worker-thread only.
#pragma once

#include "proxy/backend/direct_reply_observer.h"
#include "proxy/backend/pending_request.h"

namespace mcring::core {

// One stateless instance, shared by every worker.
const DirectReplyObserver& directFeatures();

// r's Direct replies go to directFeatures() from now on.
inline void observeDirect(PendingRequest& r) {
  r.observer = &directFeatures();
}

}  // namespace mcring::core
