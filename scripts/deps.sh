#!/usr/bin/env bash
# Installs the Debian packages the build and tests need, only when one is missing
# (services the install starts, etcd and Prometheus, are stopped again).
# --build: only what building and installing need (make install), no test tools.
# --bench adds what the pressure benchmark compares against and draws with
# (memcached, redis, matplotlib); their services are not left running.
set -euo pipefail
pkgs=(cmake make gcc pkg-config libuv1-dev libprotobuf-c-dev
      protobuf-c-compiler libyaml-dev libxxhash-dev liburing-dev libmicrohttpd-dev
      libbsd-dev uthash-dev libsodium-dev python3 python3-dev python3-numpy libdlpack-dev
      libcurl4-openssl-dev libjson-c-dev # the etcd client (src/net/etcd_client.c)
      python3-setuptools python3-wheel python3-pip) # pip install . (setup.py)
test_pkgs=(clang libclang-rt-14-dev fio python3-venv
      prometheus # promtool checks /metrics; a Prometheus server scrapes it (test_http.sh)
      chromium curl # the web page test loads the master's page headless (test_http.sh)
      python3-torch # optional for users: the tests of torch tensors (tests/python)
      etcd-server) # a real etcd for its tests (tests/util/etcd_proc.c)
bench=0
case "${1:-}" in
  --build) ;;
  --bench) bench=1; pkgs+=("${test_pkgs[@]}" memcached redis-server python3-matplotlib) ;;
  *) pkgs+=("${test_pkgs[@]}") ;;
esac
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
  # Debian starts etcd and Prometheus as services on install; the tests run
  # their own on free ports. Stop only what this install just started.
  for pair in etcd-server:etcd prometheus:prometheus; do
    pkg=${pair%%:*} svc=${pair##*:}
    case " ${missing[*]} " in *" $pkg "*) ;; *) continue ;; esac
    if command -v service >/dev/null && service "$svc" status >/dev/null 2>&1; then
      $SUDO service "$svc" stop >/dev/null 2>&1 || true
    fi
  done
fi
if [ "$bench" = 1 ]; then
  # Debian starts these as services on install: the benchmark runs its own.
  for svc in memcached redis-server; do
    if command -v service >/dev/null && service "$svc" status >/dev/null 2>&1; then
      ${SUDO:-} service "$svc" stop >/dev/null 2>&1 || true
    fi
  done
fi
