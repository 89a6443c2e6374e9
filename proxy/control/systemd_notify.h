// systemd's readiness protocol (sd_notify, without libsystemd): under Type=notify, a datagram
// "READY=1" to $NOTIFY_SOCKET once mcring serves, with MAINPID so that after an upgrade
// (upgrade.h) systemd follows the new process instead of taking the old one's exit for the
// service's end (the unit needs NotifyAccess=all for that: packaging/mcring.service).
#pragma once

#include <string>

namespace mcring::core {

// Sends `state` ("READY=1\nMAINPID=123") when NOTIFY_SOCKET is set; false if it is not, or the
// send failed. The variable stays set: an upgrade's new process notifies too.
bool notifySystemd(const std::string& state);

}  // namespace mcring::core
