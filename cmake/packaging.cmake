# Shipping (issue 20): `cmake --install` rules and a Debian package made by CPack.
#   bin/gpufit, bin/kubectl-gpufit (a relative symlink: kubectl runs plugins found on PATH as
#   `kubectl-NAME ARGS...`, so `kubectl gpufit plan ...` is `gpufit plan ...`),
#   share/man/man1/gpufit.1.gz (made from the binary's help at build time: target gpufit_man),
#   share/gpufit/ (data/: the catalog and MIG profiles, for reference: the binary embeds them),
#   share/doc/gpufit/ (README.md, docs/, examples/).
# `make package` writes build/gpufit_<version>_<arch>.deb; its Depends are the Debian shared
# libraries the binary links, found by dpkg-shlibdeps (Debian dpkg-dev). The ctest test
# `package_deb_install` (label `package`) builds the .deb, installs it into a scratch root and
# runs it through kubectl (packaging/deb_install_test.sh).
include(GNUInstallDirs)

install(TARGETS gpufit RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# CPack 3.25 counts the link as a second copy of gpufit in the .deb's Installed-Size (14 MB, not 7).
file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/packaging)
file(CREATE_LINK gpufit ${CMAKE_CURRENT_BINARY_DIR}/packaging/kubectl-gpufit SYMBOLIC)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/packaging/kubectl-gpufit DESTINATION ${CMAKE_INSTALL_BINDIR})

# The man page, made from the binary's own help (packaging/make_man_page.sh): help2man from
# `gpufit --help` and `--version`, the hand-written sections of packaging/gpufit.h2m, and one
# section per command from `gpufit CMD --help`.
find_program(GPUFIT_HELP2MAN help2man REQUIRED)  # Debian help2man (scripts/bootstrap)
set(GPUFIT_MAN_PAGE ${CMAKE_CURRENT_BINARY_DIR}/packaging/gpufit.1.gz)
add_custom_command(
  OUTPUT ${GPUFIT_MAN_PAGE}
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/packaging/make_man_page.sh ${GPUFIT_HELP2MAN} $<TARGET_FILE_DIR:gpufit>
          ${CMAKE_CURRENT_SOURCE_DIR}/packaging/gpufit.h2m ${GPUFIT_MAN_PAGE}
  DEPENDS gpufit ${CMAKE_CURRENT_SOURCE_DIR}/packaging/make_man_page.sh ${CMAKE_CURRENT_SOURCE_DIR}/packaging/gpufit.h2m
  COMMENT "help2man: gpufit.1.gz"
  VERBATIM)
# Built with everything, except in the sanitizer build, which packages nothing.
if(NOT GPUFIT_SANITIZE)
  set(GPUFIT_MAN_IN_ALL ALL)
endif()
add_custom_target(gpufit_man ${GPUFIT_MAN_IN_ALL} DEPENDS ${GPUFIT_MAN_PAGE})
install(FILES ${GPUFIT_MAN_PAGE} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

install(DIRECTORY data/ DESTINATION ${CMAKE_INSTALL_DATADIR}/gpufit)
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs examples DESTINATION ${CMAKE_INSTALL_DOCDIR})

# The Debian package.
set(GPUFIT_DEB_MAINTAINER "gpufit maintainers <maintainers@users.noreply.a-seed-9d18f622.example>"
    CACHE STRING "Maintainer field of the .deb")
set(GPUFIT_HOMEPAGE_URL "" CACHE STRING "Homepage field of the .deb (none when empty)")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME gpufit)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT ${GPUFIT_DEB_MAINTAINER})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "right-size and co-locate GPU workloads from their real telemetry")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "${CPACK_PACKAGE_DESCRIPTION_SUMMARY}
gpufit reads a GPU cluster's DCGM telemetry (GPU memory and duty cycle per pod)
and plans which GPU each pod needs, which pods can share a GPU without running
out of GPU memory, MIG layouts, inference replicas and spot training jobs, and
checks each plan by a walk-forward backtest. It runs as `gpufit` or as the
kubectl plugin `kubectl gpufit`.")
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
if(GPUFIT_HOMEPAGE_URL)
  set(CPACK_DEBIAN_PACKAGE_HOMEPAGE ${GPUFIT_HOMEPAGE_URL})
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # gpufit_0.1.0_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Debian's kubectl is kubernetes-client; the Kubernetes and Google Cloud repositories call theirs
# kubectl (the same /usr/bin/kubectl): either satisfies it, and apt does not try to replace one.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "kubernetes-client | kubectl")
set(CPACK_STRIP_FILES ON)
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
    OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
include(CPack)

# Not in the sanitizer build: a package of an instrumented binary means nothing.
if(NOT GPUFIT_SANITIZE)
  add_test(NAME package_deb_install
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/packaging/deb_install_test.sh ${CMAKE_CPACK_COMMAND}
                   ${CMAKE_CURRENT_BINARY_DIR}/CPackConfig.cmake ${PROJECT_VERSION})
  set_tests_properties(package_deb_install PROPERTIES LABELS package TIMEOUT 300)
endif()
