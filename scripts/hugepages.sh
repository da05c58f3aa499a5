#!/usr/bin/env bash
# Reserves enough 2 MiB huge pages for SIZE bytes of owner segments (root only;
# only ever raises vm.nr_hugepages). Owners use them when enough are free
# (fluxonkv_spec.use_hugepages, default true) and fall back to 4 KiB pages
# otherwise. See src/owner/segment.h for why they matter on virtual machines.
set -euo pipefail
bytes=${1:?usage: hugepages.sh BYTES}
want=$(( (bytes + 2097151) / 2097152 ))
if [ "$(id -u)" -ne 0 ]; then
  echo "hugepages: not root; owners will use 4 KiB pages (slower first touch)" >&2
  exit 0
fi
free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
total=$(cat /proc/sys/vm/nr_hugepages)
if [ "$free" -lt "$want" ]; then
  echo $(( total + want - free )) > /proc/sys/vm/nr_hugepages || true
fi
free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
echo "hugepages: $free free of $(cat /proc/sys/vm/nr_hugepages) reserved ($want wanted)" >&2
