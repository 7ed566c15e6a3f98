#!/usr/bin/env bash
# The writable wiki: a second MediaWiki 1.39 (the same Debian code as mediawiki.sh, whose functions it uses)
# with its own SQLite database under .run/mediawiki-writable/, served on 127.0.0.1:8782. Tests may change it:
# Admin edits, moves, deletes, undeletes, applies revision deletion and imports through the API. Seeded with
# the small pages of tools/wikigen's plan (a few hundred revisions, their tags applied as on the seeded wiki)
# and a bot password for Admin (appid `harvester`, grants basic + highvolume), whose credentials go to
# .run/mediawiki-writable/credentials.json (mode 600) in the format spawns read (BW_CREDENTIALS_FILE):
#   {"writable-bot": {"type": "botpassword", "username": "Admin@harvester", "password": "..."}}
# beside a second one, `writable-overseer`: user Overseer (group `suppress`) through a bot password whose only
# extra grant is `viewrestrictedlogs`, so it reads the suppression log and nothing hidden (the change feed's
# reader of suppressions).
# up | down | status | rebuild (rebuild: a fresh copy of the seed, dropping what tests changed).
# BW_MW_WRITABLE_PORT and BW_MW_WRITABLE_DIR move it.
set -euo pipefail
cd "$(dirname "$0")/../.."
MW_PORT=${BW_MW_WRITABLE_PORT:-8782}
MW_DIR=${BW_MW_WRITABLE_DIR:-$PWD/.run/mediawiki-writable}
MW_DBNAME=writable_wiki
MW_SITENAME="BlackWidow Writable Wiki"
MW_NAME=mediawiki-writable
# shellcheck source=mediawiki.sh
source "$PWD/scripts/services/mediawiki.sh"

WRITABLE_VERSION=2              # bump when the seed or the settings below change: `up` rebuilds
MAX_REVISIONS=30                # pages of wikigen's plan with at most this many revisions
BOT_APP=harvester
BOT_GRANTS=basic,highvolume
CREDENTIALS=$DIR/credentials.json
CREDENTIAL_NAME=writable-bot
OVERSEER_APP=feed
OVERSEER_GRANTS=basic,highvolume,viewrestrictedlogs
OVERSEER_CREDENTIAL=writable-overseer

want_stamp() {
  echo "writable=$WRITABLE_VERSION wikigen=$("$PY" -m tools.wikigen --version) seed=$SEED port=$PORT" \
       "pages<=$MAX_REVISIONS bot=$BOT_APP:$BOT_GRANTS overseer=$OVERSEER_APP:$OVERSEER_GRANTS"
}

needs_build() { [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$(want_stamp)" ] || [ ! -s "$CREDENTIALS" ]; }

generate_seed() {
  "$PY" - "$SEEDDIR" "$SEED" "$MAX_REVISIONS" <<'PYEOF'
import sys
from pathlib import Path

from tools import wikigen

out, seed, most = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
wiki = wikigen.generate(seed, plan=tuple(p for p in wikigen.PLAN if p[2] <= most))
wikigen.write(wiki, out)
print(f"writable seed: {len(wiki.pages)} pages, {sum(len(p.revisions) for p in wiki.pages)} revisions -> {out}")
PYEOF
}

extra_settings() {
  cat <<'PHPEOF'
# --- writable wiki (scripts/services/mediawiki-writable.sh) ---
# Core defaults, stated because tests rely on them: sysops import (uploads of XML too), delete and undelete;
# bot passwords are on.
$wgEnableBotPasswords = true;
$wgGroupPermissions['sysop']['import'] = true;
$wgGroupPermissions['sysop']['importupload'] = true;
$wgGroupPermissions['sysop']['delete'] = true;
$wgGroupPermissions['sysop']['undelete'] = true;
PHPEOF
}

after_seed() {
  apply_tags || return 1
  rm -f "$CREDENTIALS"
  make_bot_password Admin "$BOT_APP" "$BOT_GRANTS" "$CREDENTIAL_NAME" || return 1
  # the account's own password is random and never written: only its bot password is used
  MW_CONFIG_FILE="$WIKI/LocalSettings.php" php "$MWCODE/maintenance/createAndPromote.php" \
    --custom-groups suppress Overseer "$("$PY" -c 'import secrets; print(secrets.token_urlsafe(24))')" >/dev/null \
    || { log "createAndPromote.php Overseer failed"; return 1; }
  make_bot_password Overseer "$OVERSEER_APP" "$OVERSEER_GRANTS" "$OVERSEER_CREDENTIAL"
}

# make_bot_password USER APPID GRANTS NAME: createBotPassword.php prints "... username:'USER@APPID' and
# password:'...'"; the secret goes only into the credentials file, under NAME.
make_bot_password() {
  local out user password
  out=$(MW_CONFIG_FILE="$WIKI/LocalSettings.php" php "$MWCODE/maintenance/createBotPassword.php" \
    --appid "$2" --grants "$3" "$1" 2>&1) || { log "createBotPassword.php failed: $out"; return 1; }
  user=$(sed -n "s/.*username:'\([^']*\)'.*/\1/p" <<<"$out")
  password=$(sed -n "s/.*password:'\([^']*\)'.*/\1/p" <<<"$out")
  if [ -z "$user" ] || [ -z "$password" ]; then
    log "createBotPassword.php printed no credentials"; return 1
  fi
  (
    umask 077
    BOT_USER=$user BOT_PASSWORD=$password "$PY" - "$CREDENTIALS" "$4" <<'PYEOF'
import json, os, sys
from pathlib import Path

path = Path(sys.argv[1])
entries = json.loads(path.read_text()) if path.exists() else {}
entries[sys.argv[2]] = {"type": "botpassword", "username": os.environ["BOT_USER"],
                        "password": os.environ["BOT_PASSWORD"]}
tmp = path.with_suffix(".tmp")
tmp.write_text(json.dumps(entries, indent=2) + "\n")
tmp.replace(path)
PYEOF
  )
  log "bot password $user (grants $3) written to ${CREDENTIALS#"$ROOT"/} as $4"
}

main "$@"
