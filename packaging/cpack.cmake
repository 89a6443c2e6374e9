# Install rules and the Debian package (CPack DEB). Included last from the top-level
# CMakeLists.txt, so the mcring target is already defined. The package ships the proxy only:
# mcring-bench (bench/) is the project's own experiment tool, built beside it but not installed.
#
#   make package                       configure + build + `cpack -G DEB` in build-pkg/
#   cpack -G DEB --config BUILD/CPackConfig.cmake -B OUTDIR
#
# Components: `programs` (the binaries; the Dockerfile installs only this one) and `system`
# (config, systemd unit, man page, docs). The .deb holds both (one package, no component split).

# --- what is installed ---------------------------------------------------------------------------
install(TARGETS mcring RUNTIME DESTINATION bin COMPONENT programs)

# Absolute destinations: these paths do not follow the install prefix (Debian layout). CPack's
# DEB generator stages them under its own DESTDIR.
install(FILES ${CMAKE_CURRENT_LIST_DIR}/mcring.yml DESTINATION /etc/mcring COMPONENT system)
install(FILES ${CMAKE_CURRENT_LIST_DIR}/mcring.service ${CMAKE_CURRENT_LIST_DIR}/mcring.socket
        DESTINATION /lib/systemd/system COMPONENT system)
install(FILES ${PROJECT_SOURCE_DIR}/docs/configuration.md DESTINATION share/doc/mcring
        COMPONENT system OPTIONAL)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/config/examples/ DESTINATION share/doc/mcring/examples
        COMPONENT system FILES_MATCHING PATTERN "*.yml")
# The Grafana dashboard, the Prometheus alert rules (and their tests) and the scrape examples.
install(DIRECTORY ${CMAKE_CURRENT_LIST_DIR}/monitoring/ DESTINATION share/doc/mcring/monitoring
        COMPONENT system FILES_MATCHING PATTERN "*.yml" PATTERN "*.json")

# Man pages: packaging/NAME.SECTION.md -> NAME.SECTION (go-md2man, from packaging/deps.sh build)
# -> gzip -9n: mcring(8).
find_program(MCRING_GO_MD2MAN go-md2man)
find_program(MCRING_GZIP gzip)
set(_man_pages mcring.8)
if(MCRING_GO_MD2MAN AND MCRING_GZIP)
  set(_man_outputs "")
  foreach(_page ${_man_pages})
    string(REGEX MATCH "[0-9]$" _section ${_page})
    set(_man_md ${PROJECT_BINARY_DIR}/packaging/${_page}.md)
    set(_man ${PROJECT_BINARY_DIR}/packaging/${_page})
    configure_file(${CMAKE_CURRENT_LIST_DIR}/${_page}.md ${_man_md} @ONLY)
    add_custom_command(
      OUTPUT ${_man}.gz
      COMMAND ${MCRING_GO_MD2MAN} -in ${_man_md} -out ${_man}
      COMMAND ${MCRING_GZIP} -9 -n -f ${_man}
      DEPENDS ${_man_md} ${CMAKE_CURRENT_LIST_DIR}/${_page}.md
      COMMENT "Generating man page ${_page}.gz"
      VERBATIM)
    list(APPEND _man_outputs ${_man}.gz)
    install(FILES ${_man}.gz DESTINATION share/man/man${_section} COMPONENT system)
  endforeach()
  add_custom_target(mcring-manpage ALL DEPENDS ${_man_outputs})
else()
  message(WARNING "go-md2man not found (packaging/deps.sh build installs it): the package will "
                  "have no man pages")
endif()

# Debian changelog (policy 12.7; lintian's no-changelog): one entry for the version built, dated
# by the last commit when configured in a git checkout (the package does not change with the
# time of the build), else by the time of configuring.
set(MCRING_CHANGELOG_DATE "")
find_package(Git QUIET)
if(GIT_FOUND AND EXISTS ${PROJECT_SOURCE_DIR}/.git)
  execute_process(COMMAND ${GIT_EXECUTABLE} log -1 --format=%aD
                  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                  OUTPUT_VARIABLE MCRING_CHANGELOG_DATE OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
endif()
if(NOT MCRING_CHANGELOG_DATE)
  string(TIMESTAMP MCRING_CHANGELOG_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
endif()
set(MCRING_DEB_VERSION "${PROJECT_VERSION}-1")  # CPACK_DEBIAN_PACKAGE_RELEASE below
set(MCRING_PACKAGE_CONTACT "mcring maintainers <mcring@localhost>"
    CACHE STRING "Maintainer field of the .deb (Name <email>)")
if(MCRING_GZIP)
  set(_changelog ${PROJECT_BINARY_DIR}/packaging/changelog.Debian)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/debian/changelog.in ${_changelog} @ONLY)
  add_custom_command(
    OUTPUT ${_changelog}.gz
    COMMAND ${MCRING_GZIP} -9 -n -k -f ${_changelog}
    DEPENDS ${_changelog}
    COMMENT "Generating changelog.Debian.gz"
    VERBATIM)
  add_custom_target(mcring-changelog ALL DEPENDS ${_changelog}.gz)
  install(FILES ${_changelog}.gz DESTINATION share/doc/mcring COMPONENT system)
endif()

# --- the .deb ------------------------------------------------------------------------------------
set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "mcring")
set(CPACK_PACKAGE_VENDOR "mcring")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${MCRING_PACKAGE_CONTACT}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "memcached-compatible consistent-hashing proxy")
# The extended description: lines under 80 columns (lintian).
set(CPACK_PACKAGE_DESCRIPTION
    "mcring speaks the memcached text and meta protocols to clients and shards
keys over pools of memcached servers with consistent hashing (ketama,
bit-compatible with twemproxy and common clients, plus jump, rendezvous and
maglev). It reads twemproxy's YAML, reloads it on SIGHUP or when the file
changes, and serves /healthz and Prometheus /metrics on an admin HTTP port.")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # mcring_VERSION-RELEASE_ARCH.deb
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)  # also in MCRING_DEB_VERSION above
set(CPACK_DEBIAN_PACKAGE_SECTION "net")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
# Shared-library dependencies from dpkg-shlibdeps (dpkg-dev); the maintainer scripts need
# useradd/userdel (passwd) on top of that.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "passwd")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "memcached")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# conffiles: /etc/mcring/mcring.yml survives upgrades and `dpkg -r`, goes on `dpkg -P`.
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_CURRENT_LIST_DIR}/debian/conffiles
    ${CMAKE_CURRENT_LIST_DIR}/debian/postinst
    ${CMAKE_CURRENT_LIST_DIR}/debian/prerm
    ${CMAKE_CURRENT_LIST_DIR}/debian/postrm)

include(CPack)
