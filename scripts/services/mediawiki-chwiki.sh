#!/usr/bin/env bash
# The Chamorro wiki: a third MediaWiki 1.39 (the same Debian code as mediawiki.sh, whose functions it uses) holding
# the real Chamorro Wikipedia full-history dump (../shared/data/chwiki-latest-pages-meta-history.xml.7z: 2,293
# pages, 13,598 revisions), imported with importDump.php under the dump's own user names, served on
# 127.0.0.1:8784. It is the API's truth for a whole wiki bootstrapped from its dump files.
#
# An import gives every page and revision this wiki's own ids, so once imported the wiki is dumped again with
# dumpBackup.php --full into seed/local-dump.xml, the file a set subscription reads; seed/dumped_at holds the
# time that dump began (ISO 8601). A store filled from that dump and caught up through this wiki's API can then be
# compared with the API revision by revision. Tests change the wiki afterwards (edits, new pages, moves), which is
# what the catch-up reads.
# up | down | status | rebuild (rebuild: import again, dropping what tests changed).
# BW_MW_CHWIKI_PORT and BW_MW_CHWIKI_DIR move it.
set -euo pipefail
cd "$(dirname "$0")/../.."
MW_PORT=${BW_MW_CHWIKI_PORT:-8784}
MW_DIR=${BW_MW_CHWIKI_DIR:-$PWD/.run/mediawiki-chwiki}
MW_DBNAME=chwiki
MW_SITENAME="BlackWidow Chamorro Wiki"
MW_NAME=mediawiki-chwiki
# shellcheck source=mediawiki.sh
source "$PWD/scripts/services/mediawiki.sh"

CHWIKI_VERSION=1                # bump when the import or the settings change: `up` rebuilds
CHWIKI_7Z=$ROOT/../shared/data/chwiki-latest-pages-meta-history.xml.7z

want_stamp() {
  [ -f "$CHWIKI_7Z" ] || { log "missing $CHWIKI_7Z (../shared/data, see its README)"; exit 1; }
  echo "chwiki=$CHWIKI_VERSION dump=$(stat -c %s "$CHWIKI_7Z") port=$PORT"
}

# dump.xml: the published dump unpacked; users.txt: the names of its registered editors, created before the import
# so that their revisions keep their names (an import credits unknown names to "imported>Name").
generate_seed() {
  rm -rf "$SEEDDIR"
  mkdir -p "$SEEDDIR"
  "$ROOT/.venv/bin/python" - "$CHWIKI_7Z" "$SEEDDIR" <<'PYEOF'      # py7zr: a project dependency
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import py7zr

archive, out = Path(sys.argv[1]), Path(sys.argv[2])
with py7zr.SevenZipFile(archive) as z:
    names = z.getnames()
    z.extractall(out)
(out / names[0]).rename(out / "dump.xml")
users, revisions = set(), 0
for _, el in ET.iterparse(out / "dump.xml"):
    tag = el.tag.rsplit("}", 1)[-1]
    if tag == "username" and el.text and ">" not in el.text:   # "en>Name": an interwiki import's credit
        users.add(el.text)
    elif tag == "revision":
        revisions += 1
        el.clear()
(out / "users.txt").write_text("".join(f"{u}\n" for u in sorted(users) if u != "Admin"), encoding="utf-8")
print(f"chwiki seed: {revisions} revisions by {len(users)} named users -> {out}")
PYEOF
}

# Module pages (56 revisions) have Scribunto's content model: the extension ships with Debian's mediawiki. Nothing
# here runs Lua (imports skip link updates; the API lists revisions without parsing them).
extra_settings() {
  cat <<'PHPEOF'
# --- the Chamorro wiki (scripts/services/mediawiki-chwiki.sh) ---
wfLoadExtension( 'Scribunto' );
PHPEOF
}

after_seed() {
  local t1
  t1=$(now)
  "$PY" -c 'import datetime; print(datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat())' \
    >"$SEEDDIR/dumped_at.tmp"
  sleep 1.1                     # revisions are stamped in seconds: nothing made after the dump shares its second
  MW_CONFIG_FILE="$WIKI/LocalSettings.php" php "$MWCODE/maintenance/dumpBackup.php" --full --quiet \
    >"$SEEDDIR/local-dump.xml.tmp" 2>"$DIR/dump.log" || { tail -20 "$DIR/dump.log"; return 1; }
  mv "$SEEDDIR/local-dump.xml.tmp" "$SEEDDIR/local-dump.xml"
  mv "$SEEDDIR/dumped_at.tmp" "$SEEDDIR/dumped_at"
  log "dumped again with dumpBackup.php --full in $(since "$t1") s ($(grep -c '<revision>' "$SEEDDIR/local-dump.xml") revisions)"
}

main "$@"
