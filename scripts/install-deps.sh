#!/usr/bin/env bash
# Installs everything ecd needs to build, test and run, from Debian 12 packages only.
# Safe to run any number of times: apt-get skips what is already installed.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git ccache
  libgrpc++-dev libgrpc-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libssl-dev
  libabsl-dev
  libisal-dev
  liburing-dev fio
  python3-zfec python3-pyeclib par2
  libsqlite3-dev sqlite3
  libcli11-dev
  nlohmann-json3-dev
  libcpp-httplib-dev
  libgtest-dev libgmock-dev googletest
  libbenchmark-dev
  prometheus-cpp-dev
  python3 python3-grpcio python3-protobuf python3-yaml curl
  prometheus
  tmux help2man groff-base
  clang-14 libclang-rt-14-dev clang-format clang-tidy
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "install-deps: done"
