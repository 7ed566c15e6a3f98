#!/usr/bin/env bash
# Installs Black Widow on a Debian 12 instance and enables its systemd units.
# Called by the launch templates' user-data with BW_ROLE=hub|spawn and the ARNs/addresses exported.
# Secrets are fetched from Secrets Manager into a root-only environment file, never into user-data.
#
# Every place it writes can be moved, so the same steps also run unprivileged against local services
# (tests/integration/test_bootstrap.py). Defaults are the production ones:
#   BW_APP_DIR      release tree to install             (the tree this script is in)
#   BW_VENV         virtualenv                          ($BW_APP_DIR/.venv)
#   BW_PYTHON       interpreter that creates it         (python3)
#   BW_ETC_DIR      directory of the environment file   (/etc/blackwidow)
#   BW_STATE_DIR    the services' BW_DATA_DIR           (/var/lib/blackwidow)
#   BW_SYSTEMD_DIR  where the units are installed       (/etc/systemd/system)
#   BW_SKIP_SYSTEM  1: no apt-get, system user, ownership or systemctl
# BW_NODE_SECRET, BW_ADMIN_TOKEN, BW_DATABASE_URL, BW_ADVERTISE_IP and BW_ASG_NAME, when set, are taken as
# given instead of from Secrets Manager and the instance metadata.
set -euo pipefail
APP=${BW_APP_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
VENV=${BW_VENV:-$APP/.venv}
ETC=${BW_ETC_DIR:-/etc/blackwidow}
STATE=${BW_STATE_DIR:-/var/lib/blackwidow}
UNIT_DIR=${BW_SYSTEMD_DIR:-/etc/systemd/system}
: "${BW_ROLE:?hub or spawn}"
cd "$APP"
system() { [ "${BW_SKIP_SYSTEM:-}" != 1 ]; }
owned() { if system; then echo "-o $1 -g $2"; fi; }

if system; then DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv python3-pip jq; fi
"${BW_PYTHON:-python3}" -m venv "$VENV"
# a real (not editable) install: the package carries its migrations and CQL schema
"$VENV/bin/pip" install -q "$APP"
if system; then id blackwidow >/dev/null 2>&1 || useradd --system --home "$APP" --shell /usr/sbin/nologin blackwidow; fi

secret() { aws secretsmanager get-secret-value --region "$AWS_REGION" --secret-id "$1" --query SecretString --output text; }
imds() {
  local token
  token=$(curl -fsS -X PUT http://169.254.169.254/latest/api/token -H 'X-aws-ec2-metadata-token-ttl-seconds: 300')
  curl -fsS -H "X-aws-ec2-metadata-token: $token" "http://169.254.169.254/latest/meta-data/$1"
}
rds_url() {
  local db_json db_user db_pass
  db_json=$(secret "$DB_SECRET_ARN")
  db_user=$(jq -r .username <<<"$db_json")
  db_pass=$(jq -rn --arg p "$(jq -r .password <<<"$db_json")" '$p|@uri')
  echo "postgresql+psycopg2://$db_user:$db_pass@$DB_HOST:$DB_PORT/blackwidow"
}

# shellcheck disable=SC2046
install -d -m 0750 $(owned root blackwidow) "$ETC"
ENVF=$ETC/env
umask 077
# assigned before use, so that a failed lookup stops the script (set -e) instead of writing an empty value
node_secret=${BW_NODE_SECRET:-$(secret "$NODE_SECRET_ARN")}
{
  echo "BW_NODE_SECRET=$node_secret"
  echo "BW_LOG_JSON=true"
  echo "BW_DATA_DIR=$STATE"
  echo "BW_WIKI_ALLOWLIST=$BW_WIKI_ALLOWLIST"
} > "$ENVF"
# shellcheck disable=SC2046
install -d $(owned blackwidow blackwidow) "$STATE"

if [ "$BW_ROLE" = hub ]; then
  admin_token=${BW_ADMIN_TOKEN:-$(secret "$ADMIN_TOKEN_ARN")}
  database_url=${BW_DATABASE_URL:-$(rds_url)}
  {
    echo "BW_ADMIN_TOKEN=$admin_token"
    echo "BW_DATABASE_URL=$database_url"
  } >> "$ENVF"
  units="blackwidow-api blackwidow-scheduler"
  set -a; . "$ENVF"; set +a
  "$VENV/bin/blackwidow" migrate
else
  ip=${BW_ADVERTISE_IP:-$(imds local-ipv4)}
  asg_name=${BW_ASG_NAME:-$(imds tags/instance/aws:autoscaling:groupName)}
  {
    echo "BW_HUB_URL=$BW_HUB_URL"
    echo "BW_ADVERTISE_URL=http://$ip:8701"
    echo "BW_BIND=$ip:8701"
    echo "BW_CASSANDRA_HOSTS=$BW_CASSANDRA_HOSTS"
    echo "BW_CASSANDRA_KEYSPACE=$BW_CASSANDRA_KEYSPACE"
    echo "BW_USER_AGENT=BlackWidow/0.1 ($BW_USER_AGENT_CONTACT) python-requests"
    echo "BW_ASG_NAME=$asg_name"
    echo "AWS_REGION=$AWS_REGION"
  } >> "$ENVF"
  units="blackwidow-spawn blackwidow-load-metric.timer"
fi
if system; then chgrp blackwidow "$ENVF"; fi
chmod 0640 "$ENVF"

# The units name the production paths; point them at this installation (a no-op with the defaults).
# Placeholders first, so that a path put in is never matched again by the next rule.
install -d -m 0755 "$UNIT_DIR"
for unit in "$APP"/ops/aws/systemd/*.service "$APP"/ops/aws/systemd/*.timer; do
  sed -e 's#/opt/blackwidow/\.venv#@VENV@#g; s#/opt/blackwidow#@APP@#g; s#/etc/blackwidow/env#@ENVF@#g' \
      -e 's#/var/lib/blackwidow#@STATE@#g' \
      -e "s#@VENV@#$VENV#g; s#@APP@#$APP#g; s#@ENVF@#$ENVF#g; s#@STATE@#$STATE#g" \
      "$unit" > "$UNIT_DIR/$(basename "$unit")"
  chmod 0644 "$UNIT_DIR/$(basename "$unit")"
done
if system; then
  systemctl daemon-reload
  # shellcheck disable=SC2086
  systemctl enable --now $units
fi
