#!/usr/bin/env bash
# libfaketime (Debian) for tests that run a spawn whose wall clock is off: LD_PRELOAD it with FAKETIME="+2"
# and the process reads the wall clock 2 s ahead, as a host whose NTP has failed would. No server: up
# installs the library if missing and prints where it is; down does nothing.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/services/common.sh
LIB=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1

case "${1:-up}" in
  up)
    if [ ! -e "$LIB" ]; then
      echo "faketime: installing Debian package libfaketime"
      apt_install libfaketime
    fi
    echo "faketime: $LIB"
    ;;
  down) ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
