# Helpers shared by the service scripts (sourced, never run): timing and Debian package installs.

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# apt_install PKG...: install Debian packages without letting their maintainer scripts start a system
# service (mediawiki pulls in apache2 on :80, nginx starts its default site on :80; ours run on 127.0.0.1).
apt_install() {
  local guard=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    guard=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' >"$guard" && chmod +x "$guard"
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
    "$@" >/dev/null
  if [ -n "$guard" ]; then rm -f "$guard"; trap - EXIT; fi
}
