#!/usr/bin/env bash
# Installs the Debian packages mcring needs that are missing. As root it runs apt-get; otherwise it
# prints the one command to run. Usage: packaging/deps.sh [build|test|bench|all]
set -euo pipefail

build_pkgs=(cmake make g++ pkg-config libevent-dev libxxhash-dev libyaml-cpp-dev doctest-dev
            libmd-dev libssl-dev libbenchmark-dev liburing-dev)
build_pkgs+=(go-md2man dpkg-dev file)  # make package: man page, dpkg-shlibdeps (CPack DEB)
test_pkgs=(memcached clang-format libmemcached-tools python3 python3-pymemcache python3-pylibmc php-cli php-memcached php-memcache ruby ruby-dalli nodejs netcat-openbsd prometheus clang-14
           libclang-rt-14-dev)
test_pkgs+=(chromium)  # headless browser of the console test (tests/integration/test_console.py)
test_pkgs+=(nutcracker)  # bench_compare_smoke: bench/compare.py against twemproxy
test_pkgs+=(dnsmasq-base)  # test_discovery: a real DNS server on loopback for servers_dns
bench_pkgs=(gnuplot-nox)

want=()
case "${1:-test}" in
  build) want=("${build_pkgs[@]}") ;;
  test) want=("${build_pkgs[@]}" "${test_pkgs[@]}") ;;
  bench | all) want=("${build_pkgs[@]}" "${test_pkgs[@]}" "${bench_pkgs[@]}") ;;
  *) echo "usage: $0 [build|test|bench|all]" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "mcring needs these Debian packages: ${missing[*]}" >&2
  echo "run: sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
