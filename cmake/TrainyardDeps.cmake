# Every dependency comes from a Debian 12 package (see README "Dependencies").
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.11 REQUIRED)   # nlohmann-json3-dev
find_package(yaml-cpp 0.7 REQUIRED)         # libyaml-cpp-dev (target `yaml-cpp`, not namespaced)
find_package(CLI11 2.1 REQUIRED)            # libcli11-dev
find_package(spdlog 1.10 REQUIRED)          # libspdlog-dev
find_package(SQLite3 REQUIRED)              # libsqlite3-dev
find_package(OpenSSL REQUIRED)              # libssl-dev (sha256, md5)
find_package(PkgConfig REQUIRED)
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)  # libcpp-httplib-dev ships only a .pc
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)  # libpcre2-dev (gcloud filters: `~`)

add_library(trainyard_yaml INTERFACE)
target_link_libraries(trainyard_yaml INTERFACE yaml-cpp)
add_library(trainyard::yaml ALIAS trainyard_yaml)
