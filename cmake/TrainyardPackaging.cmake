# What `cmake --install` adds besides the binaries, and the Debian package (CPack, DEB
# generator; scripts/package.sh; docs/installation.md). Binaries install by GNUInstallDirs:
# <bindir>/trainyardd, trainyard, trainyard-tuner and <libexecdir>/trainyard/trainyard-launcher,
# which trainyardd finds relative to itself. The Python files replicas need (hypertune,
# trainyard_algorithms) and the web console are embedded in trainyardd.
set(TRAINYARD_SYSTEMD_UNIT_DIR "lib/systemd/system" CACHE STRING
    "Where the systemd unit goes, relative to the install prefix (or absolute)")
install(FILES ${PROJECT_SOURCE_DIR}/packaging/trainyard.service
        DESTINATION ${TRAINYARD_SYSTEMD_UNIT_DIR})
# <sysconfdir>/trainyard: /etc/trainyard for the prefix /usr (GNUInstallDirs), <prefix>/etc else.
install(FILES ${PROJECT_SOURCE_DIR}/packaging/config.yaml
        DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}/trainyard)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/docs/installation.md
              ${PROJECT_SOURCE_DIR}/docs/backup.md ${PROJECT_SOURCE_DIR}/docs/configuration.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(CPACK_PACKAGE_NAME trainyard)
set(CPACK_PACKAGE_VENDOR "Trainyard")
set(CPACK_PACKAGE_CONTACT "Trainyard maintainers <trainyard@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "self-hosted training-job service with AI Platform Training's interfaces")
set(CPACK_PACKAGE_DESCRIPTION
    "trainyardd serves AI Platform Training's ml v1 jobs API, a Cloud Storage JSON API subset
 and a web console; it runs training jobs (Python packages or containers) on this machine or a
 Slurm cluster. The package runs it as the systemd service trainyard (user trainyard, settings
 in /etc/trainyard/config.yaml, data in /var/lib/trainyard).")
set(CPACK_GENERATOR DEB)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION misc)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Shared libraries from dpkg-shlibdeps (libsqlite3-0, libyaml-cpp0.7, libspdlog1.10, libssl3,
# ...), plus what the service runs: Python with venv and pip for trainer packages, adduser for
# the system user.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "python3, python3-venv, python3-pip, python3-setuptools, adduser")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-numpy, python3-sklearn, python3-xgboost, podman, runc")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3-torch, slurm-client")
set(TRAINYARD_DEB_RELEASE 1 CACHE STRING "The Debian release of the package (another build of one version)")
set(CPACK_DEBIAN_PACKAGE_RELEASE ${TRAINYARD_DEB_RELEASE})
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/debian/conffiles
    ${PROJECT_SOURCE_DIR}/packaging/debian/postinst
    ${PROJECT_SOURCE_DIR}/packaging/debian/prerm
    ${PROJECT_SOURCE_DIR}/packaging/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
