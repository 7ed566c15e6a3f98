#!/usr/bin/env bash
# Debian's Chromium, for the dashboard test that drives the hub's page in a headless browser.
# up: install the packages if missing (fast no-op when present). status: 0 iff chromium runs.
set -euo pipefail
CHROMIUM=${BW_CHROMIUM:-/usr/bin/chromium}

log() { echo "browser: $*"; }

present() { [ -x "$CHROMIUM" ] && fc-list 2>/dev/null | grep -qi dejavu; }

up() {
  if present; then
    log "$CHROMIUM present"
    return
  fi
  log "installing Debian packages (chromium fonts-dejavu-core)"
  local t0=$SECONDS
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
    chromium fonts-dejavu-core fontconfig >/dev/null
  present || { log "chromium is still missing after the install"; exit 1; }
  log "installed in $((SECONDS - t0)) s: $("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM")"
}

status() {
  if [ -x "$CHROMIUM" ] && "$CHROMIUM" --version >/dev/null 2>&1; then
    log "$("$CHROMIUM" --version)"
  else
    log "not installed"; return 1
  fi
}

case "${1:-}" in
  up) up ;;
  status) status ;;
  *) echo "usage: $0 up|status" >&2; exit 2 ;;
esac
