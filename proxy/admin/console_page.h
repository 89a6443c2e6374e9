// The console served at GET / on the admin port: one page, its HTML, CSS and JavaScript from
// proxy/admin/console/ inlined and compiled into the binary at build time (embed.cmake), so it
// needs no files, no CDN and no network. It reads the admin endpoint's JSON views.
#pragma once

#include <string_view>

namespace mcring::core {

std::string_view consolePage();

}  // namespace mcring::core
